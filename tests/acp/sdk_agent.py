"""An ACP agent written with the official SDK for the hosting tests: `python -m tests.acp.sdk_agent MODE`.
Each prompt's first word picks what it does, so one process can play several turns:
  write <path> <text>: plan, tool call, permission, then fs/write_text_file; says what came back
  read <path>: fs/read_text_file, answers the text
  run <command line>: terminal/create (bash -c), waits for its exit, answers its output and status
  mcp <tool> <json arguments>: calls the tool on the MCP server session/new offered, answers the result
  flood: 2000 message chunks of 600 characters, then 3500 tool calls, then "flood done"
  spam: 1000 permission requests at once
  hang: never answers (until session/cancel, which it ignores)
  die: exits mid-turn
  garbage: writes a line that is not JSON-RPC, then answers "still here"
  mcpconfig: writes the mcpServers session/new gave it, and its environment, to $SDK_AGENT_REPORT (an agent
    logging its config)
  ask <kind>: asks permission for a tool call of that kind, offering once, always and reject; says the option
  remember <words>: keeps the words in its session; recall: answers what its session holds.
With SDK_AGENT_STATE set, its sessions are kept in that folder; with SDK_AGENT_LOAD=1 it advertises
loadSession and takes one up again (replaying it as session/load does)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import uuid
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, RequestError, run_agent
from acp.helpers import plan_entry, start_tool_call, update_agent_message_text, update_plan, update_tool_call
from acp.schema import (
    AgentCapabilities,
    InitializeResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PermissionOption,
    PromptResponse,
)


class SdkAgent:
    def __init__(self) -> None:
        self._conn: Any = None
        self._cancelled = asyncio.Event()
        self._mcp: list[Any] = []
        self._memory: list[str] = []
        state = os.environ.get("SDK_AGENT_STATE")
        self._state = Path(state) if state else None

    def on_connect(self, conn: Any) -> None:
        self._conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        capabilities = AgentCapabilities(
            mcp_capabilities=McpCapabilities(http=True), load_session=os.environ.get("SDK_AGENT_LOAD") == "1"
        )
        return InitializeResponse(protocol_version=PROTOCOL_VERSION, agent_capabilities=capabilities)

    async def new_session(self, cwd: str, mcp_servers: Any = None, **kwargs: Any) -> NewSessionResponse:
        self._mcp = list(mcp_servers or [])
        return NewSessionResponse(session_id=f"s-{uuid.uuid4().hex[:12]}")

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: Any = None, **kwargs: Any
    ) -> LoadSessionResponse:
        kept = self._state / f"{session_id}.json" if self._state else None
        if kept is None or not kept.exists():
            raise RequestError.resource_not_found(session_id)
        self._mcp = list(mcp_servers or [])
        self._memory = json.loads(kept.read_text())
        for words in self._memory:  # as the protocol asks: the conversation replayed to the client
            await self.say(session_id, f"replayed: {words}")
        return LoadSessionResponse()

    async def call_mcp(self, tool: str, arguments: dict[str, Any]) -> str:
        """The MCP server Cellwright offered in session/new, called with the official mcp client."""
        import mcp_types as types
        from mcp import ClientSession
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        if not self._mcp:
            return "no MCP server was offered"
        server = self._mcp[0]
        headers = {h.name: h.value for h in server.headers}
        async with create_mcp_http_client(headers=headers) as http:
            async with streamable_http_client(server.url, http_client=http) as (read, write):
                info = types.Implementation(name="SDK agent", version="1.0")
                async with ClientSession(read, write, client_info=info) as session:
                    await session.initialize()
                    result = await session.call_tool(tool, arguments, read_timeout_seconds=60)
        text = "".join(part.text for part in result.content if isinstance(part, types.TextContent))
        return f"mcp {server.name} {'error' if result.is_error else 'ok'}: {text}"

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        self._cancelled.set()

    async def say(self, session_id: str, text: str) -> None:
        await self._conn.session_update(session_id=session_id, update=update_agent_message_text(text))

    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
        text = "".join(getattr(block, "text", "") for block in prompt)
        words = text.split(" ", 2) if not text.startswith("run ") else text.split(" ")
        mode = words[0]
        if mode == "write":
            await self._conn.session_update(
                session_id=session_id, update=update_plan([plan_entry("write the file", status="in_progress")])
            )
            await self._conn.session_update(
                session_id=session_id, update=start_tool_call("t1", f"Write {words[1]}", kind="edit", status="pending")
            )
            options = [
                PermissionOption(option_id="yes", name="Allow", kind="allow_once"),
                PermissionOption(option_id="no", name="Reject", kind="reject_once"),
            ]
            asked = await self._conn.request_permission(
                session_id=session_id, tool_call=update_tool_call("t1", title=f"Write {words[1]}"), options=options
            )
            outcome = asked.outcome
            chosen = getattr(outcome, "option_id", outcome.outcome)
            if chosen != "yes":
                await self.say(session_id, f"permission: {chosen}")
                return PromptResponse(stop_reason="end_turn")
            try:
                await self._conn.write_text_file(session_id=session_id, path=words[1], content=words[2])
                result = "written"
            except RequestError as exc:
                result = f"refused: {exc.data}"
            await self._conn.session_update(
                session_id=session_id, update=update_tool_call("t1", status="completed", title=result)
            )
            await self.say(session_id, f"write: {result}")
        elif mode == "read":
            try:
                read = await self._conn.read_text_file(session_id=session_id, path=words[1])
                await self.say(session_id, f"read: {read.content}")
            except RequestError as exc:
                await self.say(session_id, f"read refused: {exc.data}")
        elif mode == "run":
            line = " ".join(words[1:])
            try:
                terminal = await self._conn.create_terminal(session_id=session_id, command="bash", args=["-c", line])
            except RequestError as exc:
                await self.say(session_id, f"terminal refused: {exc.data}")
                return PromptResponse(stop_reason="end_turn")
            exited = await self._conn.wait_for_terminal_exit(session_id=session_id, terminal_id=terminal.terminal_id)
            output = await self._conn.terminal_output(session_id=session_id, terminal_id=terminal.terminal_id)
            await self._conn.release_terminal(session_id=session_id, terminal_id=terminal.terminal_id)
            await self.say(session_id, f"output: {output.output.strip()} exit: {exited.exit_code} {exited.signal}")
        elif mode == "mcp":  # reported as a tool call of its own while it runs, as Codex does
            await self._conn.session_update(
                session_id=session_id, update=start_tool_call("m1", f"mcp {words[1]}", status="in_progress")
            )
            said = await self.call_mcp(words[1], json.loads(words[2]))
            await self._conn.session_update(session_id=session_id, update=update_tool_call("m1", status="completed"))
            await self.say(session_id, said)
        elif mode == "flood":
            for _i in range(2000):
                await self.say(session_id, "x" * 600)
            for i in range(3500):
                await self._conn.session_update(session_id=session_id, update=start_tool_call(f"f{i}", "flood"))
            await self.say(session_id, "flood done")
        elif mode == "spam":
            options = [PermissionOption(option_id="yes", name="Allow", kind="allow_once")]
            asks = [
                self._conn.request_permission(
                    session_id=session_id, tool_call=update_tool_call(f"p{i}", title=f"ask {i}"), options=options
                )
                for i in range(1000)
            ]
            answers = await asyncio.gather(*asks, return_exceptions=True)
            granted = sum(1 for a in answers if getattr(a.outcome, "option_id", None) == "yes")  # type: ignore[union-attr]
            await self.say(session_id, f"spam granted {granted}")
        elif mode == "ask":
            options = [
                PermissionOption(option_id="once", name="Allow once", kind="allow_once"),
                PermissionOption(option_id="always", name="Always allow", kind="allow_always"),
                PermissionOption(option_id="no", name="Reject", kind="reject_once"),
            ]
            call = update_tool_call("k1", title=f"Do a {words[1]}", kind=words[1])
            asked = await self._conn.request_permission(session_id=session_id, tool_call=call, options=options)
            await self.say(session_id, f"permission: {getattr(asked.outcome, 'option_id', asked.outcome.outcome)}")
        elif mode == "mcpconfig":
            servers = [server.model_dump(mode="json") for server in self._mcp]
            Path(os.environ["SDK_AGENT_REPORT"]).write_text(json.dumps({"servers": servers, "env": dict(os.environ)}))
            await self.say(session_id, "reported")
        elif mode == "remember":
            self._memory.append(" ".join(words[1:]))
            if self._state is not None:
                (self._state / f"{session_id}.json").write_text(json.dumps(self._memory))
            await self.say(session_id, "noted")
        elif mode == "recall":
            await self.say(session_id, f"I remember: {'; '.join(self._memory) or 'nothing'}")
        elif mode == "hang":
            await asyncio.Event().wait()
        elif mode == "die":
            await self.say(session_id, "dying")
            os._exit(3)
        elif mode == "garbage":
            sys.stdout.buffer.write(b'this is not json-rpc\n{"jsonrpc": "2.0", "method": 5}\n')
            sys.stdout.buffer.flush()
            await self.say(session_id, "still here")
        else:
            await self.say(session_id, f"echo: {' '.join(words)}")
        return PromptResponse(stop_reason="cancelled" if self._cancelled.is_set() else "end_turn")


if __name__ == "__main__":
    asyncio.run(run_agent(SdkAgent()))
