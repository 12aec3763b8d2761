"""Cellwright as an MCP server for outside agents (Claude Code, Codex, Cursor, ...): Streamable HTTP
at `cellwright/mcp`, on the official mcp SDK's server side.

It offers the agent's own tools, with their own schemas, plus a `notebook_path` each call names.
A call becomes a run of a thread named for the client ("Claude Code via MCP") on that notebook, one
per session (jupyter_ext.mcp_threads: sessions and parallel calls never wait on each other): it
goes through the same tools node as the model's calls (agent_core.loop.graph, `outside_call`), so a
risky one waits for the user's approval in the panel, with its card, diagnostics and preview, and
lands in the notebook with provenance naming the client. The MCP call waits for the decision,
reporting progress, and answers what the tools node answered: the output, or the user's reason."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import uuid
from collections.abc import Awaitable, Callable, MutableMapping
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

from agent_core import __version__
from agent_core.contract.outside_tools import OutsideCall
from agent_core.json_types import JsonObject
from agent_core.loop.autonomy import ToolPolicy
from agent_core.storage.event_log import seq_of
from agent_core.tools import TOOLS
from agent_core.workspace import WorkspaceError

from .errors import CellwrightError
from .handler_base import notebook_path_in_root
from .mcp_threads import SessionThreads

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext

    from agent_core.config.agent_settings import AgentSettings
    from agent_core.contract.shared import Autonomy

    from .run_manager import RunManager

log = logging.getLogger(__name__)

# The agent's tools an outside agent may call (ToolSpec.outside_agents): not the conversational ones
# (final_answer, write_todos, task, load_skill), which belong to Cellwright's own model.
CATALOG = tuple(name for name, spec in TOOLS.items() if spec.outside_agents)
NOTEBOOK_ARG = "notebook_path"
WAIT_TOOL = "wait_for_decision"
PROGRESS_SECONDS = 5.0  # a progress notification this often while the user decides
MAX_CLIENT_NAME = 80
INSTRUCTIONS = (
    "Cellwright works in the user's live Jupyter notebook: name the notebook (notebook_path, relative to "
    "the server's root) on each call. Calls that change something wait for the user's approval in "
    "Cellwright's panel: the user may approve, edit your code (you get the edited code's result) or "
    "reject it with a reason. If a call answers that it is still waiting, call "
    f"{WAIT_TOOL} with its tool_call_id."
)


@dataclasses.dataclass(frozen=True)
class ClientRules:
    """What the operator allows one outside agent (c.Cellwright.mcp_clients)."""

    autonomy: Autonomy = "agent"
    auto_approve: tuple[str, ...] | None = None  # None: the server's auto_approve


@dataclasses.dataclass
class _Waiting:
    thread_id: str
    after: int  # the seq the call's events follow
    in_background: bool = False  # issue 38: a cell that outlived background_after, not a decision


class McpEndpoint:
    """The MCP server of one Jupyter server: its SDK server, its sessions, and the calls it waits on."""

    def __init__(
        self,
        runs: RunManager,
        workspace: Callable[[], Any],
        settings: Callable[[], AgentSettings],
        rules: Callable[[str], ClientRules],
        approval_wait: Callable[[], float],
    ) -> None:
        self._runs = runs
        self._workspace = workspace
        self._settings = settings
        self._rules = rules
        self._approval_wait = approval_wait
        self._server: Server[Any] = Server(
            "cellwright",
            version=__version__,
            instructions=INSTRUCTIONS,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )
        # Jupyter checks the Host and the token before a request gets here; the SDK's own DNS
        # rebinding check would refuse a hub's proxy or a remote server's name.
        self._sessions = StreamableHTTPSessionManager(
            self._server, security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False)
        )
        self._running: asyncio.Task[None] | None = None
        self._started = asyncio.Event()
        self._stop = asyncio.Event()
        self._waiting: dict[str, _Waiting] = {}  # calls answered "still waiting", by tool_call_id
        self._threads = SessionThreads(runs)

    async def handle(
        self,
        scope: MutableMapping[str, Any],
        receive: Callable[[], Awaitable[MutableMapping[str, Any]]],
        send: Callable[[MutableMapping[str, Any]], Awaitable[None]],
    ) -> None:
        """One HTTP request of the Streamable HTTP transport (authenticated by the handler)."""
        if self._running is None:
            self._running = asyncio.create_task(self._run_sessions())
        await self._started.wait()
        await self._sessions.handle_request(scope, receive, send)

    async def _run_sessions(self) -> None:
        async with self._sessions.run():
            self._started.set()
            await self._stop.wait()

    async def close(self) -> None:
        """At the server's stop: open sessions end, their calls stop waiting."""
        if self._running is not None:
            self._stop.set()
            await asyncio.gather(self._running, return_exceptions=True)

    # -- the tools

    def _client(self, ctx: ServerRequestContext[Any, Any]) -> str:
        params = ctx.session.client_params
        name = params.client_info.name if params is not None and params.client_info is not None else ""
        printable = "".join(ch for ch in name if ch.isprintable()).strip()[:MAX_CLIENT_NAME]
        return printable or "An MCP client"

    async def _list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        policy = ToolPolicy(self._rules(self._client(ctx)).autonomy)
        tools = [
            types.Tool(
                name=name,
                description=TOOLS[name].description,
                input_schema=with_notebook_path(TOOLS[name].parameters),
                annotations=types.ToolAnnotations(read_only_hint=TOOLS[name].read_only),
            )
            for name in CATALOG
            if policy.offers(name, TOOLS[name])
        ]
        tools.append(
            types.Tool(
                name=WAIT_TOOL,
                description="Wait again for the user's decision on a call that answered that it is still waiting.",
                input_schema={
                    "type": "object",
                    "properties": {"tool_call_id": {"type": "string", "maxLength": 200}},
                    "required": ["tool_call_id"],
                    "additionalProperties": False,
                },
                annotations=types.ToolAnnotations(read_only_hint=True),
            )
        )
        return types.ListToolsResult(tools=tools)

    async def _call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        arguments = dict(params.arguments or {})
        try:
            if params.name == WAIT_TOOL:
                call_id = str(arguments.get("tool_call_id", ""))[:200]
                waiting = self._waiting.pop(call_id, None)
                if waiting is None:
                    return _error(f"No call {call_id!r} is waiting for a decision here.")
                return await self._outcome(ctx, waiting.thread_id, call_id, waiting.after, waiting.in_background)
            if params.name not in CATALOG:
                return _error(f"There is no tool {params.name[:200]!r}. Tools: {', '.join(CATALOG)}.")
            notebook = arguments.pop(NOTEBOOK_ARG, None)
            if not isinstance(notebook, str) or not notebook.strip():
                return _error(f"Name the notebook: {NOTEBOOK_ARG}, relative to the Jupyter server's root.")
            return await self._run(ctx, params.name, notebook, arguments)
        except (CellwrightError, WorkspaceError) as exc:  # refused as the HTTP routes refuse it
            return _error(getattr(exc, "message", str(exc)))

    async def _run(
        self, ctx: ServerRequestContext[Any, Any], name: str, notebook: str, arguments: JsonObject
    ) -> types.CallToolResult:
        path = notebook_path_in_root(self._workspace(), notebook) or ""
        client = self._client(ctx)
        rules = self._rules(client)
        call_id = f"mcp_{uuid.uuid4().hex[:24]}"
        call = OutsideCall(tool_call_id=call_id, name=name, arguments=arguments, client=client, autonomy=rules.autonomy)
        settings = self._settings()
        if rules.auto_approve is not None:  # the operator's list for this client replaces the server's
            settings = dataclasses.replace(settings, auto_approve=frozenset(rules.auto_approve))
        async with self._threads.thread_for_call(ctx.session, client, path) as thread_id:
            after = await self._runs.outside_call(thread_id, call, settings)
            return await self._outcome(ctx, thread_id, call_id, after)

    async def _outcome(
        self,
        ctx: ServerRequestContext[Any, Any],
        thread_id: str,
        call_id: str,
        after: int,
        in_background: bool = False,
    ) -> types.CallToolResult:
        """Wait for the call's result, reporting progress while the user decides or its cell runs;
        after the configured wait, or when its cell went on in the background, answer that it still
        waits or runs (the card stays; the cell goes on)."""
        events = self._runs.threads.events
        loop = asyncio.get_running_loop()
        started = loop.time()
        deadline = started + self._approval_wait()
        problem = ""
        result: JsonObject | None = None  # the call's tool_result event, once it came
        while True:
            for event in await events.events_after(thread_id, after):
                after = seq_of(event)
                kind, same = event["type"], event.get("id") == call_id
                if kind == "approval_required" and same:
                    await ctx.session.report_progress(
                        0, message="Waiting for the user's approval in Cellwright's panel."
                    )
                elif kind == "tool_result" and same:
                    result = event
                    # Answered as soon as the call's own segment has its result, not at the run's
                    # end: the agent's next call, sent the moment it reads this, waits for that end.
                    text = self._runs.answered_now(thread_id, call_id, self._settings())
                    if text is not None:
                        return _answer(text, result)
                elif kind == "error":
                    problem = str(event.get("message", ""))
                elif kind == "run_finished" and result is not None:
                    # A call answered by a later segment (after the user's decision): its result is
                    # in the thread's state once that run has ended.
                    text = await self._runs.tool_result(thread_id, call_id, self._settings())
                    return _answer(text, result)
                elif kind == "cell_progress" and event.get("tool_call_id") == call_id:
                    percent = event.get("percent")
                    done = float(percent) if isinstance(percent, (int, float)) else 0.0
                    await ctx.session.report_progress(done, 100.0, message=str(event.get("text", ""))[-200:])
                elif kind == "run_finished" and event.get("status") == "waiting_for_cell" and result is None:
                    self._waiting[call_id] = _Waiting(thread_id, after, in_background=True)
                    return _still(call_id, True)
                elif kind == "run_finished" and event.get("status") in ("failed", "cancelled"):
                    why = problem or ("The user stopped it." if event["status"] == "cancelled" else "The run failed.")
                    return _error(f"The call did not run: {why}")
            if loop.time() >= deadline and result is None:
                self._waiting[call_id] = _Waiting(thread_id, after, in_background)
                return _still(call_id, in_background)
            # Never a zero wait: events read from memory do not yield, and a loop that never yields
            # would starve the run it waits for (seen: a result in, its run_finished never written).
            # With the result in, the run's end is waited for whatever the deadline.
            wait = PROGRESS_SECONDS if result is not None else min(PROGRESS_SECONDS, deadline - loop.time())
            await events.wait_for_events(thread_id, after, max(wait, 0.01))
            await ctx.session.report_progress(loop.time() - started, message="Waiting for the user's decision.")


def with_notebook_path(schema: dict[str, Any]) -> JsonObject:  # a JSON schema, walked
    """A tool's own argument schema, plus the notebook the call is for."""
    properties = {
        **schema.get("properties", {}),
        NOTEBOOK_ARG: {
            "type": "string",
            "maxLength": 1000,
            "description": "The notebook this call works in, relative to the Jupyter server's root.",
        },
    }
    return {**schema, "properties": properties, "required": [*schema.get("required", []), NOTEBOOK_ARG]}


def _answer(text: str | None, result: JsonObject) -> types.CallToolResult:
    """The call's answer: the tools node's result as it may leave, else its tool_result's summary."""
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text or str(result.get("summary") or result["status"]))],
        is_error=result["status"] not in ("ok", "completed"),
    )


def _still(call_id: str, in_background: bool) -> types.CallToolResult:
    """The answer to a call that has no outcome yet: a decision to wait for, or a cell still running."""
    if in_background:
        text = (
            f"Still running in the background (tool_call_id {call_id}): the cell goes on in the kernel and "
            f"Cellwright follows it. Call {WAIT_TOOL} with this id to wait for its outcome."
        )
    else:
        text = (
            f"Still waiting for the user's approval (tool_call_id {call_id}); the card stays "
            f"in Cellwright's panel. Call {WAIT_TOOL} with this id to wait again."
        )
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)
