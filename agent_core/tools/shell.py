"""execute_command: a shell command in the workspace, after approval.

The command runs under bash in its own session (so in its own process group) in the root folder
or a subfolder of it. Its output streams to the panel as `cell_output` stream events (batched) and
is kept bounded (head and tail) for the model. On time-out, on Stop (task cancelled) and when the
command leaves background processes behind, the whole process group is stopped: SIGTERM, then
SIGKILL after a grace period. Nothing it started survives it (short of its own setsid)."""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import shutil
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field, field_validator

from agent_core.contract import make_event
from agent_core.json_types import JsonObject
from agent_core.output_digest import ANSI, BoundedText
from agent_core.tools.arguments import ToolArgs, argument_error
from agent_core.tools.base import Emit, ToolContext, ToolInputError, ToolOutcome, ToolSpec, will_fail
from agent_core.tools.files import confined
from agent_core.tools.shell_sandbox import command_reason, sandbox_env, shell_wrapper
from agent_core.tools.spawn import start_process
from agent_core.undo.card import command_impact
from agent_core.workspace import relative_to_root, workspace_of

STDOUT_LIMIT = 8000  # characters kept for the model: head and tail
STDERR_LIMIT = 4000
STREAM_LIMIT = 200_000  # characters streamed to the panel per command; the rest is only counted
FLUSH_SECONDS = 0.1
FLUSH_CHARS = 4096
READ_CHUNK = 65536
MAX_STDIN_BYTES = 1024 * 1024
MAX_TIMEOUT = 3600.0
TERM_GRACE = 1.0  # seconds between SIGTERM and SIGKILL
PIPE_GRACE = 0.5  # after the shell exits, how long its pipes may stay open before leftovers are stopped
SHELL = shutil.which("bash") or "/bin/sh"


class PanelStream:
    """Batches output into `cell_output` events: flushed every FLUSH_SECONDS or FLUSH_CHARS, and
    capped at STREAM_LIMIT characters per command (then one notice)."""

    def __init__(self, emit: Emit | None, call_id: str, limit: int = STREAM_LIMIT) -> None:
        self._emit = emit
        self._call_id = call_id
        self._limit = limit
        self._pending: list[list[str]] = []  # [name, text], consecutive same-stream pieces merged
        self._pending_chars = 0
        self._sent = 0
        self._capped = False
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._emit is not None:
            self._task = asyncio.create_task(self._tick())

    def add(self, name: str, text: str) -> None:
        if self._emit is None or not text or self._capped:
            return
        room = self._limit - self._sent - self._pending_chars
        if len(text) >= room:
            text = text[: max(room, 0)]
            self._capped = True
        if text:
            if self._pending and self._pending[-1][0] == name:
                self._pending[-1][1] += text
            else:
                self._pending.append([name, text])
            self._pending_chars += len(text)
        if self._capped:
            self._pending.append(
                ["stderr", f"\n[output beyond {self._limit} characters is not shown here; the command goes on]\n"]
            )
            self.flush()
        elif self._pending_chars >= FLUSH_CHARS:
            self.flush()

    def flush(self) -> None:
        if self._emit is None:
            return
        pending, self._pending = self._pending, []
        self._sent += self._pending_chars
        self._pending_chars = 0
        for name, text in pending:
            output = {"output_type": "stream", "name": name, "text": text}
            self._emit(make_event("cell_output", id=self._call_id, output=output))

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(FLUSH_SECONDS)
            if self._pending:
                self.flush()

    def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None
        self.flush()


@dataclass
class CommandResult:
    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool = False
    stopped_leftovers: bool = False  # background processes were still running after the command ended
    duration: float = 0.0


def _group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes of the process group, from /proc; None-safe elsewhere."""
    members = []
    try:
        names = os.listdir("/proc")
    except OSError:
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return []
        return [pgid]
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                stat = handle.read().decode(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()  # after "pid (comm) ": state ppid pgrp ...
        if len(fields) >= 3 and fields[2] == str(pgid) and fields[0] not in ("Z", "X"):
            members.append(int(name))
    return members


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def kill_group(pgid: int, grace: float = TERM_GRACE) -> None:
    """SIGTERM the group, then SIGKILL whatever is left after `grace` seconds (also when cancelled)."""
    _signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    try:
        while _group_members(pgid) and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
    finally:
        if _group_members(pgid):
            _signal_group(pgid, signal.SIGKILL)


async def _feed(stdin: asyncio.StreamWriter | None, data: bytes) -> None:
    if stdin is None:
        return
    with contextlib.suppress(BrokenPipeError, ConnectionResetError, OSError):
        if data:
            stdin.write(data)
            await stdin.drain()
        stdin.close()


async def _pump(reader: asyncio.StreamReader | None, name: str, kept: BoundedText, panel: PanelStream) -> None:
    if reader is None:
        return
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    while chunk := await reader.read(READ_CHUNK):
        text = decoder.decode(chunk)
        kept.add(text)
        panel.add(name, text)
    tail = decoder.decode(b"", final=True)
    kept.add(tail)
    panel.add(name, tail)


async def _exited(proc: asyncio.subprocess.Process) -> None:
    # Not proc.wait(): in Python 3.11 it also waits for the pipes, which background children hold open.
    while proc.returncode is None:
        await asyncio.sleep(0.02)


def command_env() -> dict[str, str]:
    env = dict(os.environ)
    # Nothing may wait for a human: no pagers, no git credential prompts; Python output unbuffered.
    env.update({"PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0", "PYTHONUNBUFFERED": "1"})
    return env


async def run_command(
    command: str,
    cwd: Path,
    *,
    stdin: str = "",
    timeout: float = 120.0,
    emit: Emit | None = None,
    call_id: str = "",
    on_start: Callable[[int], None] | None = None,
    prefix: list[str] | None = None,
    env: dict[str, str] | None = None,
) -> CommandResult:
    """Run `command` with bash in `cwd`; see the module docstring for the guarantees. `prefix`: what
    runs bash (issue 37: bubblewrap's argv for a sandboxed read-only command)."""
    started = time.monotonic()
    proc = await start_process(
        *(prefix or []),
        SHELL,
        "-c",
        command,
        cwd=str(cwd),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,  # its own session and process group, no controlling terminal
        env=command_env() if env is None else env,
    )
    pgid = proc.pid
    if on_start is not None:
        on_start(pgid)
    stdout, stderr = BoundedText(STDOUT_LIMIT), BoundedText(STDERR_LIMIT)
    panel = PanelStream(emit, call_id)
    panel.start()
    feeder = asyncio.create_task(_feed(proc.stdin, stdin.encode("utf-8")))
    readers = [
        asyncio.create_task(_pump(proc.stdout, "stdout", stdout, panel)),
        asyncio.create_task(_pump(proc.stderr, "stderr", stderr, panel)),
    ]
    timed_out = leftovers = False
    try:
        try:
            await asyncio.wait_for(_exited(proc), timeout)
        except asyncio.TimeoutError:
            timed_out = True
            await kill_group(pgid)
            await _exited(proc)
        # The shell is gone; children it left in the background may still hold its pipes.
        _, pending = await asyncio.wait(readers, timeout=PIPE_GRACE)
        if pending or _group_members(pgid):
            leftovers = not timed_out
            await kill_group(pgid)
            await asyncio.wait(readers, timeout=2.0)
        with contextlib.suppress(asyncio.TimeoutError):  # pipes closed: the transport finishes
            await asyncio.wait_for(proc.wait(), 2.0)
    except asyncio.CancelledError:
        await kill_group(pgid)
        raise
    finally:
        for task in (feeder, *readers):
            task.cancel()
        panel.close()
        if proc.returncode is None:  # cancelled before it was reaped
            _signal_group(pgid, signal.SIGKILL)
    return CommandResult(
        proc.returncode, stdout.text(), stderr.text(), timed_out, leftovers, time.monotonic() - started
    )


class ExecuteCommandArgs(ToolArgs):
    command: str = Field(description="The command line, run with bash -c.")
    stdin: str | None = Field(default=None, description="Text sent to the command's standard input.")
    timeout: float | None = Field(
        default=None, description=f"Seconds before it is stopped (at most {MAX_TIMEOUT:.0f})."
    )
    cwd: str | None = Field(default=None, description="Folder to run in, relative to the workspace root.")

    @field_validator("command")
    @classmethod
    def _runnable(cls, command: str) -> str:
        if not command.strip():
            raise argument_error("command is empty")
        if "\x00" in command:
            raise argument_error("command cannot contain a NUL character")
        return command

    @field_validator("stdin")
    @classmethod
    def _bounded(cls, stdin: str | None) -> str | None:
        if stdin is not None and len(stdin.encode("utf-8", errors="replace")) > MAX_STDIN_BYTES:
            raise argument_error("stdin is larger than 1 MiB; write it to a file and redirect it instead")
        return stdin

    @field_validator("timeout", mode="before")
    @classmethod
    def _seconds(cls, value: object) -> Any:
        # before the type check: `true` is no number of seconds, whatever JSON's loose typing allows
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0):
            raise argument_error("timeout must be a positive number of seconds")
        if value is not None and value > MAX_TIMEOUT:
            raise argument_error(f"timeout may be at most {MAX_TIMEOUT:.0f} seconds")
        return value


def _folder(args: ExecuteCommandArgs, ctx: ToolContext) -> tuple[Path, str]:
    """The folder the command runs in, and its path relative to the root."""
    workspace = workspace_of(ctx.env)
    cwd = confined(workspace, args.cwd or ".")
    rel = relative_to_root(workspace, cwd)
    if not cwd.is_dir():
        raise ToolInputError(f"cwd {rel!r} is not an existing folder of the workspace")
    return cwd, rel


def _section(name: str, text: str) -> str:
    text = ANSI.sub("", text).rstrip("\n")
    return f"{name}:\n{text}" if text else f"{name}: (empty)"


def format_result(command: str, rel: str, result: CommandResult, timeout: float) -> str:
    lines = [f"$ {command}" if "\n" not in command else f"$ {command.splitlines()[0]} ...", f"(cwd: {rel})"]
    if result.timed_out:
        lines.append(f"timed out after {timeout:g} s: the command and its child processes were stopped")
    else:
        lines.append(f"exit code: {result.exit_code}")
    if result.stopped_leftovers:
        lines.append("note: background processes the command left running were stopped")
    lines += [_section("stdout", result.stdout), _section("stderr", result.stderr)]
    return "\n".join(lines)


async def execute_command(args: ExecuteCommandArgs, ctx: ToolContext) -> ToolOutcome:
    cwd, rel = _folder(args, ctx)
    timeout = args.timeout or ctx.settings.command_timeout
    prefix = None
    if ctx.decision == "sandboxed":  # issue 37: not asked because it is read-only: it runs sandboxed
        reason = await command_reason(args.command, ctx)
        if reason is not None:
            raise ToolInputError(f"the sandbox is not available for this command ({reason}); call it again to be asked")
        prefix = shell_wrapper(ctx, cwd).argv
    result = await run_command(
        args.command,
        cwd,
        stdin=args.stdin or "",
        timeout=timeout,
        emit=ctx.emit,
        call_id=ctx.call_id,
        prefix=prefix,
        env=sandbox_env() if prefix is not None else None,
    )
    content = format_result(args.command, rel, result, timeout)
    if prefix is not None:
        content = "[ran sandboxed, unasked: read-only, no network, hidden files masked, /tmp private]\n" + content
    ok = result.exit_code == 0 and not result.timed_out
    status = f"timed out after {timeout:g} s" if result.timed_out else f"exit code {result.exit_code}"
    tail = ANSI.sub("", (result.stdout or result.stderr)).strip()[-200:]
    return ToolOutcome(
        "ok" if ok else "error",
        content,
        summary=f"{status}\n{tail}".strip(),
        event={"sandboxed": True} if prefix is not None else {},
    )


async def execute_command_preview(args: ExecuteCommandArgs, ctx: ToolContext) -> JsonObject:
    try:
        _, rel = _folder(args, ctx)
    except ToolInputError as exc:
        return will_fail("execute_command", exc, command=args.command, cwd=args.cwd or ".")
    card: JsonObject = {"command": args.command, "cwd": rel, "impact": command_impact(args.command, ctx)}
    reason = await command_reason(args.command, ctx)  # issue 37: why it is asked, not sandboxed
    if reason is not None:
        card["sandbox_reason"] = reason
    return card


def _describe(args: ExecuteCommandArgs) -> str:
    cwd = args.cwd or "."
    return "Run a shell command in the workspace root" if cwd in (".", "./") else f"Run a shell command in {cwd}"


EXECUTE_COMMAND = ToolSpec(
    name="execute_command",
    description=(
        "Run a shell command (bash) in the workspace root or a subfolder (cwd), after the user approves it. "
        "Returns the exit code and the output (long output keeps its head and tail). stdin is empty unless "
        'given (e.g. "y\\n"); nothing interactive works. The command and everything it started are stopped '
        "at the timeout (seconds; default from the settings). Prefer non-interactive flags (pip -q, apt -y)."
    ),
    args=ExecuteCommandArgs,
    action=execute_command,
    touches="outside",
    rewind_leaves="a shell command ran on the server: its effects (files, installs, network) stay",
    outside_agents=True,
    needs_approval=True,
    describe=_describe,
    card=execute_command_preview,
    sandboxed=lambda args, ctx: command_reason(args.command, ctx),  # issue 37: read-only commands run unasked
)
