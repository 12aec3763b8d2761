"""A test process that cannot exit is a CI run that never ends: after the session, a thread still
running that Python's exit would wait for forever (an aiosqlite connection left open, a websocket
reader never stopped) fails the run by name, with its stack, instead of hanging it.

Under pytest-xdist each worker checks itself: it hands the stacks to the controller (`workeroutput`),
which prints them and fails the run, and then leaves without waiting for those threads."""

from __future__ import annotations

import os
import sys
import threading
import traceback
from concurrent.futures import thread as executor_thread

import pytest

_exit_status = 0
_worker_leaks: list[str] = []  # on the controller: what the workers reported


def threads_that_block_exit() -> list[threading.Thread]:
    """Live non-daemon threads other than the main one and idle executor workers (exit stops those)."""
    return [
        t
        for t in threading.enumerate()
        if t.is_alive()
        and not t.daemon
        and t is not threading.main_thread()
        and getattr(t, "_target", None) is not executor_thread._worker
    ]


def _stacks(leaked: list[threading.Thread]) -> str:
    frames = sys._current_frames()
    return "\n".join(
        f"--- {t.name}\n{''.join(traceback.format_stack(frames[t.ident]))}" for t in leaked if t.ident in frames
    )


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    global _exit_status
    _exit_status = int(exitstatus)
    workeroutput = getattr(session.config, "workeroutput", None)  # set in an xdist worker only
    if workeroutput is not None and (leaked := threads_that_block_exit()):
        workeroutput["leaked_threads"] = f"{len(leaked)} thread(s):\n{_stacks(leaked)}"
    if _worker_leaks:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: object, error: object) -> None:
    """An xdist worker ended (a hook of the controller): keep what it found left running."""
    if leaks := getattr(node, "workeroutput", {}).get("leaked_threads"):
        _worker_leaks.append(f"{node.gateway.id}: {leaks}")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for report in _worker_leaks:
        terminalreporter.write_line(f"FAILED: left running in worker {report}", red=True)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    leaked = threads_that_block_exit()
    if not leaked:
        return
    if not hasattr(config, "workeroutput"):  # a worker's stacks went to the controller
        sys.stderr.write(
            f"\nFAILED: {len(leaked)} thread(s) left running would keep this process from exiting:\n{_stacks(leaked)}\n"
        )
        sys.stderr.flush()
    os._exit(_exit_status or 3)
