"""Where the thread store keeps its rows: one interface, two dialects. The stores write their SQL
once (SQLite's `?` placeholders); a dialect runs it on its own connections and supplies what
differs: the column types, how a write transaction starts, how appenders to one thread queue up,
and how other servers hear of a write. SQLite (files in the data directory) is the default;
PostgreSQL (agent_core/storage/postgres_database.py, imported only when configured) when servers share
threads."""

from __future__ import annotations

import asyncio
import importlib
import sqlite3
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from agent_core.config.database_url import DATABASE_TIMEOUT, is_postgres_url
from agent_core.private_files import private_file
from agent_core.redaction import redact_url
from agent_core.storage.loop_connection import WOULD_WAIT, LoopConnection, transaction
from agent_core.storage.request_log import MODEL_REQUESTS

# The tables of the thread store and the tool ledger, in SQLite's words; the Postgres dialect
# widens the types (REAL is 4 bytes there: a timestamp would lose minutes).
SCHEMA = (
    "CREATE TABLE IF NOT EXISTS threads ("
    " thread_id TEXT PRIMARY KEY, title TEXT NOT NULL, notebook_path TEXT NOT NULL,"
    " created_at REAL NOT NULL, updated_at REAL NOT NULL, status TEXT NOT NULL,"
    " last_run_id TEXT NOT NULL DEFAULT '', kernel_id TEXT NOT NULL DEFAULT '')",
    "CREATE TABLE IF NOT EXISTS events ("
    " thread_id TEXT NOT NULL, seq INTEGER NOT NULL, data TEXT NOT NULL, PRIMARY KEY (thread_id, seq))",
    # Which process drives a thread right now (its `owner` is that process, not the thread's user):
    # servers and kernels (%agent) share the store.
    "CREATE TABLE IF NOT EXISTS leases (thread_id TEXT PRIMARY KEY, owner TEXT NOT NULL, until REAL NOT NULL)",
)
# Columns added after the first release, each with the statements that add it. SQLite runs those
# whose column a file lacks (SqliteDatabase.open); PostgreSQL runs them as numbered schema versions
# (postgres_database.VERSIONS).
# Who holds a lease, in words, so a refused Stop can say who runs the thread.
LEASE_HOLDER = ("ALTER TABLE leases ADD COLUMN holder TEXT NOT NULL DEFAULT ''",)
# Whose thread it is: the user the server (or kernel) runs for. A store sees only its owner's
# threads; a thread stored before owners existed has none (NULL) until it is given one.
THREAD_OWNER = (
    "ALTER TABLE threads ADD COLUMN owner TEXT",
    "CREATE INDEX IF NOT EXISTS threads_by_owner ON threads (owner, updated_at)",
)

# Which agent answers in the thread: '' for Cellwright's own, else the name of an ACP agent
# (c.Cellwright.acp_agents) hosted for it.
THREAD_AGENT = ("ALTER TABLE threads ADD COLUMN agent TEXT NOT NULL DEFAULT ''",)


class DatabaseUnavailable(RuntimeError):
    """The database cannot be reached (down, restarting, or too slow): says which, never the password.
    Each write is one transaction, so a failed one left nothing half-written."""


Notified = Callable[[str | None], None]  # a thread another process wrote to (None: maybe any, after a reconnect)


class Connection(Protocol):
    """What a store's function gets: `execute` with `?` placeholders, returning a DB-API cursor."""

    def execute(self, sql: str, params: tuple[Any, ...] = ...) -> Any: ...


class Database(Protocol):
    kind: str  # "sqlite" | "postgres"
    notifies: bool  # other processes' writes wake this one's readers at once

    @property
    def is_open(self) -> bool: ...
    async def open(self, notified: Notified) -> None: ...
    async def close(self) -> None: ...
    async def call(self, fn: Callable[[Connection], Any], quick: bool = False) -> Any:
        """`fn(conn)` on a connection of its own (reads; one statement each). `quick`: it reads a few
        rows by key, so SQLite may run it at once on the event loop's own connection."""
        ...

    async def write(self, fn: Callable[[Connection], Any], quick: bool = False) -> Any:
        """`fn(conn)` inside one write transaction: all of it or none. `quick`: as for call, a few
        rows by key."""
        ...

    async def write_one(self, sql: str, params: tuple[Any, ...], quick: bool = False) -> None:
        """One write statement, atomic by itself: on PostgreSQL no BEGIN and COMMIT around it (two
        round trips fewer); SQLite runs it as `write` does."""
        ...

    async def append_events(self, rows: list[tuple[str, str]], quick: bool = False) -> list[int]:
        """Store each (thread_id, body) as its thread's next event, in order, in one transaction,
        as `event_data(seq, body)`: their seqs. Appenders to one thread queue (lock_threads), and
        other processes hear of it (notify). `quick`: a few rows, as for call."""
        ...

    async def take_lease(self, take: LeaseTake) -> int | None:
        """Take or renew a thread's lease and, when taken with a run's status, set the thread's
        record, in one transaction: the thread's last seq, or None when another process holds the
        lease (one that may have ended: the caller looks)."""
        ...

    def lock_threads(self, conn: Connection, thread_ids: list[str]) -> None:
        """Inside a write: make concurrent appenders to these threads wait for this transaction."""
        ...

    def notify(self, conn: Connection, thread_ids: set[str]) -> None:
        """Inside a write: tell other processes' readers, at commit, that these threads changed."""
        ...


@dataclass(frozen=True)
class LeaseTake:
    """A lease asked for: `process` (named `holder` to users) drives `thread_id` until `until`
    (seconds since the epoch, as `now`). With `status`, the start of a run of the owner's thread:
    its record gets the status and `run_id`."""

    thread_id: str
    process: str
    holder: str
    now: float
    until: float
    owner: str
    status: str | None = None
    run_id: str = ""


# Taken when free, expired, or already this process's; the statement changes no row otherwise.
# PostgreSQL's take_lease function (postgres_database.TAKE_LEASE) runs the same three statements.
LEASE_UPSERT = (
    "INSERT INTO leases (thread_id, owner, until, holder) VALUES (?, ?, ?, ?) ON CONFLICT (thread_id) DO UPDATE"
    " SET owner = excluded.owner, until = excluded.until, holder = excluded.holder"
    " WHERE leases.owner = excluded.owner OR leases.until < ?"
)


def take_lease_in(conn: Connection, take: LeaseTake) -> int | None:
    """`Database.take_lease` inside a write transaction."""
    if conn.execute(LEASE_UPSERT, (take.thread_id, take.process, take.until, take.holder, take.now)).rowcount != 1:
        return None
    if take.status is not None:
        conn.execute(
            "UPDATE threads SET status = ?, last_run_id = ?, updated_at = ? WHERE thread_id = ? AND owner = ?",
            (take.status, take.run_id, take.now, take.thread_id, take.owner),
        )
    return max_seq_in(conn, take.thread_id)


def event_data(seq: int, body: str) -> str:
    """An event's stored text: `body` (the event as a JSON object without its seq, never empty: it
    names its thread) with the seq put first. PostgreSQL's append_events function writes the same
    text (agent_core/storage/postgres_database.py, APPEND_EVENTS)."""
    return f'{{"seq":{seq},{body[1:]}'


def max_seq_in(conn: Connection, thread_id: str) -> int:
    """The thread's last stored seq (0 if none), inside a transaction."""
    return conn.execute("SELECT MAX(seq) FROM events WHERE thread_id = ?", (thread_id,)).fetchone()[0] or 0


def insert_events(conn: Connection, rows: list[tuple[str, str]]) -> list[int]:
    """`Database.append_events` inside a write transaction that already excludes other appenders:
    each thread's last seq read once, then counted on."""
    last: dict[str, int] = {}
    seqs = []
    for thread_id, body in rows:
        seq = (last[thread_id] if thread_id in last else max_seq_in(conn, thread_id)) + 1
        conn.execute(
            "INSERT INTO events (thread_id, seq, data) VALUES (?, ?, ?)", (thread_id, seq, event_data(seq, body))
        )
        last[thread_id] = seq
        seqs.append(seq)
    return seqs


# What a postgresql:// database_url needs: the `postgres` extra (psycopg, its pool, LangGraph's saver).
POSTGRES_MODULES = ("psycopg", "psycopg_pool", "langgraph.checkpoint.postgres")
POSTGRES_EXTRA = "pip install 'cellwright[postgres]'"


def missing_postgres_extra(url: str) -> str | None:
    """For a PostgreSQL `url` whose driver cannot be imported: what is missing and what to do (without
    the URL's secrets); None when nothing is missing. Asked once, at start: the imports are what the
    first request would pay anyway (a libpq-less psycopg fails here too, not only an absent one)."""
    if not is_postgres_url(url):
        return None
    missing = []
    for name in POSTGRES_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    if not missing:
        return None
    return (
        f"database_url is a PostgreSQL URL ({redact_url(url)}) but {', '.join(missing)} cannot be imported: "
        f"{POSTGRES_EXTRA} in the server's environment and restart Jupyter, or unset database_url (and "
        "CELLWRIGHT_DATABASE_URL) to keep threads in SQLite in the Jupyter data directory."
    )


def open_database(
    url: str,
    sqlite_path: Path,
    process: str,
    owner: str,
    pool_size: int = 2,
    pool_timeout: float = DATABASE_TIMEOUT,
) -> Database:
    """The store's database for the `database_url` setting: Postgres for a postgresql:// URL,
    else the SQLite file at `sqlite_path` (also for 'memory' and file URLs: those name the
    checkpointer's storage, and threads have always been in their own file). `process` names this
    process's writes; `owner` is the user whose threads the store holds."""
    if is_postgres_url(url):
        # agent_core.storage.postgres_database imports this module
        from agent_core.storage.postgres_database import PostgresDatabase

        return PostgresDatabase(url, process, owner, pool_size, pool_timeout)
    return SqliteDatabase(sqlite_path, owner)


class SqliteDatabase:
    """One connection on one thread: every call is one hop to it (not one per statement, fetch
    and commit: each hop wakes the event loop). Other processes (a kernel's %agent) share the
    file; their writes are seen at the readers' next poll.

    A quick call (a few rows by key: a thread's record, its lease) runs at once on a second
    connection, on the event loop's own thread, when SQLite can do it without waiting (no other
    connection holds the write lock): a hop to the thread costs more than the statements, and far
    more while the loop is busy, as the thread waits for the GIL between statements (issue 41: a
    run's lease took 2-4 ms while the event stream's request was being served). When SQLite would
    wait, the call takes the hop as any other."""

    kind = "sqlite"
    notifies = False

    def __init__(self, path: Path, owner: str) -> None:
        self.path = path
        self._owner = owner  # a file from before owners existed is this user's: its threads become theirs
        self._conn: sqlite3.Connection | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._here: LoopConnection | None = None  # the quick calls'

    @property
    def is_open(self) -> bool:
        return self._conn is not None

    async def open(self, notified: Notified) -> None:
        private_file(self.path)
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="cellwright-threads")

        def connect() -> sqlite3.Connection:
            # Autocommit mode: transactions are the explicit BEGIN IMMEDIATE of write().
            conn = sqlite3.connect(str(self.path), isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            # WAL + NORMAL: no fsync per commit (one per checkpoint of the WAL); survives a crash of the process.
            conn.execute("PRAGMA synchronous=NORMAL")
            _migrate_sqlite(conn, self._owner)
            return conn

        self._conn = await asyncio.get_running_loop().run_in_executor(self._executor, connect)
        self._here = LoopConnection(self.path)

    async def close(self) -> None:
        if self._here is not None:
            self._here.close()
        if self._conn is not None:
            conn, self._conn = self._conn, None
            await asyncio.get_running_loop().run_in_executor(self._executor, conn.close)
        if self._executor is not None:
            self._executor.shutdown(wait=False)
            self._executor = None

    async def call(self, fn: Callable[[Connection], Any], quick: bool = False) -> Any:
        conn = self._conn
        if conn is None:
            raise ValueError("the thread store is closed")
        if quick and self._here is not None and (done := self._here.at_once(fn)) is not WOULD_WAIT:
            return done
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn, conn)

    async def write(self, fn: Callable[[Connection], Any], quick: bool = False) -> Any:
        """BEGIN IMMEDIATE: the writer lock at once, so a read inside (the next seq) stays true."""
        return await self.call(transaction(fn), quick)

    async def write_one(self, sql: str, params: tuple[Any, ...], quick: bool = False) -> None:
        await self.write(lambda conn: conn.execute(sql, params), quick)

    async def append_events(self, rows: list[tuple[str, str]], quick: bool = False) -> list[int]:
        # BEGIN IMMEDIATE holds the whole file; other processes see the rows at their next poll
        return list(await self.write(lambda conn: insert_events(conn, rows), quick))

    async def take_lease(self, take: LeaseTake) -> int | None:
        last_seq: int | None = await self.write(lambda conn: take_lease_in(conn, take), quick=True)
        return last_seq

    def lock_threads(self, conn: Connection, thread_ids: list[str]) -> None:
        pass  # BEGIN IMMEDIATE already holds the whole file

    def notify(self, conn: Connection, thread_ids: set[str]) -> None:
        pass


def _migrate_sqlite(conn: sqlite3.Connection, owner: str) -> None:
    """Create the tables, and add the columns a file from an earlier release lacks, in one write
    transaction: the server and a kernel opening the file together do not both add a column. The
    threads of a file from before owners existed are `owner`'s: the file is one user's (it sits in
    their Jupyter data directory)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        for statement in SCHEMA:
            conn.execute(statement)
        if "holder" not in _columns(conn, "leases"):
            for statement in LEASE_HOLDER:
                conn.execute(statement)
        for statement in MODEL_REQUESTS:  # a table of its own: created if missing
            conn.execute(statement)
        if "owner" not in _columns(conn, "threads"):
            for statement in THREAD_OWNER:
                conn.execute(statement)
            conn.execute("UPDATE threads SET owner = ? WHERE owner IS NULL", (owner,))
        if "agent" not in _columns(conn, "threads"):
            for statement in THREAD_AGENT:
                conn.execute(statement)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
