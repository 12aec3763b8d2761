"""The in-kernel ToolEnvironment: the agent's cells run through the kernel's own InteractiveShell.

The agent runs in a worker thread (its own event loop); the shell belongs to IPython's main thread,
which is busy running the `%agent` cell. So everything that touches the shell, the user's namespace
or the cell's output goes through `MainThread`: the worker queues a function, the main thread runs
it (`MainThread.serve`) and hands the result back."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import os
import queue
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from agent_core.contract import make_event
from agent_core.json_types import JsonObject
from agent_core.kernel_side.cell_console import DIM, RESET
from agent_core.tools import CellPlacement, CellRun, ToolInputError
from agent_core.tools.base import Emit, cell_finished

log = logging.getLogger(__name__)


class MainThread:
    """Work the worker thread hands to IPython's main thread. `call` waits for the answer (cells,
    evaluations, approvals); `post` does not (printing). Both are called from the worker."""

    def __init__(self) -> None:
        self._queue: queue.Queue[tuple[Callable[[], Any], concurrent.futures.Future[Any] | None]] = queue.Queue()
        self.stopping = False  # set by the main thread: no more cells or questions, only printing

    async def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        if self.stopping:
            raise asyncio.CancelledError()
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self._queue.put((partial(fn, *args), future))
        return await asyncio.wrap_future(future)  # cancelling the waiter cancels a request not yet started

    def post(self, fn: Callable[..., Any], *args: Any) -> None:
        self._queue.put((partial(fn, *args), None))

    def serve(self, worker_alive: Callable[[], bool]) -> None:
        """Run what the worker queues until it has ended and the queue is empty. A KeyboardInterrupt
        (Ctrl-C, the kernel's interrupt) propagates: the caller stops the worker and serves again."""
        while worker_alive() or not self._queue.empty():
            try:
                fn, future = self._queue.get(timeout=0.05)
            except queue.Empty:
                continue
            if future is None:
                try:
                    fn()
                except Exception:  # a display glitch must not end the call
                    log.exception("%agent could not show an event")
            elif self.stopping:
                future.cancel()
            elif future.set_running_or_notify_cancel():
                try:
                    result = fn()
                except Exception as exc:
                    future.set_exception(exc)
                else:
                    future.set_result(result)


@dataclass
class ShellEnvironment:
    """A ToolEnvironment over the kernel's InteractiveShell; `run_cell` and `evaluate_json` are
    awaited in the worker and done on the main thread."""

    shell: Any  # IPython's InteractiveShell
    main: MainThread
    notebook_path: str = ""
    kernel_id: str = ""
    root_dir: Path = field(default_factory=Path.cwd)
    # An agent_core.workspace.Workspace; None is the kernel side's policy: no hidden files, and
    # jupyter_data_dir()/cellwright and the runtime folder denied (Workspace.default).
    workspace: Any = None
    # Seconds after which a cell's note says the agent waits for it (the magic's background_after; 0: never).
    long_after: float = 0.0
    _shown: Any = None  # the kernel's own stdout while a cell runs (not the tee): what the worker writes to

    edits_cells = False  # no browser writes the magic's cells into the notebook

    async def run_cell(self, call_id: str, code: str, emit: Emit, placement: CellPlacement | None = None) -> CellRun:
        started = time.monotonic()
        emit(
            make_event(
                "cell_started", id=call_id, code=code, notebook_path=self.notebook_path, kernel_id=self.kernel_id
            )
        )
        work = asyncio.ensure_future(self.main.call(self._run_here, code))
        try:
            if self.long_after > 0 and not (await asyncio.wait({work}, timeout=self.long_after))[0]:
                self._say_it_waits()
            outputs, status, count = await work
        except asyncio.CancelledError:
            work.cancel()  # a request not yet started never runs
            emit(cell_finished(call_id, "aborted", None, started))
            raise
        for output in outputs:  # already shown in the cell; into the thread's log for the panel
            emit(make_event("cell_output", id=call_id, output=output))
        emit(cell_finished(call_id, status, count, started))
        return CellRun(status, outputs, count, int((time.monotonic() - started) * 1000))

    def _say_it_waits(self) -> None:
        """Issue 38: a cell of %agent cannot go on in the background (the kernel is busy with the
        %agent cell itself), so its output says why the agent waits, written from the worker thread
        past the tee (the model is not told it)."""
        stream = self._shown
        if stream is None:
            return
        stream.write(
            f"\n{DIM}[Cellwright] This cell has run for {self.long_after:g} s; the agent waits for it. A cell that "
            "%agent runs cannot go on in the background: the kernel is busy with this %agent cell until it ends. "
            "Its output shows here as it comes, and the agent goes on by itself when it ends; interrupt the kernel "
            f"to stop both. The Cellwright panel shows this conversation too.{RESET}\n"
        )
        stream.flush()

    async def restart_kernel(self) -> str:
        raise ToolInputError("%agent runs inside this kernel and cannot restart it: use Kernel > Restart Kernel")

    async def kernel_identity(self) -> str | None:
        return None  # a restart ends the magic's run with its kernel

    async def kernel_pid(self) -> int | None:
        return os.getpid()  # the magic runs inside the kernel: check_resource reports this process tree

    async def evaluate_json(self, expression: str) -> Any:
        try:
            value = await self.main.call(eval, expression, self.shell.user_global_ns, self.shell.user_ns)
            return json.loads(value)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            raise ToolInputError(f"the kernel could not evaluate it: {type(exc).__name__}: {exc}") from None

    async def kernel_history(self, n: int) -> list[tuple[int, str]]:
        # The current session (0), from memory: get_tail reads the history database that every kernel of
        # this user writes, where another notebook's newer session would pass for this one.
        entries = await self.main.call(
            lambda: list(self.shell.history_manager.get_range(0, 1, None, raw=True, output=False))
        )
        return [(int(line), str(source)) for _, line, source in entries][-n:] if n > 0 else []

    # -- on the main thread

    def _run_here(self, code: str) -> tuple[list[JsonObject], str, int | None]:
        """Run `code` as a cell of the user's kernel: its output shows in the `%agent` cell and is
        recorded (stdout and stderr teed, displays noted) as nbformat outputs for the model."""
        outputs: list[JsonObject] = []
        shell = self.shell
        publish = shell.display_pub.publish

        def published(data: JsonObject, *args: Any, **kwargs: Any) -> Any:
            outputs.append({"output_type": "display_data", "data": data, "metadata": {}})
            return publish(data, *args, **kwargs)

        stdout, stderr = sys.stdout, sys.stderr
        self._shown = stdout
        try:
            sys.stdout, sys.stderr = _Tee(stdout, "stdout", outputs), _Tee(stderr, "stderr", outputs)
            shell.display_pub.publish = published
            result = shell.run_cell(code, store_history=False)  # part of the `%agent` cell: no history line of its own
        finally:
            sys.stdout, sys.stderr = stdout, stderr
            shell.display_pub.publish = publish
            self._shown = None
        error = result.error_before_exec or result.error_in_exec
        if isinstance(error, KeyboardInterrupt):
            raise KeyboardInterrupt  # the user stopped the run, not just this cell
        if result.result is not None:
            data, _ = shell.display_formatter.format(result.result)
            outputs.append(
                {
                    "output_type": "execute_result",
                    "data": data,
                    "metadata": {},
                    "execution_count": result.execution_count,
                }
            )
        if error is not None:
            outputs.append(_error_output(shell, error))
        return outputs, "ok" if result.success else "error", result.execution_count


class _Tee:
    """A stream that writes through to the real one (the user sees the output as it comes) and
    keeps a copy as stream outputs."""

    def __init__(self, stream: Any, name: str, outputs: list[JsonObject]) -> None:
        self._stream = stream
        self._name = name
        self._outputs = outputs

    def write(self, text: str) -> int:
        last = self._outputs[-1] if self._outputs else None
        if last is not None and last.get("name") == self._name:
            last["text"] = str(last["text"]) + text  # a stream's text, as this writer appended it
        else:
            self._outputs.append({"output_type": "stream", "name": self._name, "text": text})
        return self._stream.write(text)

    def __getattr__(self, name: str) -> Any:  # flush, isatty, encoding, fileno...
        return getattr(self._stream, name)


def _error_output(shell: Any, error: BaseException) -> JsonObject:
    """The error as the user saw it (IPython's formatting, colour codes removed later by the digest)."""
    try:
        if isinstance(error, SyntaxError):
            trace = traceback.format_exception_only(type(error), error)
        else:
            trace = shell.InteractiveTB.structured_traceback(type(error), error, error.__traceback__)
    except Exception:
        trace = traceback.format_exception(type(error), error, error.__traceback__)
    return {"output_type": "error", "ename": type(error).__name__, "evalue": str(error), "traceback": trace}
