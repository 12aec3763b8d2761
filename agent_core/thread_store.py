"""Threads and their append-only event logs, in SQLite.

Every event gets the thread's next sequence number (never reused, also across restarts), so a
client that reconnects with the last seq it saw gets every later event once, in order."""
from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections import deque
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from .private_storage import private_file

ThreadStatus = str  # "idle" | "running" | "awaiting_approval" | "completed" | "cancelled" | "failed"

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS threads ("
    " thread_id TEXT PRIMARY KEY, title TEXT NOT NULL, notebook_path TEXT NOT NULL,"
    " created_at REAL NOT NULL, updated_at REAL NOT NULL, status TEXT NOT NULL,"
    " last_run_id TEXT NOT NULL DEFAULT '', kernel_id TEXT NOT NULL DEFAULT '')",
    "CREATE TABLE IF NOT EXISTS events ("
    " thread_id TEXT NOT NULL, seq INTEGER NOT NULL, data TEXT NOT NULL, PRIMARY KEY (thread_id, seq))",
    # Which process drives a thread right now: the server and kernels (%agent) share the store.
    "CREATE TABLE IF NOT EXISTS leases (thread_id TEXT PRIMARY KEY, owner TEXT NOT NULL, until REAL NOT NULL)",
)
# Who holds a lease, in words, so a refused Stop can say who runs the thread (added after the first release).
MIGRATIONS = ("ALTER TABLE leases ADD COLUMN holder TEXT NOT NULL DEFAULT ''",)
LEASE_SECONDS = 30.0  # renewed every third of it while a run goes on; a crashed owner's lease expires
LIVE_EVENTS_KEPT = 2000  # per thread: live-only events a slow reader may still catch up on


@dataclass
class _LiveLog:
    """Events streamed to this process's readers but not stored (a cell's output beyond its stored
    cap). Each is anchored to the last stored seq before it, so readers interleave them in order."""

    entries: deque[tuple[int, int, dict[str, Any]]] = field(default_factory=lambda: deque(maxlen=LIVE_EVENTS_KEPT))
    next_index: int = 0


@dataclass
class ThreadRecord:
    thread_id: str
    title: str
    notebook_path: str
    created_at: float
    updated_at: float
    status: ThreadStatus
    last_run_id: str = ""
    kernel_id: str = ""

    def public(self) -> dict[str, Any]:
        data = asdict(self)
        del data["last_run_id"], data["kernel_id"]
        return data


class ThreadStore:
    def __init__(self, path: Path, holder: str = "another process") -> None:
        self._path = path
        self._conn: Any = None
        self._wakeups: dict[str, asyncio.Event] = {}
        self._write_lock = asyncio.Lock()  # one write transaction at a time on this connection
        self.owner = uuid.uuid4().hex  # this process's name on the leases it holds
        self.holder = holder  # ... and how a refusal names it to the user
        self._live: dict[str, _LiveLog] = {}
        self._last_seq: dict[str, int] = {}

    @property
    def is_open(self) -> bool:
        return self._conn is not None

    async def open(self) -> None:
        import aiosqlite

        private_file(self._path)
        self._conn = await aiosqlite.connect(str(self._path))
        await self._conn.execute("PRAGMA journal_mode=WAL")
        # WAL + NORMAL: no fsync per commit (one per checkpoint of the WAL); survives a crash of the process.
        await self._conn.execute("PRAGMA synchronous=NORMAL")
        for statement in SCHEMA:
            await self._conn.execute(statement)
        async with self._conn.execute("PRAGMA table_info(leases)") as cursor:
            lease_columns = {row[1] for row in await cursor.fetchall()}
        if "holder" not in lease_columns:
            for statement in MIGRATIONS:
                await self._conn.execute(statement)
        await self._conn.commit()

    async def close(self) -> None:
        if self._conn is not None:
            await self._conn.close()
            self._conn = None

    async def create(self, notebook_path: str, title: str) -> ThreadRecord:
        now = time.time()
        record = ThreadRecord(uuid.uuid4().hex, title, notebook_path, now, now, "idle")
        async with self._write_lock:
            await self._conn.execute(
                "INSERT INTO threads VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (record.thread_id, record.title, record.notebook_path, now, now, record.status, "", ""),
            )
            await self._conn.commit()
        return record

    async def get(self, thread_id: str) -> ThreadRecord | None:
        async with self._conn.execute("SELECT * FROM threads WHERE thread_id = ?", (thread_id,)) as cursor:
            row = await cursor.fetchone()
        return ThreadRecord(*row) if row else None

    async def list(self) -> list[ThreadRecord]:
        async with self._conn.execute("SELECT * FROM threads ORDER BY updated_at DESC") as cursor:
            return [ThreadRecord(*row) for row in await cursor.fetchall()]

    async def update(self, thread_id: str, **fields: str) -> None:
        allowed = {"title", "notebook_path", "status", "last_run_id", "kernel_id"}
        if not fields.keys() <= allowed:
            raise ValueError(f"cannot update {sorted(fields.keys() - allowed)}")
        assignments = ", ".join(f"{name} = ?" for name in fields)
        async with self._write_lock:
            await self._conn.execute(
                f"UPDATE threads SET {assignments}, updated_at = ? WHERE thread_id = ?",
                (*fields.values(), time.time(), thread_id),
            )
            await self._conn.commit()

    async def delete(self, thread_id: str) -> None:
        async with self._write_lock:
            await self._conn.execute("DELETE FROM threads WHERE thread_id = ?", (thread_id,))
            await self._conn.execute("DELETE FROM events WHERE thread_id = ?", (thread_id,))
            await self._conn.commit()
        self.forget_live(thread_id)
        self.wake(thread_id)

    async def take_lease(self, thread_id: str) -> bool:
        """Take (or renew) the right to drive `thread_id`; False while another process holds it."""
        now = time.time()
        async with self._write_lock:
            cursor = await self._conn.execute(
                "INSERT INTO leases (thread_id, owner, until, holder) VALUES (?, ?, ?, ?) ON CONFLICT (thread_id) DO UPDATE"
                " SET owner = excluded.owner, until = excluded.until, holder = excluded.holder"
                " WHERE leases.owner = excluded.owner OR leases.until < ?",
                (thread_id, self.owner, now + LEASE_SECONDS, self.holder, now),
            )
            await self._conn.commit()
        return cursor.rowcount == 1

    async def release_lease(self, thread_id: str) -> None:
        async with self._write_lock:
            await self._conn.execute("DELETE FROM leases WHERE thread_id = ? AND owner = ?", (thread_id, self.owner))
            await self._conn.commit()

    async def leased_elsewhere(self, thread_id: str) -> str | None:
        """Who else drives `thread_id` right now (in words), or None."""
        async with self._conn.execute(
            "SELECT holder FROM leases WHERE thread_id = ? AND owner != ? AND until >= ?", (thread_id, self.owner, time.time())
        ) as cursor:
            row = await cursor.fetchone()
        return None if row is None else (row[0] or "another process")

    async def append(self, thread_id: str, event: dict[str, Any]) -> dict[str, Any]:
        """Stamp `event` with the thread's next seq, persist it and wake the readers. The seq is read
        inside a write transaction: the server and a kernel's `%agent` may append to one thread."""
        async with self._write_lock:
            await self._conn.execute("BEGIN IMMEDIATE")
            try:
                seq = await self._max_seq(thread_id) + 1
                stamped = {**event, "seq": seq, "thread_id": thread_id}
                await self._conn.execute(
                    "INSERT INTO events (thread_id, seq, data) VALUES (?, ?, ?)", (thread_id, seq, json.dumps(stamped))
                )
                await self._conn.commit()
            except BaseException:
                await self._conn.rollback()
                raise
        self._last_seq[thread_id] = seq
        self.wake(thread_id)
        return stamped

    def publish_live(self, thread_id: str, event: dict[str, Any]) -> None:
        """Stream `event` to this process's readers without storing it (no seq)."""
        log = self._live.setdefault(thread_id, _LiveLog())
        anchor = self._last_seq.get(thread_id, 0)
        log.entries.append((log.next_index, anchor, {**event, "thread_id": thread_id}))
        log.next_index += 1
        self.wake(thread_id)

    def live_start(self, thread_id: str, after: int) -> int:
        """Where a reader that starts after stored seq `after` begins in the live log."""
        log = self._live.get(thread_id)
        if log is None:
            return 0
        return next((index for index, anchor, _ in log.entries if anchor >= after), log.next_index)

    def live_events(self, thread_id: str, start: int, upto_seq: int) -> tuple[list[dict[str, Any]], int]:
        """Live events from index `start` anchored at or before `upto_seq`, and the next index."""
        log = self._live.get(thread_id)
        if log is None:
            return [], start
        found = []
        for index, anchor, event in log.entries:
            if index < start:
                continue
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

    async def events_after(self, thread_id: str, after: int, limit: int = 1000) -> list[dict[str, Any]]:
        async with self._conn.execute(
            "SELECT data FROM events WHERE thread_id = ? AND seq > ? ORDER BY seq LIMIT ?", (thread_id, after, limit)
        ) as cursor:
            return [json.loads(row[0]) for row in await cursor.fetchall()]

    async def wait_for_events(
        self, thread_id: str, after: int, timeout: float, still: Callable[[], bool] = lambda: True, live_start: int | None = None
    ) -> None:
        """Return when the thread has an event after `after`, when `still()` turns false (woken by
        `wake`, e.g. when its run ends), or after `timeout` seconds. Events another process appends
        are seen at the next call; the SSE handler calls at least every 15 s."""
        wakeup = self._wakeups.setdefault(thread_id, asyncio.Event())  # registered before checking: no lost wake-up
        if await self._max_seq(thread_id) > after or not still():
            return
        if live_start is not None and self.has_live_after(thread_id, live_start):
            return
        try:
            await asyncio.wait_for(wakeup.wait(), timeout)
        except asyncio.TimeoutError:
            pass

    def wake(self, thread_id: str) -> None:
        """Wake this process's readers of the thread (new events, or a run that ended)."""
        wakeup = self._wakeups.pop(thread_id, None)
        if wakeup is not None:
            wakeup.set()

    async def _max_seq(self, thread_id: str) -> int:
        async with self._conn.execute("SELECT MAX(seq) FROM events WHERE thread_id = ?", (thread_id,)) as cursor:
            row = await cursor.fetchone()
        return row[0] or 0
