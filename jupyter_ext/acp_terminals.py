"""ACP's terminal/* for a hosted agent, through our shell tool's runner (agent_core.tools.shell):
each terminal/create is an approval card showing the command line; approved, it runs in the
root (or a folder inside it) in its own process group, under the server's command time-out, with
its output bounded; kill and release stop the whole group."""

from __future__ import annotations

import asyncio
import shlex
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from acp import RequestError
from acp.schema import (
    CreateTerminalResponse,
    KillTerminalResponse,
    ReleaseTerminalResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    WaitForTerminalExitResponse,
)

from agent_core.json_types import JsonObject
from agent_core.tools.shell import CommandResult, command_env, run_command
from agent_core.workspace import Workspace, WorkspaceError

MAX_TERMINALS = 16  # open at once per thread
MAX_OUTPUT_BYTES = 1_000_000
MAX_COMMAND_CHARS = 20_000
KILLED = TerminalExitStatus(exit_code=None, signal="SIGKILL")


@dataclass
class _Terminal:
    task: asyncio.Task[CommandResult]
    limit: int


class Terminals:
    """One thread's terminals; `ask` shows a card and waits for the user's decision."""

    def __init__(
        self, workspace: Workspace, timeout: Callable[[], float], ask: Callable[[JsonObject], Awaitable[Any]]
    ) -> None:
        self._workspace = workspace
        self._timeout = timeout
        self._ask = ask
        self._open: dict[str, _Terminal] = {}

    async def create(
        self,
        command: str,
        args: list[str] | None,
        env: list[Any] | None,
        cwd: str | None,
        output_byte_limit: int | None,
    ) -> CreateTerminalResponse:
        line = shlex.join([command, *(args or [])]) if args else command
        if not line.strip() or len(line) > MAX_COMMAND_CHARS or "\x00" in line:
            raise RequestError.invalid_params({"command": "an empty, NUL-holding or too long command line"})
        if len(self._open) >= MAX_TERMINALS:
            raise RequestError.invalid_request({"terminal": f"at most {MAX_TERMINALS} terminals at once"})
        try:
            folder = self._workspace.resolve(cwd or ".")
        except WorkspaceError as exc:
            raise RequestError.invalid_params({"cwd": getattr(exc, "message", str(exc))}) from None
        relative = str(folder.relative_to(self._workspace.root)) or "."
        timeout = self._timeout()
        decision = await self._ask(
            {
                "name": "execute_command",
                "args": {"command": line, "cwd": relative, "timeout": timeout},
                "description": f"The agent runs a command (stopped after {timeout:g} s)",
                "command": line,
                "cwd": relative,
            }
        )
        if not decision.approved:
            raise RequestError.invalid_request({"rejected": decision.reason or "the user rejected the command"})
        extra = {str(v.name): str(v.value) for v in (env or [])[:100]}
        task = asyncio.create_task(run_command(line, folder, timeout=timeout, env={**command_env(), **extra}))
        terminal_id = f"term_{uuid.uuid4().hex[:16]}"
        self._open[terminal_id] = _Terminal(task, min(output_byte_limit or MAX_OUTPUT_BYTES, MAX_OUTPUT_BYTES))
        return CreateTerminalResponse(terminal_id=terminal_id)

    async def output(self, terminal_id: str) -> TerminalOutputResponse:
        terminal = self._get(terminal_id)
        if not terminal.task.done():  # the runner hands over its output when the command ends
            return TerminalOutputResponse(output="", truncated=False)
        if terminal.task.cancelled():
            return TerminalOutputResponse(output="", truncated=False, exit_status=KILLED)
        result = terminal.task.result()
        text = result.stdout + result.stderr
        data = text.encode("utf-8", errors="replace")
        truncated = len(data) > terminal.limit
        if truncated:  # the tail is kept, at a character boundary
            text = data[-terminal.limit :].decode("utf-8", errors="ignore")
        return TerminalOutputResponse(output=text, truncated=truncated, exit_status=_status(result))

    async def wait_for_exit(self, terminal_id: str) -> WaitForTerminalExitResponse:
        task = self._get(terminal_id).task
        await asyncio.wait({task})
        status = KILLED if task.cancelled() else _status(task.result())
        return WaitForTerminalExitResponse(exit_code=status.exit_code, signal=status.signal)

    async def kill(self, terminal_id: str) -> KillTerminalResponse:
        await self._stop(self._get(terminal_id))
        return KillTerminalResponse()

    async def release(self, terminal_id: str) -> ReleaseTerminalResponse:
        terminal = self._open.pop(terminal_id, None)
        if terminal is not None:
            await self._stop(terminal)
        return ReleaseTerminalResponse()

    async def close(self) -> None:
        for terminal_id in list(self._open):
            await self.release(terminal_id)

    def _get(self, terminal_id: str) -> _Terminal:
        terminal = self._open.get(str(terminal_id))
        if terminal is None:
            raise RequestError.invalid_params({"terminal_id": "no such terminal"})
        return terminal

    async def _stop(self, terminal: _Terminal) -> None:
        if not terminal.task.done():
            terminal.task.cancel()  # run_command kills the process group
            await asyncio.wait({terminal.task})


def _status(result: CommandResult) -> TerminalExitStatus:
    if result.timed_out or result.exit_code is None or result.exit_code < 0:
        return TerminalExitStatus(exit_code=None, signal="SIGKILL" if result.timed_out else "killed")
    return TerminalExitStatus(exit_code=result.exit_code)
