"""Threads (their records) and the leases that say which process drives one, in SQLite or
PostgreSQL (agent_core/storage/database.py). A thread's events are its EventLog's
(agent_core/storage/event_log.py), `ThreadStore.events`, over the same database: the store opens
and closes it for both.

A store belongs to one owner, the user its server (or kernel) runs for: it creates threads as
theirs, and finds, lists, updates and deletes only theirs. Another owner's thread is, to it, a
thread that does not exist: every route that looks a thread up answers 404 for it."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from agent_core.config.database_url import DATABASE_TIMEOUT
from agent_core.json_types import JsonObject
from agent_core.storage.database import Connection, LeaseTake, open_database
from agent_core.storage.event_log import EventLog
from agent_core.storage.process_names import has_ended, new_process_name
from agent_core.storage.request_log import RequestLog

# The columns of a ThreadRecord, in its order (the owner is the store's: not in the record).
RECORD_COLUMNS = "thread_id, title, notebook_path, created_at, updated_at, status, last_run_id, kernel_id, agent"

ThreadStatus = str  # "idle" | "running" | "awaiting_approval" | "completed" | "cancelled" | "failed"

# Renewed every third of it while a run goes on. A crashed holder's lease expires, or is taken over
# at once by a process of the same machine that sees the holder has ended (process_names.py).
LEASE_SECONDS = 30.0


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
    agent: str = ""  # "" for Cellwright's own agent, else an ACP agent's name (c.Cellwright.acp_agents)

    def public(self) -> JsonObject:
        data = asdict(self)
        del data["last_run_id"], data["kernel_id"]
        data["agent"] = self.agent or "cellwright"
        return data


class ThreadStore:
    """Every database call is one function run on the database's own thread(s): one hop per read or
    write transaction, not one per statement, fetch and commit (each hop wakes the event loop)."""

    def __init__(
        self,
        path: Path,
        *,
        owner: str,
        holder: str = "another process",
        database_url: str = "",
        pool_size: int = 2,
        pool_timeout: float = DATABASE_TIMEOUT,
    ) -> None:
        self._path = path
        self.owner = owner  # the user whose threads these are (c.Cellwright.owner)
        self.process = new_process_name()  # this process's name on the leases it holds
        self.database = open_database(database_url, path, self.process, owner, pool_size, pool_timeout)
        self.holder = holder  # ... and how a refusal names it to the user
        # The threads' events, over the same database: the log keeps a leased thread's recent
        # events in memory, so leases and deletes below tell it (leased, released, deleted).
        self.events = EventLog(self.database)
        self.requests = RequestLog(self.database)  # what reached the model, per thread

    @property
    def is_open(self) -> bool:
        return self.database.is_open

    async def _write(self, fn: Callable[[Connection], Any], quick: bool = False) -> Any:
        """`fn` inside one write transaction (other processes share the store). `quick`: a few rows
        by key (Database.write)."""
        return await self.database.write(fn, quick)

    async def _rows(self, sql: str, params: tuple[Any, ...], quick: bool = False) -> list[tuple[Any, ...]]:
        return await self.database.call(lambda conn: conn.execute(sql, params).fetchall(), quick)

    async def open(self) -> None:
        await self.database.open(self.events.notified)

    async def close(self) -> None:
        await self.database.close()

    async def create(self, notebook_path: str, title: str, agent: str = "") -> ThreadRecord:
        now = time.time()
        record = ThreadRecord(uuid.uuid4().hex, title, notebook_path, now, now, "idle", agent=agent)
        row = (record.thread_id, title, notebook_path, now, now, record.status, "", "", agent, self.owner)
        await self.database.write_one(
            f"INSERT INTO threads ({RECORD_COLUMNS}, owner) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", row, quick=True
        )
        return record

    async def get(self, thread_id: str) -> ThreadRecord | None:
        """The owner's thread `thread_id`; None when there is none, or it is another owner's."""
        rows = await self._rows(
            f"SELECT {RECORD_COLUMNS} FROM threads WHERE thread_id = ? AND owner = ?",
            (thread_id, self.owner),
            quick=True,
        )
        return ThreadRecord(*rows[0]) if rows else None

    async def for_notebook(self, notebook_path: str) -> list[ThreadRecord]:
        """The owner's threads of `notebook_path`, oldest first (the order their cells ran in)."""
        rows = await self._rows(
            f"SELECT {RECORD_COLUMNS} FROM threads WHERE owner = ? AND notebook_path = ? ORDER BY created_at",
            (self.owner, notebook_path),
        )
        return [ThreadRecord(*row) for row in rows]

    async def list(self) -> list[ThreadRecord]:
        """The owner's threads, newest first."""
        rows = await self._rows(
            f"SELECT {RECORD_COLUMNS} FROM threads WHERE owner = ? ORDER BY updated_at DESC", (self.owner,)
        )
        return [ThreadRecord(*row) for row in rows]

    def _update_sql(self, thread_id: str, fields: dict[str, str]) -> tuple[str, tuple[Any, ...]]:
        allowed = {"title", "notebook_path", "status", "last_run_id", "kernel_id"}
        if not fields.keys() <= allowed:
            raise ValueError(f"cannot update {sorted(fields.keys() - allowed)}")
        assignments = ", ".join(f"{name} = ?" for name in fields)
        return f"UPDATE threads SET {assignments}, updated_at = ? WHERE thread_id = ? AND owner = ?", (
            *fields.values(),
            time.time(),
            thread_id,
            self.owner,
        )

    async def update(self, thread_id: str, **fields: str) -> None:
        await self.database.write_one(*self._update_sql(thread_id, fields), quick=True)

    async def delete(self, thread_id: str) -> None:
        def delete(conn: Connection) -> None:
            deleted = conn.execute("DELETE FROM threads WHERE thread_id = ? AND owner = ?", (thread_id, self.owner))
            if deleted.rowcount:  # never another owner's events
                conn.execute("DELETE FROM events WHERE thread_id = ?", (thread_id,))
                RequestLog.delete_in(conn, thread_id)
                self.database.notify(conn, {thread_id})

        await self._write(delete)
        self.events.deleted(thread_id)

    def _clear_ended_holder(self, conn: Connection, thread_id: str) -> bool:
        """Drop the lease of a holder that has ended (this machine's process, killed or crashed);
        whether there was one. Only after a refused take, so the hot path stays one call."""
        rows = conn.execute("SELECT owner FROM leases WHERE thread_id = ?", (thread_id,)).fetchall()
        if not rows or not has_ended(rows[0][0]):
            return False
        conn.execute("DELETE FROM leases WHERE thread_id = ? AND owner = ?", (thread_id, rows[0][0]))
        return True

    async def _take(self, thread_id: str, status: str | None = None, run_id: str = "") -> bool:
        now = time.time()
        take = LeaseTake(thread_id, self.process, self.holder, now, now + LEASE_SECONDS, self.owner, status, run_id)
        last_seq = await self.database.take_lease(take)
        if last_seq is None and await self._write(lambda conn: self._clear_ended_holder(conn, thread_id), True):
            last_seq = await self.database.take_lease(take)  # another process may have taken it meanwhile
        return self.events.leased(thread_id, last_seq)

    async def take_lease(self, thread_id: str) -> bool:
        """Take (or renew) the right to drive `thread_id`; False while another process holds it."""
        return await self._take(thread_id)

    async def begin_run(self, thread_id: str, *, status: str, last_run_id: str) -> bool:
        """Take the lease and set the thread's status and last run in one transaction (the hot path
        of a run's start); False, and nothing updated, while another process holds the lease."""
        return await self._take(thread_id, status, last_run_id)

    def keep_lease(self, thread_id: str) -> asyncio.Task[None]:
        """Renew the lease on `thread_id` a few times per LEASE_SECONDS until the task is cancelled
        (while a run, or an outside agent's turn, goes on)."""

        async def renew() -> None:
            while True:
                await asyncio.sleep(LEASE_SECONDS / 3)
                await self.take_lease(thread_id)

        return asyncio.create_task(renew())

    async def release_lease(self, thread_id: str) -> None:
        self.events.released(thread_id)

        def release(conn: Connection) -> None:
            conn.execute("DELETE FROM leases WHERE thread_id = ? AND owner = ?", (thread_id, self.process))
            self.database.notify(conn, {thread_id})  # readers elsewhere follow a run until its lease goes

        await self._write(release, quick=True)

    async def leased_elsewhere(self, thread_id: str) -> str | None:
        """Who else drives `thread_id` right now (in words), or None."""
        rows = await self._rows(
            "SELECT holder, owner FROM leases WHERE thread_id = ? AND owner != ? AND until >= ?",
            (thread_id, self.process, time.time()),
            quick=True,
        )
        if not rows or has_ended(rows[0][1]):
            return None
        return rows[0][0] or "another process"
