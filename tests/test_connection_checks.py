"""Pooled PostgreSQL connections handed out again a moment after their last use go unchecked
(agent_core.storage.connection_checks); a database restart, seen by the listener, makes every
connection be checked again, against a real PostgreSQL restarted under a real thread store."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_core.storage import connection_checks
from agent_core.storage.connection_checks import RecentCheckouts
from agent_core.storage.thread_store import ThreadStore
from devtools.postgres_cluster import PostgresCluster


class _Conn:  # a connection as the pool hands it out: only its identity matters here
    pass


def test_a_connection_is_checked_unless_it_was_handed_out_a_moment_ago(monkeypatch: pytest.MonkeyPatch) -> None:
    checkouts, conn, other = RecentCheckouts(), _Conn(), _Conn()
    assert checkouts.needs_check(conn)  # never seen
    assert not checkouts.needs_check(conn)  # again at once
    assert checkouts.needs_check(other)  # each connection its own
    monkeypatch.setattr(connection_checks, "FRESH_SECONDS", 0.0)
    assert checkouts.needs_check(conn)  # not a moment ago any more
    monkeypatch.setattr(connection_checks, "FRESH_SECONDS", 60.0)
    checkouts.forget()
    assert checkouts.needs_check(conn) and checkouts.needs_check(other)  # forgotten: checked again


async def test_a_restart_makes_the_pool_check_its_connections_again(
    tmp_path: Path, postgres_url: str, postgres_server: PostgresCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pool's connection was used a moment ago, so it would go unchecked: the restart broke it,
    and the listener's lost connection makes the next call check it and reconnect."""
    monkeypatch.setattr(connection_checks, "FRESH_SECONDS", 3600.0)  # only the listener can say "check"
    store = ThreadStore(tmp_path / "threads.sqlite", owner="alice", database_url=postgres_url, pool_size=1)
    await store.open()
    try:
        thread = (await store.create("nb.ipynb", "before")).thread_id
        assert (await store.get(thread)) is not None
        postgres_server.restart()  # every pooled connection is now dead
        record = await store.get(thread)
        assert record is not None and record.title == "before"
    finally:
        await store.close()
