"""When a pooled PostgreSQL connection is checked before use (issue 41).

psycopg_pool's check_connection is a round trip to the database at every checkout: a run makes a
few dozen checkouts (its checkpoints, events, lease), each paying one more round trip, and the
server and PostgreSQL the CPU for it. The check exists for connections that went stale while they
sat in the pool (the database restarted): one handed out again within FRESH_SECONDS of its last
checkout, with the listener's own connection unbroken since, is handed out unchecked. A restart
breaks the listener's connection (it reconnects, agent_core.storage.postgres_database), which
makes every connection be checked again before its next use."""

from __future__ import annotations

import threading
import time
import weakref
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from psycopg import AsyncConnection, Connection

FRESH_SECONDS = 1.0


class RecentCheckouts:
    """The checkout times of one process's pooled connections; shared by its pools and its listener.
    Thread-safe: the thread store's pool hands connections out on several threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._given: weakref.WeakKeyDictionary[object, float] = weakref.WeakKeyDictionary()

    def needs_check(self, conn: object) -> bool:
        """Whether `conn` is to be checked before this checkout (which is recorded)."""
        now = time.monotonic()
        with self._lock:
            last = self._given.get(conn)
            self._given[conn] = now
        return last is None or now - last >= FRESH_SECONDS

    def forget(self) -> None:
        """The database may have dropped every connection: check each before its next use."""
        with self._lock:
            self._given.clear()

    def check(self, conn: Connection[Any]) -> None:
        """A `check` for psycopg_pool's ConnectionPool."""
        from psycopg_pool import ConnectionPool

        if self.needs_check(conn):
            ConnectionPool.check_connection(conn)

    async def acheck(self, conn: AsyncConnection[Any]) -> None:
        """A `check` for psycopg_pool's AsyncConnectionPool."""
        from psycopg_pool import AsyncConnectionPool

        if self.needs_check(conn):
            await AsyncConnectionPool.check_connection(conn)
