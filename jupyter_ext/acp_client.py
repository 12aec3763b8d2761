"""Cellwright as an ACP client for one hosted agent's thread: what the agent sends (session/update,
session/request_permission, fs/*) becomes the thread's events and approval cards, and its file
requests go through the workspace's rules (inside the root, no hidden files, every write approved
with its diff). terminal/* runs through our shell tool's runner, each command approved on a card
(jupyter_ext.acp_terminals)."""

from __future__ import annotations

import contextlib
import difflib
import shlex
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from acp import RequestError
from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AllowedOutcome,
    CreateTerminalResponse,
    DeniedOutcome,
    FileEditToolCallContent,
    KillTerminalResponse,
    PermissionOption,
    ReadTextFileResponse,
    ReleaseTerminalResponse,
    RequestPermissionResponse,
    TerminalOutputResponse,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)

from agent_core.contract import make_event
from agent_core.json_types import JsonObject
from agent_core.messages import Preimage
from agent_core.undo import preimages
from agent_core.workspace import Workspace, WorkspaceError

from .acp_terminals import Terminals
from .acp_watch import READ_ONLY_KINDS, Watch

MAX_TEXT_CHARS = 1_000_000  # of an agent's visible answer per run: a flood beyond it is dropped
MAX_FILE_CHARS = 2_000_000  # what fs/read_text_file and fs/write_text_file carry
MAX_SUMMARY_CHARS = 500
MAX_OPEN_CALLS = 1000  # the agent's tool calls whose end is awaited, to name it
ALLOW_ONCE_FIRST = ("allow_once", "allow_always")  # an agent offering only "always" gets it for a plain approval
PLAN_STATUS = {"pending": "pending", "in_progress": "in_progress", "completed": "completed"}


@dataclass(frozen=True)
class UserDecision:
    """What the user chose on a card: approve or reject (with a reason), or the run was stopped."""

    approved: bool
    reason: str = ""
    stopped: bool = False
    card_id: str = ""  # the card it was made on
    always: bool = False  # approved for this kind of request from now on in the thread


class ThreadSink(Protocol):
    """Where one hosted thread's traffic goes (jupyter_ext.acp_host)."""

    workspace: Workspace
    terminals: Terminals
    watch: Watch

    def emit(self, event: Any) -> None: ...

    def activity(self) -> None: ...

    async def ask(self, card: JsonObject) -> UserDecision: ...

    def wrote(self, card_id: str, image: Preimage) -> None: ...


class ThreadClient:
    """The ACP `Client` of one thread's agent process."""

    def __init__(self, sink: ThreadSink) -> None:
        self._sink = sink
        self._text = 0  # chars of visible answer this run
        self._calls: dict[str, str] = {}  # the agent's tool call id -> the name shown
        self._replaying = False

    @contextlib.contextmanager
    def replaying(self) -> Iterator[None]:
        """While session/load runs: the agent replays the conversation the thread already shows."""
        self._replaying = True
        try:
            yield
        finally:
            self._replaying = False

    def new_run(self) -> None:
        self._text = 0
        self._calls.clear()  # a call a past turn left open is no sign of life now

    @property
    def open_calls(self) -> int:
        """The agent's tool calls under way (started, not yet completed or failed)."""
        return len(self._calls)

    def on_connect(self, conn: Any) -> None:
        pass

    # -- what the agent reports

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self._sink.activity()
        if self._replaying:
            return
        if isinstance(update, AgentMessageChunk) and isinstance(update.content, TextContentBlock):
            text = update.content.text[: max(0, MAX_TEXT_CHARS - self._text)]
            self._text += len(text)
            if text:
                self._sink.emit(make_event("token", text=text))
        elif isinstance(update, ToolCallStart):
            name = _bounded(update.kind or "tool", 60)
            if len(self._calls) < MAX_OPEN_CALLS:
                self._calls[update.tool_call_id] = name
            args: JsonObject = {"title": _bounded(update.title, MAX_SUMMARY_CHARS)}
            self._sink.emit(
                make_event("tool_call", id=_call_id(update.tool_call_id), name=name, args=args, needs_approval=False)
            )
            if update.status in ("completed", "failed"):
                await self._finished(update.tool_call_id, update.status, update.title)
        elif isinstance(update, ToolCallProgress) and update.status in ("completed", "failed"):
            await self._finished(update.tool_call_id, update.status, update.title or "")
        elif isinstance(update, AgentPlanUpdate):
            todos = [
                {
                    "content": _bounded(entry.content, MAX_SUMMARY_CHARS),
                    "status": PLAN_STATUS.get(entry.status, "pending"),
                }
                for entry in update.entries[:100]
            ]
            self._sink.emit(make_event("todos", todos=todos))
        # Thought chunks, available commands, mode and usage updates are not shown in the timeline.

    async def _finished(self, tool_call_id: str, status: str, title: str) -> None:
        await self._sink.watch.settle(tool_call_id)  # what an approved command changed, kept for undo
        name = self._calls.pop(tool_call_id, "tool")
        self._sink.emit(
            make_event(
                "tool_result",
                id=_call_id(tool_call_id),
                name=name,
                status="ok" if status == "completed" else "error",
                summary=_bounded(title, MAX_SUMMARY_CHARS),
            )
        )

    # -- what the agent asks

    async def request_permission(
        self, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption], **kwargs: Any
    ) -> RequestPermissionResponse:
        self._sink.activity()
        title = _bounded(tool_call.title or "The agent asks to use a tool.", MAX_SUMMARY_CHARS)
        args: JsonObject = {"title": title, "options": [_bounded(o.name, 100) for o in options[:20]]}
        kind = _bounded(str(tool_call.kind or "permission"), 60)
        if tool_call.kind:
            args["kind"] = kind
        card: JsonObject = {"name": kind, "args": args, "description": title, **_what_it_does(tool_call)}
        if _option(options, ("allow_always",)) is not None:  # our card's "Always allow" for this kind
            card["always"] = kind
        decision = await self._sink.ask(card)
        if decision.approved and (tool_call.kind or "other") not in READ_ONLY_KINDS:
            # It acts with its own hands once answered (Codex's shell): the workspace is looked at first.
            await self._sink.watch.open(decision.card_id, tool_call.tool_call_id)
        if decision.approved:
            chosen = _option(options, ("allow_always", "allow_once") if decision.always else ALLOW_ONCE_FIRST)
        else:
            chosen = _option(options, ("reject_once", "reject_always"))
        # ACP's answer has no field for a reason: it goes in _meta, for an agent that reads it.
        meta = {"cellwright": {"reason": decision.reason[:2000]}} if decision.reason else None
        if decision.stopped or chosen is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"), field_meta=meta)
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=chosen.option_id), field_meta=meta
        )

    async def read_text_file(
        self, session_id: str, path: str, line: int | None = None, limit: int | None = None, **kwargs: Any
    ) -> ReadTextFileResponse:
        self._sink.activity()
        target = self._resolve(path)
        try:
            text = target.read_text(encoding="utf-8", errors="replace")[:MAX_FILE_CHARS]
        except OSError as exc:
            raise RequestError.resource_not_found(str(path)[:200]) from exc
        if line is not None or limit is not None:
            lines = text.splitlines(keepends=True)
            start = max(0, (line or 1) - 1)
            text = "".join(lines[start : start + limit if limit is not None else None])
        return ReadTextFileResponse(content=text)

    async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any) -> WriteTextFileResponse:
        self._sink.activity()
        if len(content) > MAX_FILE_CHARS:
            raise RequestError.invalid_params({"content": f"at most {MAX_FILE_CHARS} characters"})
        target = self._resolve(path)
        relative = str(target.relative_to(self._sink.workspace.root))
        before = target.read_text(encoding="utf-8", errors="replace") if target.is_file() else ""
        diff = "".join(
            difflib.unified_diff(
                before.splitlines(keepends=True), content.splitlines(keepends=True), f"a/{relative}", f"b/{relative}"
            )
        )
        card: JsonObject = {
            "name": "write_file",
            "args": {"path": relative, "content": content},
            "description": f"The agent writes {relative}",
            "diff": diff,
        }
        decision = await self._sink.ask(card)
        if not decision.approved:
            why = decision.reason or ("the run was stopped" if decision.stopped else "the user rejected the write")
            raise RequestError.invalid_request({"rejected": _bounded(why, 2000)})
        data = content.encode("utf-8")
        image = preimages.capture(target, relative, data)  # the file just before the write, for undo
        preimages.write_atomic(target, data)
        self._sink.wrote(decision.card_id, image)
        return WriteTextFileResponse()

    def _resolve(self, path: str) -> Any:
        try:
            return self._sink.workspace.resolve(str(path)[:4096])
        except WorkspaceError as exc:
            raise RequestError.invalid_params({"path": exc.message if hasattr(exc, "message") else str(exc)}) from None

    async def create_terminal(
        self,
        session_id: str,
        command: str,
        args: list[str] | None = None,
        env: list[Any] | None = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
        **kwargs: Any,
    ) -> CreateTerminalResponse:
        self._sink.activity()
        return await self._sink.terminals.create(command, args, env, cwd, output_byte_limit)

    async def terminal_output(self, session_id: str, terminal_id: str, **kwargs: Any) -> TerminalOutputResponse:
        self._sink.activity()
        return await self._sink.terminals.output(terminal_id)

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> WaitForTerminalExitResponse:
        self._sink.activity()
        return await self._sink.terminals.wait_for_exit(terminal_id)

    async def kill_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> KillTerminalResponse:
        return await self._sink.terminals.kill(terminal_id)

    async def release_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> ReleaseTerminalResponse:
        return await self._sink.terminals.release(terminal_id)


def _what_it_does(tool_call: ToolCallUpdate) -> JsonObject:
    """What the card shows besides the title: the command an `execute` call runs, the diff of an edit."""
    shown: JsonObject = {}
    raw = tool_call.raw_input if isinstance(tool_call.raw_input, dict) else {}
    command = raw.get("command")
    if isinstance(command, list) and all(isinstance(part, str) for part in command):
        command = shlex.join(command)
    if isinstance(command, str) and command:
        shown["command"] = _bounded(command, MAX_SUMMARY_CHARS * 4)
    diffs = [
        "".join(
            difflib.unified_diff(
                (item.old_text or "").splitlines(keepends=True),
                item.new_text.splitlines(keepends=True),
                f"a/{item.path}",
                f"b/{item.path}",
            )
        )
        for item in (tool_call.content or [])[:20]
        if isinstance(item, FileEditToolCallContent)
    ]
    if diffs:
        shown["diff"] = "".join(diffs)[:MAX_FILE_CHARS]
    return shown


def _option(options: list[PermissionOption], kinds: tuple[str, ...]) -> PermissionOption | None:
    for kind in kinds:
        for option in options:
            if option.kind == kind:
                return option
    return None


def _call_id(agent_id: str) -> str:
    return "acp_" + "".join(ch for ch in str(agent_id)[:100] if ch.isalnum() or ch in "-_")


def _bounded(text: str, limit: int) -> str:
    return "".join(ch for ch in str(text)[:limit] if ch.isprintable() or ch in "\n\t")


def new_card_id() -> str:
    return f"acp_perm_{uuid.uuid4().hex[:20]}"
