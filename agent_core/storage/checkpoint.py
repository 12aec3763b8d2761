"""Opens the agent's persistence: a LangGraph checkpointer plus the tool ledger beside it.
SQLite in the Jupyter data directory by default; Postgres for shared deployments."""

from __future__ import annotations

import threading
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_core.config.database_url import checkpointer_kind
from agent_core.contract.choices import CheckpointerKind
from agent_core.private_files import private_file
from agent_core.storage.database import Database
from agent_core.storage.postgres_database import (
    RECONNECT_SERIES,
    PostgresDatabase,
    application_name,
    connection_options,
    saver_setup,
)
from agent_core.storage.tool_ledger import DatabaseToolLedger, MemoryToolLedger, SqliteToolLedger, ToolLedger

if TYPE_CHECKING:
    from psycopg import AsyncConnection
    from psycopg.rows import DictRow

CHECKPOINT_CONNECTIONS = 1  # a server's connections to a PostgreSQL checkpointer (see _open_postgres)


@dataclass
class AgentStore:
    saver: Any  # a langgraph BaseCheckpointSaver with StepSaves (and, but in memory, ReusedReads) mixed in
    ledger: ToolLedger
    kind: CheckpointerKind
    _stack: AsyncExitStack = field(default_factory=AsyncExitStack)

    async def aclose(self) -> None:
        await self._stack.aclose()

    async def delete_thread(self, thread_id: str) -> None:
        await self.saver.adelete_thread(thread_id)
        forget = getattr(self.ledger, "forget_thread", None)
        if forget is not None:
            await forget(thread_id)


async def open_store(url: str, default_path: Path, database: Database | None = None) -> AgentStore:
    """`url`: "" (SQLite at default_path), a file path or sqlite:///path, "memory", or postgresql://...
    (then `database`, the thread store's, also holds the tool ledger)."""
    kind = checkpointer_kind(url)
    if kind == "memory":
        # langgraph's savers, aiosqlite and the postgres extra load when the store opens: the server starts without
        # them (bench/server_start.py)
        from langgraph.checkpoint.memory import InMemorySaver

        from agent_core.storage.step_saves import with_step_saves

        return AgentStore(with_step_saves(InMemorySaver)(), MemoryToolLedger(), "memory")
    if kind == "postgres":
        return await _open_postgres(url, database)
    path = private_file(Path(url.removeprefix("sqlite:///")) if url else default_path)
    import aiosqlite
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    from agent_core.storage.loop_connection import LoopConnection
    from agent_core.storage.loop_reads import LoopReads, with_loop_reads
    from agent_core.storage.reused_reads import sqlite_newest, with_reused_reads
    from agent_core.storage.step_saves import with_step_saves

    stack = AsyncExitStack()
    try:
        conn = await stack.enter_async_context(_daemon_worker(aiosqlite.connect(str(path))))
        await conn.execute("PRAGMA journal_mode=WAL")
        # WAL + NORMAL: no fsync per commit (one per checkpoint of the WAL); survives a crash of the process.
        await conn.execute("PRAGMA synchronous=NORMAL")
        saver = with_step_saves(with_reused_reads(with_loop_reads(AsyncSqliteSaver), sqlite_newest))(conn)
        await saver.setup()
        loop_connection = LoopConnection(path)
        stack.callback(loop_connection.close)
        assert isinstance(saver, LoopReads)
        saver.loop_connection = loop_connection
        ledger = SqliteToolLedger(conn, loop_connection)
        await ledger.setup()
    except BaseException:
        # aiosqlite's worker thread is not a daemon: a connection left open by a failed or cancelled
        # open (a server shut down while it recovers) keeps the process from ever exiting.
        await stack.aclose()
        raise
    return AgentStore(saver, ledger, "sqlite", stack)


def _daemon_worker(connection: object) -> Any:
    """`connection` (aiosqlite's, not started yet) with its worker thread made a daemon. aiosqlite's
    is not one: when Jupyter's loop ends without the server's stop (a SIGINT with no terminal, how
    JupyterHub's LocalProcessSpawner stops a server), an open connection would keep the process from
    ever exiting. What was committed is in the file (WAL) whenever the process ends."""
    # aiosqlite before 0.22: the connection is the thread; since then it holds one.
    thread = connection if isinstance(connection, threading.Thread) else getattr(connection, "_thread", None)
    if isinstance(thread, threading.Thread) and not thread.is_alive():
        thread.daemon = True
    return connection


async def _open_postgres(url: str, database: Database | None) -> AgentStore:
    try:
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
        from psycopg.rows import dict_row
        from psycopg_pool import AsyncConnectionPool
    except ImportError as exc:
        raise RuntimeError(
            "database_url is a PostgreSQL URL but langgraph-checkpoint-postgres is not installed: "
            "pip install 'cellwright[postgres]'"
        ) from exc

    if not isinstance(database, PostgresDatabase):
        raise RuntimeError("the Postgres checkpointer needs the thread store on the same database")
    # A pool whose connection is checked before use (unless handed out a moment ago: the thread
    # store's RecentCheckouts): after the database restarts, the next run reconnects (a bare
    # connection would stay broken until Jupyter restarts). One connection:
    # LangGraph's saver runs every statement under one lock of its own (AsyncPostgresSaver.lock),
    # so a second would never be used. Not the thread store's pool: the saver needs async
    # connections, the store's pool holds blocking ones.
    pool: AsyncConnectionPool[AsyncConnection[DictRow]] = AsyncConnectionPool(  # rows as dicts: row_factory below
        url,
        min_size=1,
        max_size=CHECKPOINT_CONNECTIONS,
        open=False,
        timeout=database.pool_timeout,
        name="cellwright-checkpoints",
        reconnect_timeout=RECONNECT_SERIES,
        check=database.checkouts.acheck,
        kwargs={
            "autocommit": True,
            "prepare_threshold": 0,
            "row_factory": dict_row,
            "options": connection_options(),
            "application_name": application_name("checkpoints", database.owner),
        },
    )
    stack = AsyncExitStack()
    await pool.open(wait=True, timeout=database.pool_timeout)
    stack.push_async_callback(pool.close)
    from agent_core.storage.reused_reads import postgres_newest, with_reused_reads
    from agent_core.storage.step_saves import with_step_saves

    saver = with_step_saves(with_reused_reads(AsyncPostgresSaver, postgres_newest))(pool)
    try:
        await saver_setup(saver, url)
    except BaseException:
        await stack.aclose()
        raise
    return AgentStore(saver, DatabaseToolLedger(database), "postgres", stack)
