"""Readers of a thread's events (the event stream route, the magic): the stored backlog, then the
live events until the thread's run ends, here or in another process that shares the database."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass

from agent_core.json_types import JsonObject
from agent_core.storage.event_log import seq_of
from agent_core.storage.thread_store import ThreadRecord, ThreadStore

RUN_FINISHED_GRACE = 5.0  # seconds a follower of a run elsewhere waits for its run_finished after its lease goes


@dataclass(frozen=True)
class StreamItem:
    """One thing for a reader of a thread's events: an event (stored, with a seq, or live only),
    the end of the replayed backlog, or a keep-alive ping."""

    kind: str  # "event" | "caught_up" | "ping"
    event: JsonObject | None = None
    stored: bool = True


class ThreadFollowing:
    """RunManager's followers of a thread's events; what they need of the manager is declared here."""

    threads: ThreadStore
    ping_interval: float

    async def thread(self, thread_id: str) -> ThreadRecord:
        raise NotImplementedError

    def is_running(self, thread_id: str) -> bool:
        raise NotImplementedError

    async def follow(self, thread_id: str, after: int, previews: bool = False) -> AsyncIterator[StreamItem]:
        """The thread's events after seq `after`: the stored backlog, `caught_up`, then live events
        (stored ones and live-only outputs, in order) until the thread's run ends; pings while idle.
        With `previews`, also each token as it arrives, before its coalesced row is stored."""
        async with aclosing(self.follow_batches(thread_id, after, previews)) as batches:
            async for batch in batches:
                for item in batch:
                    yield item

    async def follow_batches(
        self, thread_id: str, after: int, previews: bool = False, waiting: bool = False
    ) -> AsyncGenerator[list[StreamItem], None]:  # a generator: callers close it with aclosing
        """`follow`'s items, grouped by wake-up: what was ready at once, so a writer flushes once.
        With `waiting`, a thread that waits for a decision is followed too, until its next run ends:
        a decision made elsewhere then reaches this reader as events, without asking again."""
        await self.thread(thread_id)
        if previews:
            self.threads.events.reading_previews(thread_id, 1)
        try:
            async for batch in self._follow(thread_id, after, previews, waiting):
                yield batch
        finally:
            if previews:
                self.threads.events.reading_previews(thread_id, -1)

    async def _follow(
        self, thread_id: str, after: int, previews: bool, waiting: bool
    ) -> AsyncIterator[list[StreamItem]]:
        event_log = self.threads.events
        live = event_log.live_start(thread_id, after)
        caught_up = False
        followed_elsewhere = False  # a run another process drives: it ends after the lease goes
        last_type = ""  # of the last stored event sent
        while True:
            undecided = False  # the thread waits for a decision, and this reader follows that too
            elsewhere = await self._driven_elsewhere(thread_id)
            followed_elsewhere = followed_elsewhere or elsewhere
            running = elsewhere or self.is_running(thread_id)
            batch: list[StreamItem] = []
            for event in await event_log.events_after(thread_id, after):
                items, live = self._live_items(thread_id, live, seq_of(event) - 1, previews)
                batch += items
                batch.append(StreamItem("event", event))
                after, last_type = seq_of(event), str(event["type"])
            items, live = self._live_items(thread_id, live, after, previews)
            batch += items
            if not caught_up:
                from agent_core.contract import make_event

                caught_up = True
                batch.append(
                    StreamItem("caught_up", dict(make_event("caught_up", seq=after, thread_id=thread_id)), stored=False)
                )
            if batch:
                yield batch
            if not running and not self.is_running(thread_id) and not await event_log.events_after(thread_id, after, 1):
                if followed_elsewhere and last_type != "run_finished":
                    # The run's process releases its lease just before it writes run_finished (so a
                    # client acting on that event finds the thread free): wait for it, once and
                    # briefly (a process that died writes none).
                    followed_elsewhere = False
                    await event_log.wait_for_events(thread_id, after, RUN_FINISHED_GRACE)
                    continue
                # The status is saved before the segment's run_finished(awaiting_approval) is written.
                record = await self.threads.get(thread_id) if waiting else None
                if record is None or record.status != "awaiting_approval":
                    if record is not None and (
                        self.is_running(thread_id) or await event_log.events_after(thread_id, after, 1)
                    ):
                        continue  # decided while the record was read: its run started, follow it
                    return
                undecided = True
            before, live_before = after, live
            await event_log.wait_for_events(
                thread_id,
                after,
                self.ping_interval,
                still=lambda: elsewhere or undecided or self.is_running(thread_id),  # noqa: B023 (awaited in this turn)
                live_start=live,
            )
            idle = not await event_log.events_after(thread_id, before, 1) and not event_log.has_live_after(
                thread_id, live_before
            )
            if (elsewhere or undecided or self.is_running(thread_id)) and idle:
                yield [StreamItem("ping")]

    async def _driven_elsewhere(self, thread_id: str) -> bool:
        """Another server (or a kernel's %agent) runs the thread, and its appends wake our readers
        (a shared PostgreSQL): follow that run live too, until its lease goes."""
        return (
            self.threads.events.notifies
            and not self.is_running(thread_id)
            and await self.threads.leased_elsewhere(thread_id) is not None
        )

    def _live_items(self, thread_id: str, start: int, upto_seq: int, previews: bool) -> tuple[list[StreamItem], int]:
        """Live-only events to send, and where this reader's position in the live log moves to
        (also past the token previews it did not ask for)."""
        events, end = self.threads.events.live_events(thread_id, start, upto_seq)
        return [
            StreamItem("event", event, stored=False) for event in events if previews or "stored_as" not in event
        ], end
