"""Records which tool calls ran and what they returned, outside the graph state, so a call id runs
at most once: a node re-run after a resume, a cancel or a crash returns the recorded result."""

from __future__ import annotations

import json
from dataclasses import asdict, replace
from typing import Any, Protocol

from agent_core.output_digest import bounded
from agent_core.storage.loop_connection import WOULD_WAIT, LoopConnection, read_at_once, writing
from agent_core.tools.base import ToolOutcome

INTERRUPTED = ToolOutcome(
    "error",
    "This call started earlier but was interrupted before it finished (cancelled or the server stopped); "
    "it was not run again. Check its effects before retrying.",
)

STOPPED = ToolOutcome(
    "rejected",
    "The user stopped the run: this call did not run, or was stopped before it finished.",
    summary="Stopped by the user",
)


class ToolLedger(Protocol):
    async def started(self, thread_id: str, call_id: str) -> None: ...
    async def finished(self, thread_id: str, call_id: str, outcome: ToolOutcome) -> None: ...
    async def lookup(self, thread_id: str, call_id: str) -> ToolOutcome | None:
        """The recorded outcome; INTERRUPTED for a call that started and never finished; None if new."""
        ...


RECORDED_CHARS = 2000


def _dump(outcome: ToolOutcome) -> str:
    # Only read back when a step is re-run before its result was checkpointed (a crash, a stop): a
    # bounded copy is enough there, and a full one would double the thread's storage.
    recorded = replace(
        outcome,
        content=bounded(outcome.content, RECORDED_CHARS),
        summary=outcome.display_summary,
        images=(),
        preimage=None,
        event={},  # the panel's fields went out with the first result
    )
    return json.dumps(asdict(recorded))


def _load(raw: str) -> ToolOutcome:
    data: dict[str, Any] = json.loads(raw)
    return ToolOutcome(**data)


class MemoryToolLedger:
    def __init__(self) -> None:
        self._rows: dict[tuple[str, str], str | None] = {}

    async def started(self, thread_id: str, call_id: str) -> None:
        self._rows.setdefault((thread_id, call_id), None)

    async def finished(self, thread_id: str, call_id: str, outcome: ToolOutcome) -> None:
        self._rows[(thread_id, call_id)] = _dump(outcome)

    async def lookup(self, thread_id: str, call_id: str) -> ToolOutcome | None:
        if (thread_id, call_id) not in self._rows:
            return None
        raw = self._rows[(thread_id, call_id)]
        return INTERRUPTED if raw is None else _load(raw)


class SqliteToolLedger:
    """Shares the checkpointer's aiosqlite connection (one file, one writer), and its connection on
    the loop's thread for the lookup before every approved cell (issue 41)."""

    def __init__(self, conn: Any, loop_connection: LoopConnection | None = None) -> None:
        self._conn = conn
        self._loop = loop_connection

    async def setup(self) -> None:
        await self._conn.execute(
            "CREATE TABLE IF NOT EXISTS cellwright_tool_runs ("
            " thread_id TEXT NOT NULL, call_id TEXT NOT NULL, outcome TEXT,"
            " PRIMARY KEY (thread_id, call_id))"
        )
        await self._conn.commit()

    async def started(self, thread_id: str, call_id: str) -> None:
        sql = "INSERT OR IGNORE INTO cellwright_tool_runs (thread_id, call_id, outcome) VALUES (?, ?, NULL)"
        # Before every approved cell: at once on the loop's connection unless a save holds the lock.
        if (
            self._loop is not None
            and self._loop.write_at_once(lambda conn: conn.execute(sql, (thread_id, call_id))) is not WOULD_WAIT
        ):
            return
        with writing(self._loop):
            await self._conn.execute(sql, (thread_id, call_id))
            await self._conn.commit()

    async def finished(self, thread_id: str, call_id: str, outcome: ToolOutcome) -> None:
        with writing(self._loop):
            await self._conn.execute(
                "INSERT OR REPLACE INTO cellwright_tool_runs (thread_id, call_id, outcome) VALUES (?, ?, ?)",
                (thread_id, call_id, _dump(outcome)),
            )
            await self._conn.commit()

    async def lookup(self, thread_id: str, call_id: str) -> ToolOutcome | None:
        sql = "SELECT outcome FROM cellwright_tool_runs WHERE thread_id = ? AND call_id = ?"
        rows = read_at_once(self._loop, lambda conn: conn.execute(sql, (thread_id, call_id)).fetchall())
        if rows is WOULD_WAIT:  # one hop to the connection's thread
            rows = list(await self._conn.execute_fetchall(sql, (thread_id, call_id)))
        if not rows:
            return None
        return INTERRUPTED if rows[0][0] is None else _load(rows[0][0])

    async def forget_thread(self, thread_id: str) -> None:
        with writing(self._loop):
            await self._conn.execute("DELETE FROM cellwright_tool_runs WHERE thread_id = ?", (thread_id,))
            await self._conn.commit()


class DatabaseToolLedger:
    """The ledger in the thread store's database (agent_core/storage/database.py), where it must be shared:
    on PostgreSQL, a call id runs at most once across servers and restarts."""

    def __init__(self, database: Any) -> None:
        self._db = database

    async def started(self, thread_id: str, call_id: str) -> None:
        sql = "INSERT INTO tool_runs (thread_id, call_id, outcome) VALUES (?, ?, NULL) ON CONFLICT DO NOTHING"
        await self._db.write_one(sql, (thread_id, call_id))

    async def finished(self, thread_id: str, call_id: str, outcome: ToolOutcome) -> None:
        sql = (
            "INSERT INTO tool_runs (thread_id, call_id, outcome) VALUES (?, ?, ?)"
            " ON CONFLICT (thread_id, call_id) DO UPDATE SET outcome = excluded.outcome"
        )
        await self._db.write_one(sql, (thread_id, call_id, _dump(outcome)))

    async def lookup(self, thread_id: str, call_id: str) -> ToolOutcome | None:
        sql = "SELECT outcome FROM tool_runs WHERE thread_id = ? AND call_id = ?"
        rows = await self._db.call(lambda conn: conn.execute(sql, (thread_id, call_id)).fetchall())
        if not rows:
            return None
        return INTERRUPTED if rows[0][0] is None else _load(rows[0][0])

    async def forget_thread(self, thread_id: str) -> None:
        await self._db.write_one("DELETE FROM tool_runs WHERE thread_id = ?", (thread_id,))
