"""A test process that cannot exit is a CI run that never ends: after the session, a thread still
running that Python's exit would wait for forever (an aiosqlite connection left open, a websocket
reader never stopped) fails the run by name, with its stack, instead of hanging it."""

from __future__ import annotations

import os
import sys
import threading
import traceback
from concurrent.futures import thread as executor_thread

import pytest

_exit_status = 0


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


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    global _exit_status
    _exit_status = int(exitstatus)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    leaked = threads_that_block_exit()
    if not leaked:
        return
    frames = sys._current_frames()
    stacks = "\n".join(
        f"--- {t.name}\n{''.join(traceback.format_stack(frames[t.ident]))}" for t in leaked if t.ident in frames
    )
    sys.stderr.write(
        f"\nFAILED: {len(leaked)} thread(s) left running would keep this process from exiting:\n{stacks}\n"
    )
    sys.stderr.flush()
    os._exit(_exit_status or 3)
