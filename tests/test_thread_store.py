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


async def test_appends_sharing_a_transaction_are_each_stored_as_given(tmp_path: Path, database_url: str) -> None:
    """Appends to two threads that share one transaction (one of them not JSON): each thread's rows
    get its next seqs in call order, each row reads back (from the database, by another process) as
    it was appended with its seq and thread, and the event that cannot be stored fails alone."""
    writer, reader = two_stores(tmp_path, database_url)
    await writer.open()
    await reader.open()
    try:
        a, b = [(await writer.create("nb.ipynb", name)).thread_id for name in "ab"]
        await writer.events.append(a, {"type": "run_started"})
        appends: list[tuple[str, dict[str, object]]] = [
            (a, {"type": "token", "text": "x", "seq": 99, "thread_id": "someone else's"}),
            (b, {"type": "token", "text": "y"}),
            (a, {"type": "tool_result", "value": object()}),
            (a, {"type": "token", "text": "z", "nested": {"seq": 1, "quote": '"seq":'}}),
            (b, {}),
        ]
        results = await asyncio.gather(*(writer.events.append(t, e) for t, e in appends), return_exceptions=True)
        assert isinstance(results[2], TypeError), results[2]
        expected = {
            a: [{"type": "run_started", "seq": 1, "thread_id": a}]
            + [{**appends[i][1], "seq": seq, "thread_id": a} for i, seq in ((0, 2), (3, 3))],
            b: [{**appends[i][1], "seq": seq, "thread_id": b} for i, seq in ((1, 1), (4, 2))],
        }
        for thread, rows in expected.items():
            assert await reader.events.events_after(thread, 0) == rows
        assert [results[i] for i in (0, 1, 3, 4)] == [expected[a][1], expected[b][0], expected[a][2], expected[b][1]]
    finally:
        await writer.close()
        await reader.close()


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
        # A run's start: the lease and the record in one transaction, or neither.
        await server.events.append(thread, {"type": "run_started"})
        assert await server.begin_run(thread, status="running", last_run_id="r1")
        assert not await kernel.begin_run(thread, status="failed", last_run_id="r2"), "the server holds it"
        record = await kernel.get(thread)
        assert record is not None and (record.status, record.last_run_id) == ("running", "r1")
        await server.release_lease(thread)
        assert await kernel.begin_run(thread, status="running", last_run_id="r2")
        record = await server.get(thread)
        assert record is not None and (record.status, record.last_run_id) == ("running", "r2")
        await kernel.events.append(thread, {"type": "token", "text": "mine now"})
        assert [e["seq"] for e in await server.events.events_after(thread, 0)] == [1, 2], "the taker knew the last seq"
    finally:
        await server.close()
        await kernel.close()


HOLD_A_LEASE = """
import asyncio, sys
from pathlib import Path
from agent_core.storage.thread_store import ThreadStore

async def main():
    store = ThreadStore(Path(sys.argv[1]), owner="alice", database_url=sys.argv[2])
    await store.open()
    assert await store.take_lease(sys.argv[3])
    print("held", flush=True)
    await asyncio.sleep(3600)

asyncio.run(main())
"""


async def test_a_killed_holders_lease_is_taken_over_at_once(tmp_path: Path, database_url: str) -> None:
    """A server killed with -9 on this machine leaves its lease behind: another process sees the
    holder has ended and takes the thread at once, not after LEASE_SECONDS."""
    import signal
    import sys

    server = ThreadStore(tmp_path / "threads.sqlite", owner="alice", database_url=database_url)
    await server.open()
    holder = None
    try:
        thread = (await server.create("nb.ipynb", "t")).thread_id
        args = (str(tmp_path / "threads.sqlite"), database_url, thread)
        holder = await asyncio.create_subprocess_exec(
            sys.executable, "-c", HOLD_A_LEASE, *args, stdout=asyncio.subprocess.PIPE
        )
        assert holder.stdout is not None
        assert await asyncio.wait_for(holder.stdout.readline(), 60) == b"held\n"
        assert await server.leased_elsewhere(thread) and not await server.take_lease(thread), "a live holder keeps it"

        holder.send_signal(signal.SIGKILL)
        await holder.wait()
        assert await server.leased_elsewhere(thread) is None
        assert await server.take_lease(thread), "taken over at once: the holder has ended"
    finally:
        if holder is not None and holder.returncode is None:
            holder.kill()
            await holder.wait()
        await server.close()


def test_only_a_process_of_this_machine_that_has_ended_counts_as_ended() -> None:
    import os

    from agent_core.storage.process_names import has_ended, new_process_name

    mine = new_process_name()
    assert not has_ended(mine), "this process runs"
    uuid_part, place, pid, start = mine.split("/")
    assert has_ended("/".join((uuid_part, place, pid, str(int(start) + 1)))), "the pid reused by a newer process"
    assert not has_ended("/".join((uuid_part, "elsewhere", pid, "1"))), "another machine's: cannot tell"
    assert not has_ended(uuid_part) and not has_ended(""), "a name from before process names"
    assert str(os.getpid()) == pid


async def test_a_quick_call_on_sqlite_is_answered_at_once_on_the_loops_thread(tmp_path: Path) -> None:
    """A thread's record is read without a hop to the store's thread: the call never suspends."""
    store = ThreadStore(tmp_path / "threads.sqlite", owner="alice")
    await store.open()
    try:
        thread = (await store.create("nb.ipynb", "t")).thread_id
        reading = store.get(thread)
        with pytest.raises(StopIteration) as answered:
            reading.send(None)
        assert answered.value.value.title == "t"
    finally:
        await store.close()


async def test_a_quick_write_that_would_wait_for_another_writer_waits_on_the_stores_thread(tmp_path: Path) -> None:
    """While another process (a kernel's %agent) holds the file's write lock, a quick write neither
    fails nor blocks the event loop: it waits its turn on the store's thread, then lands."""
    import sqlite3

    store = ThreadStore(tmp_path / "threads.sqlite", owner="alice")
    await store.open()
    kernel = sqlite3.connect(tmp_path / "threads.sqlite", isolation_level=None, check_same_thread=False)
    try:
        thread = (await store.create("nb.ipynb", "t")).thread_id
        kernel.execute("BEGIN IMMEDIATE")
        updating = asyncio.create_task(store.update(thread, title="renamed"))
        ticks = 0
        with pytest.raises(TimeoutError):  # it cannot land while the lock is held
            async with asyncio.timeout(0.3):
                while True:
                    ticks += 1
                    await asyncio.sleep(0)
        assert ticks > 10, "the event loop went on meanwhile"
        assert not updating.done()
        kernel.execute("COMMIT")
        await asyncio.wait_for(updating, 10)
        assert (await store.get(thread)).title == "renamed"
    finally:
        kernel.close()
        await store.close()
