"""The event log shared by the server and kernels: sequence numbers stay strictly increasing by
one when two processes (two connections) append to the same thread."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agent_core.storage.thread_store import ThreadStore

pytestmark = pytest.mark.also_postgres


def two_stores(tmp_path: Path, database_url: str) -> tuple[ThreadStore, ThreadStore]:
    """Two processes' stores on one database (a server and a kernel, or two servers)."""
    return tuple(ThreadStore(tmp_path / "threads.sqlite", owner="alice", database_url=database_url) for _ in range(2))  # type: ignore[return-value]


async def test_two_writers_never_reuse_a_seq(tmp_path: Path, database_url: str) -> None:
    server, kernel = two_stores(tmp_path, database_url)
    await server.open()
    await kernel.open()
    try:
        thread = (await server.create("nb.ipynb", "t")).thread_id
        await server.events.append(thread, {"type": "run_started"})  # the server has now seen this thread

        async def write(store: ThreadStore, who: str) -> None:
            for i in range(25):
                await store.events.append(thread, {"type": "token", "text": f"{who}{i}"})

        await asyncio.gather(write(server, "s"), write(kernel, "k"))
        events = await server.events.events_after(thread, 0)
        assert [e["seq"] for e in events] == list(range(1, 52))
        assert sum(e.get("text", "").startswith("k") for e in events) == 25
        await server.events.wait_for_events(thread, 50, timeout=5)  # returns at once: seq 51 exists
    finally:
        await server.close()
        await kernel.close()


async def test_one_process_drives_a_thread_at_a_time(tmp_path: Path, database_url: str) -> None:
    import agent_core.storage.thread_store as store_module

    server, kernel = two_stores(tmp_path, database_url)
    await server.open()
    await kernel.open()
    try:
        thread = (await server.create("nb.ipynb", "t")).thread_id
        assert await kernel.take_lease(thread)
        assert await kernel.take_lease(thread), "the holder renews"
        assert not await server.take_lease(thread) and await server.leased_elsewhere(thread)
        await kernel.release_lease(thread)
        assert not await server.leased_elsewhere(thread) and await server.take_lease(thread)
        # A crashed holder's lease expires.
        await server.release_lease(thread)
        store_module.LEASE_SECONDS, saved = -1.0, store_module.LEASE_SECONDS
        try:
            assert await kernel.take_lease(thread)  # already expired when taken
        finally:
            store_module.LEASE_SECONDS = saved
        assert not await server.leased_elsewhere(thread) and await server.take_lease(thread)
    finally:
        await server.close()
        await kernel.close()
