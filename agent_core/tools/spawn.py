"""Starting a child process that a Stop cannot wedge.

asyncio's create_subprocess_exec, cancelled while it still connects the child's pipes (a Stop in the
command's first milliseconds, likelier on a loaded machine), closes the transport and waits for it to
finish; in Python 3.11 that wait never ends, since a pipe not yet connected is never reported lost
(the shell tool's Stop test hung for 300 s in CI). Here the start is shielded from the cancellation:
it finishes, what it started is killed (the whole process group for a child in a session of its
own) and reaped, and the cancellation goes on."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from typing import Any

REAP_SECONDS = 5.0


async def start_process(*argv: str, **options: Any) -> asyncio.subprocess.Process:
    """`asyncio.create_subprocess_exec(*argv, **options)`, safe to cancel at any moment."""
    starting = asyncio.ensure_future(asyncio.create_subprocess_exec(*argv, **options))
    try:
        return await asyncio.shield(starting)
    except asyncio.CancelledError:
        with contextlib.suppress(Exception):
            proc = await starting
            if options.get("start_new_session"):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
            else:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
            # Gone when the Stop returns. Bounded: a process that left the group may hold the pipes.
            await asyncio.wait_for(proc.wait(), REAP_SECONDS)
        raise
