"""A SQLite connection for the event loop's own thread, for statements too small to be worth a hop to
a connection's worker thread (issue 41): a hop costs more than a few rows by key, and far more while
the loop is busy, as the worker waits for the GIL the loop holds. Opened with busy timeout 0: where
SQLite would have to wait for a lock (another writer), nothing is done and the caller takes the hop."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any, Protocol, TypeVar

WOULD_WAIT = object()  # what `at_once` returns when SQLite could not do the call without waiting


class LoopConnection:
    """Made on the loop's thread, used there only (elsewhere every call answers WOULD_WAIT)."""

    def __init__(self, path: Path) -> None:
        self._conn: sqlite3.Connection | None = sqlite3.connect(
            str(path), isolation_level=None, check_same_thread=False, timeout=0
        )
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute("PRAGMA wal_autocheckpoint=0")  # its commits never copy the WAL back: the worker's do
        self._thread = threading.get_ident()
        self._writing = 0  # writes of this process on the worker's connection, not committed yet

    @contextmanager
    def writing(self) -> Iterator[None]:
        """Around a write on the worker's connection: until it is committed, reads take the hop, so
        they come after it in the worker's order, as they did (a read here would not see it yet)."""
        self._writing += 1
        try:
            yield
        finally:
            self._writing -= 1

    def read_at_once(self, fn: Callable[[sqlite3.Connection], Any]) -> Any:
        """As `at_once`, for a read: WOULD_WAIT also while a write of this process is under way."""
        return WOULD_WAIT if self._writing else self.at_once(fn)

    def at_once(self, fn: Callable[[sqlite3.Connection], Any]) -> Any:
        """`fn` on this connection, or WOULD_WAIT (nothing done) if SQLite would have to wait."""
        conn = self._conn
        if conn is None or threading.get_ident() != self._thread:
            return WOULD_WAIT
        try:
            return fn(conn)
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc):  # "database is locked", "database table is locked"
                raise
            if conn.in_transaction:  # a statement after BEGIN waited: undone, and done on the worker
                conn.execute("ROLLBACK")
            return WOULD_WAIT

    def write_at_once(self, fn: Callable[[sqlite3.Connection], Any]) -> Any:
        """`fn` in a write transaction of its own on this connection, or WOULD_WAIT (nothing written)
        while another connection holds the write lock."""
        return self.at_once(transaction(fn))

    def close(self) -> None:
        if self._conn is not None:
            conn, self._conn = self._conn, None
            conn.close()


class Executes(Protocol):
    def execute(self, sql: str, params: tuple[Any, ...] = ...) -> Any: ...


C = TypeVar("C", bound=Executes)


def transaction(fn: Callable[[C], Any]) -> Callable[[C], Any]:
    """`fn` in BEGIN IMMEDIATE ... COMMIT: the writer lock at once, so a read inside stays true."""

    def within(conn: C) -> Any:
        conn.execute("BEGIN IMMEDIATE")  # a lock SQLite would wait for fails here, before anything
        try:
            result = fn(conn)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return result

    return within


def read_at_once(loop: LoopConnection | None, fn: Callable[[sqlite3.Connection], Any]) -> Any:
    """`loop.read_at_once(fn)`; WOULD_WAIT without a loop connection (the caller takes the hop)."""
    return loop.read_at_once(fn) if loop is not None else WOULD_WAIT


def writing(loop: LoopConnection | None) -> AbstractContextManager[None]:
    """`loop.writing()`, or nothing to note without a loop connection."""
    return loop.writing() if loop is not None else nullcontext()
