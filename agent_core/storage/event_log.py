"""The threads' append-only event logs, in the database of agent_core/storage/database.py: appends
(batched into shared transactions), replay (events_after), the live-only log beside it, and the
readers waiting for what comes next. The threads themselves, and who drives them, are
agent_core/storage/thread_store.py's; its ThreadStore opens and closes the database both use.

Every event gets the thread's next sequence number (never reused, also across restarts), so a
client that reconnects with the last seq it saw gets every later event once, in order."""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from agent_core import fast_json
from agent_core.json_types import JsonObject
from agent_core.storage.database import Database, event_data, max_seq_in

LIVE_EVENTS_KEPT = 2000  # per thread: live-only events a slow reader may still catch up on
TICK_SECONDS = 1.0  # how often waiting readers look again without being woken (other processes on SQLite)
QUICK_BATCH = 16  # appends written at once on the loop's connection when SQLite can (Database.write): a few rows
RECENT_EVENTS_KEPT, RECENT_BYTES_KEPT = 4096, 4 * 1024 * 1024  # per leased thread: events its readers get from memory

EventObserver = Callable[[str, JsonObject], None]
_Append = tuple[str, Mapping[str, object], "asyncio.Future[JsonObject]"]  # thread, event to store, its stored row
logger = logging.getLogger(__name__)


def seq_of(event: JsonObject) -> int:
    """The sequence number the log stamped on a stored event."""
    seq = event.get("seq")
    if not isinstance(seq, int):
        raise ValueError(f"a {event.get('type')!r} event without the seq the log gives every stored event")
    return seq


@dataclass
class _LiveLog:
    """Events streamed to this process's readers but not stored (a cell's output beyond its stored
    cap). Each is anchored to the last stored seq before it, so readers interleave them in order."""

    entries: deque[tuple[int, int, JsonObject]] = field(default_factory=lambda: deque(maxlen=LIVE_EVENTS_KEPT))
    next_index: int = 0


@dataclass
class _Recent:
    """The last stored events of a thread, contiguous in seq, bounded in count and bytes."""

    events: deque[JsonObject] = field(default_factory=deque)
    sizes: deque[int] = field(default_factory=deque)
    bytes: int = 0

    def add(self, event: JsonObject, size: int) -> None:
        self.events.append(event)
        self.sizes.append(size)
        self.bytes += size
        while len(self.events) > RECENT_EVENTS_KEPT or (self.bytes > RECENT_BYTES_KEPT and len(self.events) > 1):
            self.events.popleft()
            self.bytes -= self.sizes.popleft()

    def after(self, seq: int, limit: int) -> list[JsonObject] | None:
        """The events after `seq` (None if memory does not reach back that far)."""
        if not self.events or seq_of(self.events[0]) > seq + 1:
            return None
        start = seq + 1 - seq_of(self.events[0])
        # By index: a live reader asks for the newest few, which a deque reaches from its end;
        # islice would walk every kept event before them, once per token for every reader.
        return [self.events[i] for i in range(start, min(len(self.events), start + limit))]


class EventLog:
    """Every database call is one function run on the database's own thread(s): one hop per read or
    write transaction, not one per statement, fetch and commit (each hop wakes the event loop).

    The database is opened and closed by the ThreadStore that made this log (with `notified` as
    its callback for other processes' writes)."""

    def __init__(self, database: Database) -> None:
        self.database = database
        self._waiting: dict[str, set[asyncio.Future[object]]] = {}  # per thread, one future per waiting reader
        self._live: dict[str, _LiveLog] = {}
        self._last_seq: dict[str, int] = {}
        self._preview_readers: dict[str, int] = {}  # token previews are made only while someone reads them
        # While a run coalesces a row of tokens: what shows the row's tokens so far to a reader that
        # starts reading previews now (issue 41: it saw them only once the row was stored, <= 50 ms on).
        self._preview_catch_up: dict[str, Callable[[], None]] = {}
        # While this process holds a thread's lease it is the thread's only writer, so its recent
        # appends (contiguous seqs up to _last_seq) answer its readers without a query.
        self._recent: dict[str, _Recent] = {}
        self._appends: list[_Append] = []  # waiting for the next transaction
        self._appending = False  # a task is writing them
        self._ticking: set[asyncio.Future[object]] = set()  # every waiting reader's future, for the next tick
        self._tick: asyncio.TimerHandle | None = None
        self._observers: list[EventObserver] = []

    def observe(self, observer: EventObserver) -> None:
        """Call `observer(thread_id, event)` with every event this process stores or streams live
        (token previews aside), in the order readers get them: e.g. the writer of agent cells into
        a shared notebook document. Called synchronously; it must not block, and what it raises is
        not the appender's problem."""
        self._observers.append(observer)

    def _tell_observers(self, thread_id: str, event: JsonObject) -> None:
        for observer in self._observers:
            try:
                observer(thread_id, event)
            except Exception:  # an observer's bug must not fail an append every reader waits for
                logger.exception("An event observer failed on a %s event", event.get("type"))

    @property
    def notifies(self) -> bool:
        """Other processes' appends wake this one's readers at once (else at their next poll)."""
        return self.database.notifies

    def notified(self, thread_id: str | None) -> None:
        """Another process wrote to `thread_id` (None: perhaps to any, after a reconnect)."""
        for woken in [thread_id] if thread_id is not None else list(self._waiting):
            self.wake(woken)

    # What the ThreadStore tells the log about leases and deletes.

    def leased(self, thread_id: str, last_seq: int | None) -> bool:
        """The lease on `thread_id` was taken with the thread's last seq, or not (None): while this
        process holds it, its appends are the thread's only ones and are kept for its readers."""
        if last_seq is None:
            self._recent.pop(thread_id, None)
            return False
        if thread_id not in self._recent or self._last_seq.get(thread_id) != last_seq:
            self._recent[thread_id] = _Recent()
            self._last_seq[thread_id] = last_seq
        return True

    def released(self, thread_id: str) -> None:
        """The lease goes: others may append from now on, so memory no longer answers readers."""
        self._recent.pop(thread_id, None)

    def deleted(self, thread_id: str) -> None:
        """The thread and its rows are gone: forget it, and let its readers see so."""
        self._recent.pop(thread_id, None)
        self._last_seq.pop(thread_id, None)
        self.forget_live(thread_id)
        self.wake(thread_id)

    async def append(self, thread_id: str, event: Mapping[str, object]) -> JsonObject:
        """Stamp `event` with the thread's next seq, persist it and wake the readers. The seq is read
        inside the write transaction: the server and a kernel's `%agent` may append to one thread.
        Appends that arrive while a transaction is being written share the next one (a group
        commit): a hundred streaming threads cost a few commits per wake-up, not one per row."""
        return await self._enqueue(thread_id, event)

    async def append_all(self, thread_id: str, events: Sequence[Mapping[str, object]]) -> list[JsonObject]:
        """`append` for several events at once, in order: they share the writer's next transactions
        instead of one commit each (a forked thread's copied log)."""
        return list(await asyncio.gather(*[self._enqueue(thread_id, event) for event in events]))

    def _enqueue(self, thread_id: str, event: Mapping[str, object]) -> asyncio.Future[JsonObject]:
        """Queue `event` for the writer, in call order; the future of its stored row."""
        done: asyncio.Future[JsonObject] = asyncio.get_running_loop().create_future()
        self._appends.append((thread_id, event, done))
        if not self._appending:
            self._appending = True
            asyncio.create_task(self._write_appends())
        return done

    async def _write_appends(self) -> None:
        try:
            while self._appends:
                batch, self._appends = self._appends, []
                bodies = [_body(thread_id, event) for thread_id, event, _ in batch]
                rows = [
                    (thread_id, body)
                    for (thread_id, _, _), body in zip(batch, bodies, strict=True)
                    if isinstance(body, str)
                ]
                try:
                    seqs = await self.database.append_events(rows, quick=len(rows) <= QUICK_BATCH) if rows else []
                except BaseException as exc:  # the transaction failed: every append in it did
                    for _, _, done in batch:
                        if not done.done():
                            done.set_exception(exc)
                    if isinstance(exc, asyncio.CancelledError):
                        raise
                    continue
                stored = iter(seqs)
                for (thread_id, _, done), body in zip(batch, bodies, strict=True):
                    # Rows are noted here, in commit order, even for an appender that was cancelled meanwhile.
                    if isinstance(body, str):
                        seq = next(stored)
                        outcome: JsonObject | Exception = self._stored(thread_id, seq, event_data(seq, body))
                    else:
                        outcome = body
                    if done.done():
                        continue
                    if isinstance(outcome, Exception):
                        done.set_exception(outcome)
                    else:
                        done.set_result(outcome)
        finally:
            self._appending = False
            if self._appends:  # the writer was cancelled (the loop is ending): nothing will write these
                for _, _, done in self._appends:
                    done.cancel()
                self._appends = []

    def _stored(self, thread_id: str, seq: int, data: str) -> JsonObject:
        """Note a committed row (memory for readers, the last seq) and wake the readers."""
        stamped = fast_json.loads(data)  # what a reader of the log gets (tuples as lists), also from memory
        recent = self._recent.get(thread_id)
        if recent is not None:
            if self._last_seq.get(thread_id) != seq - 1:
                recent = self._recent[thread_id] = _Recent()  # someone else wrote (our lease lapsed): start again here
            recent.add(stamped, len(data))
        self._last_seq[thread_id] = seq
        self.wake(thread_id)
        self._tell_observers(thread_id, stamped)
        return stamped

    def wants_previews(self, thread_id: str) -> bool:
        return self._preview_readers.get(thread_id, 0) > 0

    def reading_previews(self, thread_id: str, delta: int) -> None:
        count = self._preview_readers.get(thread_id, 0) + delta
        if count > 0:
            self._preview_readers[thread_id] = count
        else:
            self._preview_readers.pop(thread_id, None)
        if delta > 0 and (catch_up := self._preview_catch_up.get(thread_id)) is not None:
            catch_up()  # before the reader takes its place in the live log: it reads them

    def coalescing(self, thread_id: str, catch_up: Callable[[], None] | None) -> None:
        """Set (None: clear) what shows the tokens of the row being coalesced to a new preview reader."""
        if catch_up is None:
            self._preview_catch_up.pop(thread_id, None)
        else:
            self._preview_catch_up[thread_id] = catch_up

    def last_stored(self, thread_id: str) -> int:
        """The last seq this process stored for the thread (0 if none yet)."""
        return self._last_seq.get(thread_id, 0)

    def publish_live(self, thread_id: str, event: Mapping[str, object]) -> None:
        """Stream `event` to this process's readers without storing it (no seq)."""
        log = self._live.setdefault(thread_id, _LiveLog())
        anchor = self._last_seq.get(thread_id, 0)
        log.entries.append((log.next_index, anchor, {**event, "thread_id": thread_id}))
        log.next_index += 1
        self.wake(thread_id)
        if "stored_as" not in event:  # a token preview: its stored row comes too
            self._tell_observers(thread_id, {**event, "thread_id": thread_id})

    def live_start(self, thread_id: str, after: int) -> int:
        """Where a reader that starts after stored seq `after` begins in the live log."""
        log = self._live.get(thread_id)
        if log is None:
            return 0
        return next((index for index, anchor, _ in log.entries if anchor >= after), log.next_index)

    def live_events(self, thread_id: str, start: int, upto_seq: int) -> tuple[list[JsonObject], int]:
        """Live events from index `start` anchored at or before `upto_seq`, and the next index."""
        log = self._live.get(thread_id)
        if log is None:
            return [], start
        found = []
        entries = log.entries
        first = entries[0][0] if entries else log.next_index
        # By index, not islice: islice would walk the skipped head (up to LIVE_EVENTS_KEPT entries)
        # on every call, and a reader calls once per token; a deque's tail is reached from its end.
        for position in range(max(0, start - first), len(entries)):
            index, anchor, event = entries[position]
            if anchor > upto_seq:
                break
            found.append(event)
            start = index + 1
        return found, start

    def has_live_after(self, thread_id: str, start: int) -> bool:
        log = self._live.get(thread_id)
        return log is not None and log.next_index > start

    def forget_live(self, thread_id: str) -> None:
        self._live.pop(thread_id, None)

    async def events_after(self, thread_id: str, after: int, limit: int = 1000) -> list[JsonObject]:
        recent = self._recent.get(thread_id)
        if recent is not None:
            last = self._last_seq[thread_id]
            if after >= last:
                return []
            found = recent.after(after, limit)
            if found is not None:
                return found
        rows = await self.database.call(
            lambda conn: conn.execute(
                "SELECT data FROM events WHERE thread_id = ? AND seq > ? ORDER BY seq LIMIT ?",
                (thread_id, after, limit),
            ).fetchall()
        )
        return [fast_json.loads(row[0]) for row in rows]

    async def wait_for_events(
        self,
        thread_id: str,
        after: int,
        timeout: float,
        still: Callable[[], bool] = lambda: True,
        live_start: int | None = None,
    ) -> None:
        """Return when the thread has an event after `after`, when `still()` turns false (woken by
        `wake`, e.g. when its run ends), or after about `timeout` seconds. Events another process
        appends wake this one's readers at once on PostgreSQL (NOTIFY); on SQLite they are seen
        within a tick (TICK_SECONDS)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            # Each reader awaits a future of its own, registered before checking (no lost wake-up):
            # a shared one would need asyncio.wait or a shield per wait, once per token per reader.
            woken: asyncio.Future[object] = loop.create_future()
            self._waiting.setdefault(thread_id, set()).add(woken)
            try:
                if await self._max_seq(thread_id) > after or not still():
                    return
                if live_start is not None and self.has_live_after(thread_id, live_start):
                    return
                if loop.time() >= deadline:
                    return
                self._ticking.add(woken)
                if self._tick is None:
                    self._tick = loop.call_later(TICK_SECONDS, self._tick_over)
                await woken
            finally:
                self._stop_waiting(thread_id, woken)
            if woken.result() is not _TICK:
                return

    def _tick_over(self) -> None:
        """Every waiting reader looks again (another process may have appended, or its time is up)."""
        self._tick = None
        ticking, self._ticking = self._ticking, set()
        for future in ticking:
            if not future.done():
                future.set_result(_TICK)

    def _stop_waiting(self, thread_id: str, future: asyncio.Future[object]) -> None:
        self._ticking.discard(future)
        waiting = self._waiting.get(thread_id)
        if waiting is not None:
            waiting.discard(future)
            if not waiting:
                del self._waiting[thread_id]

    def wake(self, thread_id: str) -> None:
        """Wake this process's readers of the thread (new events, or a run that ended)."""
        for future in self._waiting.pop(thread_id, ()):
            if not future.done():
                future.set_result(None)

    async def last_seq(self, thread_id: str) -> int:
        """The thread's last stored seq, whichever process stored it (0 if none)."""
        return await self._max_seq(thread_id)

    async def _max_seq(self, thread_id: str) -> int:
        if thread_id in self._recent:
            return self._last_seq[thread_id]
        return await self.database.call(lambda conn: max_seq_in(conn, thread_id), quick=True)


_TICK = object()  # a waiting reader's future resolved by the tick, not by new events


def _body(thread_id: str, event: Mapping[str, object]) -> str | Exception:
    """`event` as stored but for its seq (Database.append_events puts it in), or why this one event
    cannot be (it is not JSON): the other appends of the batch still go in."""
    try:
        stored = {key: value for key, value in event.items() if key != "seq"}
        stored["thread_id"] = thread_id
        return fast_json.dumps(stored)
    except (TypeError, ValueError) as exc:
        return exc
