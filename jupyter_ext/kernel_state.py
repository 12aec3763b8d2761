"""Whether a kernel runs a cell, and waiting for it to turn idle: from jupyter_server's tracked
execution state for a local kernel, by asking it (kernel_info) for a gateway's."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from .kernel_clients import KernelManagerProtocol, connected_client, is_remote

BUSY_GRACE_SECONDS = 0.25  # for a kernel shown busy to turn idle: our own evaluation's "idle" arrives within ms
# An idle gateway kernel's kernel_info answer crosses the gateway and back: on a loaded machine that
# took longer than the local grace, and an idle kernel read as busy (a mention "not read" in CI). A
# kernel that runs a cell does not answer at all until it ends, so a longer wait only delays the
# "busy" verdict, never a wrong "idle".
REMOTE_ANSWER_SECONDS = 2.0


async def busy(manager: KernelManagerProtocol) -> bool:
    """Whether the kernel runs a cell. jupyter_server's kernel managers track the state from iopub;
    a gateway's state can stay "busy" for good (see KernelEnvironment._wait_for_turn), so its kernel is asked instead;
    other managers count as idle."""
    if is_remote(manager):
        return not await answers_within(manager, REMOTE_ANSWER_SECONDS)
    return getattr(manager, "execution_state", "idle") == "busy"


async def answers_within(manager: KernelManagerProtocol, seconds: float) -> bool:
    """Whether a gateway kernel answers a kernel_info request within `seconds`: one that runs a
    cell answers after it (its shell takes one request at a time). A websocket of its own: a few ms."""
    client = await connected_client(manager, outputs=False)
    try:
        await client.wait_for_ready(timeout=seconds)
        return True
    except RuntimeError:
        return False
    finally:
        client.stop_channels()


async def idle_within(manager: KernelManagerProtocol, seconds: float) -> bool:
    """Whether the kernel is idle now or turns idle within `seconds` (its state is a trait of
    jupyter_server's kernel manager: observed, not polled; a gateway kernel is asked)."""
    if is_remote(manager):
        return await answers_within(manager, max(seconds, REMOTE_ANSWER_SECONDS))
    if not await busy(manager):
        return True
    if not hasattr(manager, "observe"):
        return False
    idle: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def changed(change: Mapping[str, object]) -> None:
        if change["new"] != "busy" and not idle.done():
            idle.set_result(None)

    manager.observe(changed, names="execution_state")
    try:
        if manager.execution_state != "busy":  # it changed before we observed
            return True
        await asyncio.wait_for(idle, seconds)
        return True
    except asyncio.TimeoutError:
        return False
    finally:
        manager.unobserve(changed, names="execution_state")
