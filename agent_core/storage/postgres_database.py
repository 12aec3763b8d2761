"""The thread store's PostgreSQL dialect (psycopg 3, psycopg_pool), for servers that share threads.

- Schema `cellwright`, created and migrated on start under an advisory lock (two servers starting
  together do not race), versioned in `cellwright.schema_version`.
- A bounded pool of connections, each checked before use unless it was handed out a moment ago
  with the listener's connection unbroken since (agent_core.storage.connection_checks): after the
  database restarts, the next call reconnects; a call while it is down fails with
  DatabaseUnavailable (a transaction is all or nothing, so nothing is half-written). Every
  statement has a time limit.
- Appenders to one thread queue on a per-thread advisory lock held until commit: seqs stay
  gap-free and ordered when two servers append.
- A write's NOTIFY reaches the listener thread of the other servers of the same owner (one channel
  per owner: another user's server is never told of this user's threads), which wakes their readers.
  A server that is its owner's only listener sends none (see `PostgresDatabase.notify`).
- Connections per process: `pool_size` in the pool, one for the listener (and, in a process that
  runs the agent, one for its checkpoints: agent_core/storage/checkpoint.py)."""

from __future__ import annotations

import asyncio
import functools
import hashlib
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from agent_core.redaction import redact_url
from agent_core.storage.connection_checks import RecentCheckouts
from agent_core.storage.database import (
    LEASE_HOLDER,
    MODEL_REQUESTS,
    SCHEMA,
    THREAD_AGENT,
    THREAD_OWNER,
    Connection,
    DatabaseUnavailable,
    LeaseTake,
    Notified,
)

log = logging.getLogger(__name__)

SCHEMA_NAME = "cellwright"
CHANNEL_PREFIX = "cellwright_events_"  # + a hash of the owner: each user's servers notify each other only
MIGRATION_LOCK = 0x63656C6C  # "cell": the advisory lock key that serializes schema migrations
# A pool retries a lost connection with a doubling delay: after a long outage its next attempt
# could be minutes away. Giving a series up after a few seconds lets the next request start a
# fresh one, so the first request after the database is back reconnects at once.
RECONNECT_SERIES = 5.0
STATEMENT_TIMEOUT_MS = 15_000
CONNECT_TIMEOUT = 5  # seconds, per connection attempt
LISTEN_RETRY_MAX = 5.0  # seconds between the listener's reconnection attempts, at most
PEERS_RECHECK = 5.0  # seconds between the listener's looks at whether its owner's other listeners are there


def _pg_types(sql: str) -> str:
    return sql.replace(" REAL", " DOUBLE PRECISION").replace(" INTEGER", " BIGINT")


# Database.append_events in one statement: the lock, each thread's last seq, the rows and the
# notification, where a transaction block of its own took five or six round trips. Each statement
# of a PL/pgSQL function reads a snapshot of its own, so the last seq is read after the locks are
# granted: an appender that held one has committed. The rows' text is agent_core.storage.database's
# event_data; the locks are lock_threads' (appenders of either kind queue for each other).
APPEND_EVENTS = """
CREATE OR REPLACE FUNCTION cellwright.append_events(threads text[], bodies text[], channel text, process text)
RETURNS bigint[] LANGUAGE plpgsql AS $$
DECLARE
    seqs bigint[] := '{}';
    last jsonb := '{}';
    next_seq bigint;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended(t, 0))
        FROM (SELECT DISTINCT t FROM unnest(threads) AS t ORDER BY t) AS s;
    FOR i IN 1 .. coalesce(array_length(threads, 1), 0) LOOP
        next_seq := coalesce(
            (last ->> threads[i])::bigint,
            (SELECT MAX(e.seq) FROM cellwright.events AS e WHERE e.thread_id = threads[i]),
            0
        ) + 1;
        INSERT INTO cellwright.events (thread_id, seq, data)
            VALUES (threads[i], next_seq, '{"seq":' || next_seq || ',' || substr(bodies[i], 2));
        last := last || jsonb_build_object(threads[i], next_seq);
        seqs := seqs || next_seq;
    END LOOP;
    IF channel IS NOT NULL THEN
        PERFORM pg_notify(channel, process || ':' || t) FROM (SELECT DISTINCT t FROM unnest(threads) AS t ORDER BY t) AS s;
    END IF;
    RETURN seqs;
END
$$
"""

# Database.take_lease in one statement: database.take_lease_in's three statements, where a
# transaction block of their own took five round trips (2.8 ms before a run's first model request,
# against 0.1 ms on SQLite).
TAKE_LEASE = """
CREATE OR REPLACE FUNCTION cellwright.take_lease(
    thread text, process text, holder text, now double precision, until double precision,
    thread_owner text, status text, run_id text
) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    taken bigint;
BEGIN
    INSERT INTO cellwright.leases AS l (thread_id, owner, until, holder) VALUES (thread, process, until, holder)
        ON CONFLICT (thread_id) DO UPDATE SET owner = excluded.owner, until = excluded.until, holder = excluded.holder
        WHERE l.owner = excluded.owner OR l.until < now;
    GET DIAGNOSTICS taken = ROW_COUNT;
    IF taken <> 1 THEN
        RETURN NULL;
    END IF;
    IF status IS NOT NULL THEN
        UPDATE cellwright.threads AS t SET status = take_lease.status, last_run_id = run_id, updated_at = now
            WHERE t.thread_id = thread AND t.owner = thread_owner;
    END IF;
    RETURN coalesce((SELECT MAX(e.seq) FROM cellwright.events AS e WHERE e.thread_id = thread), 0);
END
$$
"""

# version -> its statements (run once, in order, inside the migration transaction).
VERSIONS: dict[int, tuple[str, ...]] = {
    1: (
        *(_pg_types(statement) for statement in SCHEMA),
        *LEASE_HOLDER,
        # The at-most-once ledger of tool calls (in SQLite it sits in the checkpoint file).
        "CREATE TABLE IF NOT EXISTS tool_runs (thread_id TEXT NOT NULL, call_id TEXT NOT NULL, outcome TEXT,"
        " PRIMARY KEY (thread_id, call_id))",
    ),
    # Threads get an owner. Those stored before stay without one (hidden from every server) until an
    # operator gives them one (README, "Deploying for a team"): in a shared database nothing says
    # whose they were, and the first server to start must not take them all.
    2: THREAD_OWNER,
    3: tuple(_pg_types(statement) for statement in MODEL_REQUESTS),  # the record of model requests
    4: THREAD_AGENT,  # the ACP agent a thread hosts (issue 40)
    5: (APPEND_EVENTS, TAKE_LEASE),  # an append, a lease in one round trip each (issue 41)
}


@functools.lru_cache(maxsize=256)
def _pg_sql(sql: str) -> str:
    """The stores' SQL with psycopg's placeholders (their SQL has no literal ? or %)."""
    return sql.replace("?", "%s")


class _Conn:
    def __init__(self, conn: Any) -> None:
        self._conn = conn

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        return self._conn.execute(_pg_sql(sql), params)


def connection_options() -> str:
    return f"-c statement_timeout={STATEMENT_TIMEOUT_MS} -c search_path={SCHEMA_NAME},public"


def application_name(role: str, owner: str) -> str:
    """How pg_stat_activity names a connection: which of a server's pools, and whose server
    (PostgreSQL keeps 63 bytes of it)."""
    return f"cellwright {role} {owner}".encode()[:63].decode(errors="ignore")


def channel(owner: str) -> str:
    """The NOTIFY channel of `owner`'s servers: an identifier of a fixed size, whatever the name."""
    return CHANNEL_PREFIX + hashlib.sha256(owner.encode()).hexdigest()[:32]


class PostgresDatabase:
    kind = "postgres"
    notifies = True

    def __init__(self, url: str, process: str, owner: str, pool_size: int, pool_timeout: float) -> None:
        self._url = url
        self.where = redact_url(url)  # how errors and logs name the database
        self._process = process  # this process's notifications are not news to it
        self.owner = owner  # whose servers hear this one's writes
        self.pool_size = pool_size
        self.pool_timeout = pool_timeout  # seconds a call waits for a connection before it fails
        self._pool: Any = None
        self._executor: ThreadPoolExecutor | None = None
        self._listening: threading.Event | None = None  # set: the listener should stop
        self.checkouts = RecentCheckouts()  # which pooled connections go unchecked (the checkpoints' pool too)
        # Whether another process listens on the owner's channel (set by the listener thread; until
        # it has looked, assume so).
        self._peers = True

    @property
    def is_open(self) -> bool:
        return self._pool is not None

    async def open(self, notified: Notified) -> None:
        try:
            # psycopg (the `postgres` extra) loads on first use: a server on SQLite never imports it
            from psycopg_pool import ConnectionPool
        except ImportError as exc:
            raise RuntimeError(
                "database_url is a PostgreSQL URL but psycopg is not installed: pip install 'cellwright[postgres]'"
            ) from exc
        # As many threads as connections: a call never waits for a thread while a connection is free.
        self._executor = ThreadPoolExecutor(self.pool_size, thread_name_prefix="cellwright-pg")
        pool = ConnectionPool(
            self._url,
            min_size=1,
            max_size=self.pool_size,
            open=False,
            timeout=self.pool_timeout,
            name="cellwright",
            reconnect_timeout=RECONNECT_SERIES,
            check=self.checkouts.check,
            kwargs={
                "autocommit": True,
                "connect_timeout": CONNECT_TIMEOUT,
                "options": connection_options(),
                "application_name": application_name("threads", self.owner),
            },
        )
        loop = asyncio.get_running_loop()

        def start() -> None:
            pool.open(wait=True, timeout=self.pool_timeout)
            with pool.connection() as conn:
                migrate(conn)

        try:
            await loop.run_in_executor(self._executor, start)
        except Exception as exc:
            await loop.run_in_executor(self._executor, pool.close)
            raise self._unavailable(exc) from None
        self._pool = pool
        self._listening = threading.Event()
        threading.Thread(
            target=self._listen, args=(loop, notified, self._listening), daemon=True, name="cellwright-listen"
        ).start()

    async def close(self) -> None:
        if self._listening is not None:
            self._listening.set()
        if self._pool is not None:
            pool, self._pool = self._pool, None
            await asyncio.get_running_loop().run_in_executor(self._executor, pool.close)
        if self._executor is not None:
            self._executor.shutdown(wait=False)
            self._executor = None

    def _unavailable(self, exc: BaseException) -> DatabaseUnavailable:
        detail = str(exc).replace(self._url, self.where).strip().splitlines()
        return DatabaseUnavailable(
            f"The database {self.where} cannot be reached: {detail[0] if detail else type(exc).__name__}"
        )

    async def _run(self, fn: Callable[[Any], Any]) -> Any:
        import psycopg
        from psycopg_pool import PoolTimeout

        pool = self._pool
        if pool is None:
            raise ValueError("the thread store is closed")
        try:
            return await asyncio.get_running_loop().run_in_executor(self._executor, fn, pool)
        except (psycopg.OperationalError, PoolTimeout) as exc:
            raise self._unavailable(exc) from None

    async def call(self, fn: Callable[[Connection], Any], quick: bool = False) -> Any:
        # quick or not: a round trip to the server either way, made from the pool's threads
        def read(pool: Any) -> Any:
            with pool.connection() as conn:
                return fn(_Conn(conn))

        return await self._run(read)

    async def write(self, fn: Callable[[Connection], Any], quick: bool = False) -> Any:
        def transaction(pool: Any) -> Any:
            with pool.connection() as conn, conn.transaction():
                return fn(_Conn(conn))

        return await self._run(transaction)

    async def write_one(self, sql: str, params: tuple[Any, ...], quick: bool = False) -> None:
        # autocommit: the statement commits by itself
        def one(pool: Any) -> None:
            with pool.connection() as conn:
                _Conn(conn).execute(sql, params)

        await self._run(one)

    async def append_events(self, rows: list[tuple[str, str]], quick: bool = False) -> list[int]:
        threads = [thread_id for thread_id, _ in rows]
        bodies = [body for _, body in rows]
        told = channel(self.owner) if self._peers else None  # see notify

        def append(pool: Any) -> list[int]:
            with pool.connection() as conn:
                row = conn.execute(
                    "SELECT append_events(%s, %s, %s::text, %s)", (threads, bodies, told, self._process)
                ).fetchone()
                return list(row[0])

        seqs: list[int] = await self._run(append)
        return seqs

    async def take_lease(self, take: LeaseTake) -> int | None:
        params = (take.thread_id, take.process, take.holder, take.now, take.until, take.owner, take.status, take.run_id)

        def one(pool: Any) -> int | None:
            with pool.connection() as conn:
                row = conn.execute("SELECT take_lease(%s, %s, %s, %s, %s, %s, %s::text, %s)", params).fetchone()
                return None if row is None or row[0] is None else int(row[0])

        last_seq: int | None = await self._run(one)
        return last_seq

    def lock_threads(self, conn: Connection, thread_ids: list[str]) -> None:
        # One statement for the batch, locking in one order everywhere (sorted, then a row at a
        # time: the subquery's order): two servers locking the same threads cannot deadlock.
        conn.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(t, 0)) FROM (SELECT DISTINCT t FROM unnest(?::text[]) AS t ORDER BY t) AS s",
            (thread_ids,),
        )

    def notify(self, conn: Connection, thread_ids: set[str]) -> None:
        """Only while another process of the owner listens. PostgreSQL signals every listening
        session of the database at each NOTIFY, whatever its channel: on a shared database each
        append would wake every server's listener, and its own (issue 41: 20 servers, one owner
        each). A listener that joins says so on the channel (`_hello`), so notifications resume at
        once; an append committing in that same instant reaches its readers at their next tick."""
        if not self._peers:
            return
        payloads = [f"{self._process}:{thread_id}" for thread_id in sorted(thread_ids)]
        conn.execute("SELECT pg_notify(?, p) FROM unnest(?::text[]) AS p", (channel(self.owner), payloads))

    def _hello(self, conn: Any) -> None:
        """On the listener's connection, once it listens: look whether another listener of the
        owner is there, then tell them this one is (a payload without a thread). One that joins
        after the look is heard, since this one already listens."""
        self._look_for_peers(conn)
        conn.execute("SELECT pg_notify(%s, %s)", (channel(self.owner), f"{self._process}:"))

    @property
    def peers_listening(self) -> bool:
        """Whether another process of the owner listens for this one's writes (as last seen)."""
        return self._peers

    def _look_for_peers(self, conn: Any) -> None:
        # application_name is visible to every role; a name cut at 63 bytes can only make a peer
        # seem present, which costs notifications, never a missed one.
        row = conn.execute(
            "SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE application_name = %s"
            " AND datname = current_database() AND pid <> pg_backend_pid())",
            (application_name("listen", self.owner),),
        ).fetchone()
        self._peers = bool(row and row[0])

    def _listen(self, loop: asyncio.AbstractEventLoop, notified: Notified, stop: threading.Event) -> None:
        """The listener thread: one connection of its own, reconnected after the database restarts
        (then every reader looks again: notifications sent meanwhile are lost)."""
        import psycopg

        delay, first = 0.2, True
        while not stop.is_set():
            try:
                with psycopg.connect(
                    self._url,
                    autocommit=True,
                    connect_timeout=CONNECT_TIMEOUT,
                    application_name=application_name("listen", self.owner),
                ) as conn:
                    conn.execute(f"LISTEN {channel(self.owner)}")
                    self._hello(conn)
                    if not first:
                        loop.call_soon_threadsafe(notified, None)
                    first, delay = False, 0.2
                    looked = time.monotonic()
                    while not stop.is_set():
                        for note in conn.notifies(timeout=0.5):
                            process, _, thread_id = note.payload.partition(":")
                            if process == self._process:
                                continue
                            if not thread_id:  # another listener of the owner joined
                                self._peers = True
                            else:
                                loop.call_soon_threadsafe(notified, thread_id)
                        if time.monotonic() - looked >= PEERS_RECHECK:
                            # The others may have gone; or one joined unheard (a release before the
                            # hello, or a hello sent while this connection was being made again)
                            self._look_for_peers(conn)
                            looked = time.monotonic()
            except RuntimeError:  # the loop closed under us: the server is stopping
                return
            except Exception as exc:
                self.checkouts.forget()  # the database may have dropped the pools' connections too
                self._peers = True  # unknown until the listener is back: others may have joined meanwhile
                if stop.is_set():
                    return
                log.warning(
                    "Cellwright lost its notification connection to %s (%s); reconnecting",
                    self.where,
                    type(exc).__name__,
                )
                stop.wait(delay)
                delay = min(delay * 2, LISTEN_RETRY_MAX)


def unavailable(exc: BaseException) -> bool:
    """Whether `exc` is the database being out of reach (psycopg's own errors, e.g. from LangGraph's
    saver); only asked when psycopg is loaded."""
    import psycopg
    from psycopg_pool import PoolTimeout

    return isinstance(exc, (psycopg.OperationalError, PoolTimeout))


# Waiting for the migration lock is a loop of tries, not a blocking call: a session blocked on it
# is a transaction in progress, and LangGraph's setup (CREATE INDEX CONCURRENTLY) waits for every
# transaction in progress to end: the two would wait for each other until the statement timeout.
LOCK_RETRY = 0.1  # seconds between tries
LOCK_WAIT = 120.0  # seconds before giving up on another server's migration


def migrate(conn: Any) -> None:
    """Create or upgrade the schema to the last version, once, whoever starts first."""
    deadline = time.monotonic() + LOCK_WAIT
    while not conn.execute("SELECT pg_try_advisory_lock(%s)", (MIGRATION_LOCK,)).fetchone()[0]:
        if time.monotonic() > deadline:
            raise TimeoutError("another server has been migrating the Cellwright schema for too long")
        time.sleep(LOCK_RETRY)
    try:
        with conn.transaction():
            conn.execute(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA_NAME}")
            conn.execute(f"SET LOCAL search_path TO {SCHEMA_NAME}")
            conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
            row = conn.execute("SELECT MAX(version) FROM schema_version").fetchone()
            current = row[0] or 0
            for version in sorted(v for v in VERSIONS if v > current):
                for statement in VERSIONS[version]:
                    conn.execute(statement)
                conn.execute("INSERT INTO schema_version (version) VALUES (%s)", (version,))
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))


async def saver_setup(saver: Any, url: str) -> None:
    """LangGraph's checkpoint tables, set up under the same lock as ours (its own migrations do not
    lock: two servers starting together would both create them)."""
    import psycopg

    loop = asyncio.get_running_loop()
    deadline = loop.time() + LOCK_WAIT
    async with await psycopg.AsyncConnection.connect(
        url, autocommit=True, connect_timeout=CONNECT_TIMEOUT, application_name="cellwright setup"
    ) as conn:
        while not _first(await (await conn.execute("SELECT pg_try_advisory_lock(%s)", (MIGRATION_LOCK,))).fetchone()):
            if loop.time() > deadline:
                raise TimeoutError("another server has been setting up the checkpoint tables for too long")
            await asyncio.sleep(LOCK_RETRY)
        try:
            await saver.setup()
        finally:
            await conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))


def _first(row: tuple[Any, ...] | None) -> Any:
    """A one-column answer's value (None when no row came back)."""
    return row[0] if row is not None else None
