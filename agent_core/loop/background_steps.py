"""Follows the steps that went on in the background when their run ended (issue 38), one per thread:
writes their events into the thread's log with a sink of their own, keeps each one's outcome when it
ends and calls back, so the server drives the run on at once, whether or not anyone watches. Also
what the user does meanwhile: a message kept for the model, continue without waiting, stop."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from agent_core.loop.event_pump import EventPump
from agent_core.storage.event_log import EventLog
from agent_core.tools.background import BackgroundStep
from agent_core.tools.base import ToolOutcome

log = logging.getLogger(__name__)

MESSAGES_KEPT = 20  # messages sent while a cell runs, given to the model with its outcome


@dataclass
class _Followed:
    step: BackgroundStep
    sink: EventPump | None = None  # made once the run's own sink has written its last event
    let_go: bool = False  # the user continued without waiting: the cell's end resumes nothing
    messages: list[str] = field(default_factory=list)


class BackgroundSteps:
    """The server's follower of background steps; `on_ended(thread_id)` is called when a thread's
    step ended (or was let go) and its run should be driven on."""

    def __init__(self, events: EventLog, on_ended: Callable[[str], None]) -> None:
        self._events = events
        self._on_ended = on_ended
        self._waiting: dict[str, _Followed] = {}  # until the run is driven on
        self._detached: set[asyncio.Task[None]] = set()  # sinks of let-go cells, drained when they end
        self._let_go: dict[str, _Followed] = {}  # cells the user went on without, still running (Stop ends them)
        self._outcomes: dict[tuple[str, str], ToolOutcome] = {}
        self._orphans: dict[str, ToolOutcome] = {}  # after a restart: what a step nobody followed says

    # -- the tool's side (agent_core.tools.background.BackgroundHost)

    def follow(self, step: BackgroundStep) -> None:
        self._waiting[step.thread_id] = _Followed(step)
        step.outcome.add_done_callback(lambda _: self._ended(step))

    def take(self, thread_id: str, call_id: str) -> ToolOutcome | None:
        return self._outcomes.pop((thread_id, call_id), None) or self._orphans.pop(thread_id, None)

    # -- the run's and the server's side

    def run_ended(self, thread_id: str, run_id: str) -> None:
        """The run that started the step has written its last event: the step's go on under its run id."""
        followed = self._waiting.get(thread_id)
        if followed is not None and followed.sink is None:
            followed.sink = EventPump(self._events, thread_id, run_id)
            followed.step.relay.redirect(followed.sink)

    def waiting(self, thread_id: str) -> bool:
        """Whether the thread's run waits for a cell (until the server drives it on)."""
        return thread_id in self._waiting

    def queue(self, thread_id: str, message: str) -> bool:
        """Keep a message for the model, given with the cell's outcome; False if not waiting."""
        followed = self._waiting.get(thread_id)
        if followed is None:
            return False
        followed.messages = [*followed.messages, message][-MESSAGES_KEPT:]
        return True

    def let_go(self, thread_id: str) -> bool:
        """Continue without waiting: the model gets the output so far; False if nothing to let go."""
        followed = self._waiting.get(thread_id)
        if followed is None or followed.let_go or followed.step.outcome.done():
            return False
        followed.let_go = True
        self._outcomes[(thread_id, followed.step.call_id)] = followed.step.so_far()
        return True

    async def resuming(self, thread_id: str) -> list[str]:
        """The server drives the thread's run on now: the step's events so far are in the log, its
        outcome carries the messages the user sent meanwhile, which are returned."""
        followed = self._waiting.pop(thread_id, None)
        if followed is None:
            return []
        step = followed.step
        if followed.sink is not None and step.outcome.done():
            await followed.sink.drain()
        elif followed.sink is not None:  # let go: the cell still runs, its sink writes until it ends
            self._let_go[thread_id] = followed
            drain = asyncio.create_task(_drain_after(step, followed.sink))
            self._detached.add(drain)
            drain.add_done_callback(self._detached.discard)
            drain.add_done_callback(lambda _: self._forget_let_go(thread_id, followed))
        key = (thread_id, step.call_id)
        if followed.messages and key in self._outcomes:
            outcome = self._outcomes[key]
            said = "\n".join(f"- {m}" for m in followed.messages)
            note = f"\n\n[While this cell ran, the user wrote:\n{said}]"
            self._outcomes[key] = replace(outcome, content=outcome.content + note)
        return followed.messages

    async def stop(self, thread_id: str) -> bool:
        """Stop the thread's background cell, waited for or let go (the kernel is interrupted); False
        if there is none."""
        followed = self._waiting.pop(thread_id, None) or self._let_go.pop(thread_id, None)
        if followed is None:
            return False
        followed.step.outcome.cancel()
        await asyncio.wait({followed.step.outcome})
        self._outcomes.pop((thread_id, followed.step.call_id), None)
        if followed.sink is not None:
            await followed.sink.drain()
        return True

    def _forget_let_go(self, thread_id: str, followed: _Followed) -> None:
        if self._let_go.get(thread_id) is followed:
            del self._let_go[thread_id]

    def orphaned(self, thread_id: str, outcome: ToolOutcome) -> None:
        """After a restart: the outcome of the step the thread waited for, which nobody followed."""
        self._orphans[thread_id] = outcome

    def _ended(self, step: BackgroundStep) -> None:
        followed = self._waiting.get(step.thread_id)
        if followed is None or followed.step is not step or followed.let_go:
            return  # stopped, or let go (its outcome was given already)
        if step.outcome.cancelled():
            return
        error = step.outcome.exception()
        if error is not None:
            log.error("background cell %s of thread %s failed", step.call_id, step.thread_id, exc_info=error)
            outcome = ToolOutcome("error", f"run_cell failed: {type(error).__name__}: {error}")
        else:
            outcome = step.outcome.result()
        self._outcomes[(step.thread_id, step.call_id)] = outcome
        self._on_ended(step.thread_id)


async def _drain_after(step: BackgroundStep, sink: EventPump) -> None:
    await asyncio.wait({step.outcome})
    await sink.drain()
