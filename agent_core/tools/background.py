"""Background steps (issue 38): a cell that outlives `background_after` ends its run as
waiting_for_cell while it goes on in the kernel. The tool hands the running step to a host (the loop's
BackgroundSteps) and raises StepInBackground; the host follows the cell and, when it ends, the run is
driven on and the tools node takes the step's outcome from the host instead of running it again."""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol

from agent_core.contract import EventDict
from agent_core.environment import Emit
from agent_core.json_types import JsonObject
from agent_core.tools.base import ToolOutcome

# What the ledger holds for a call whose step went to the background: the tools node, driven on,
# asks the host for the outcome instead of returning this (or running the call again).
IN_BACKGROUND = ToolOutcome(
    "error",
    "This cell went on running in the background and Cellwright lost track of it: its outcome is unknown. "
    "Look at the notebook before running it again.",
)
KERNEL_DIED_MEANWHILE = ToolOutcome(
    "error",
    "The kernel died while this cell ran (the server restarted meanwhile, and a local kernel stops with its "
    "server): its variables are gone. Restart the kernel and re-run the cells you need.",
)
UNFOLLOWED = ToolOutcome(
    "error",
    "The server restarted while this cell ran in the background, and its kernel is still alive: Cellwright could "
    "not follow the cell after the restart, so its outcome is not known here. Its outputs are in the notebook; "
    "look at them (or at the variables it sets) before running it again.",
)
OUTPUTS_KEPT = 200  # outputs a step keeps for "continue without waiting" (the model's digest is shorter still)


class StepInBackground(Exception):
    """A step went on in the background: the run ends as waiting_for_cell, the host follows it."""


class EmitRelay:
    """The sink a background-able step emits into: the run's, until the step goes to the background;
    then held until the run's sink has written its last event, and from then on the host's."""

    def __init__(self, target: Emit, call_id: str) -> None:
        self._target = target
        self._held: list[EventDict] | None = None
        self._call_id = call_id
        self.outputs: deque[JsonObject] = deque(maxlen=OUTPUTS_KEPT)  # the cell's outputs so far

    def __call__(self, event: EventDict) -> None:
        if event["type"] == "cell_output" and event["id"] == self._call_id and isinstance(event["output"], dict):
            self.outputs.append(event["output"])
        if self._held is not None:
            self._held.append(event)
        else:
            self._target(event)

    def hold(self) -> None:
        self._held = []

    def redirect(self, target: Emit) -> None:
        held, self._held = self._held or [], None
        self._target = target
        for event in held:
            target(event)


@dataclass
class BackgroundStep:
    """A step that went on running when its run ended: its outcome once it ends, and what the model is
    told if the user continues without waiting."""

    thread_id: str
    call_id: str
    outcome: asyncio.Task[ToolOutcome]
    relay: EmitRelay
    so_far: Callable[[], ToolOutcome]
    started: float = field(default_factory=time.monotonic)


class BackgroundHost(Protocol):
    """Who follows the steps that went to the background (agent_core.loop.background_steps)."""

    def follow(self, step: BackgroundStep) -> None: ...

    def take(self, thread_id: str, call_id: str) -> ToolOutcome | None:
        """The outcome of the thread's step that ended (or was let go), once; None if unknown."""
        ...


async def within(
    after: float,
    host: BackgroundHost,
    thread_id: str,
    call_id: str,
    relay: EmitRelay,
    work: Awaitable[ToolOutcome],
    so_far: Callable[[], ToolOutcome],
) -> ToolOutcome:
    """`work`'s outcome if it ends within `after` seconds; else the host follows it and the run ends
    (StepInBackground). A stop meanwhile stops the work too (the kernel is interrupted)."""
    task: asyncio.Task[ToolOutcome] = asyncio.ensure_future(work)
    try:
        done, _ = await asyncio.wait({task}, timeout=after)
    except asyncio.CancelledError:
        task.cancel()
        await asyncio.wait({task})
        raise
    if done:
        return task.result()
    relay.hold()  # the run's sink closes with the run; the host's takes over from there
    host.follow(BackgroundStep(thread_id, call_id, task, relay, so_far))
    raise StepInBackground(call_id)
