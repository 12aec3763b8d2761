"""The SQLite saver reads a thread's state at once on the loop's own connection (issue 41): the newest
checkpoint, its messages' history and the tool ledger's lookup before an approved cell answer without
a hop to the connection's thread; a read made while a write of this process is under way waits for
that write, as it did; and what another server committed is what the read returns."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from agent_core.tools.base import ToolOutcome
from tests.checkpoint_stores import checkpoint_stores, config_of, save, start_save


def _at_once(coroutine: Any) -> Any:
    """The coroutine's result if it finishes without suspending (no hop to a thread); fails if not."""
    with pytest.raises(StopIteration) as answered:
        coroutine.send(None)
    return answered.value.value


async def test_the_newest_checkpoint_its_history_and_the_ledger_are_read_at_once(tmp_path: Path) -> None:
    async with checkpoint_stores(tmp_path, "", 1) as (store,):
        saver = store.saver
        await save(saver, "t1", "first")
        await save(saver, "t1", "second")
        found = _at_once(saver.aget_tuple(config_of("t1")))
        assert found.checkpoint["channel_values"]["note"] == ["second"]
        history = _at_once(saver.aget_delta_channel_history(config=found.config, channels=["note"]))
        assert set(history) == {"note"}
        assert _at_once(store.ledger.lookup("t1", "call-1")) is None
        _at_once(store.ledger.started("t1", "call-1"))  # before every approved cell: no hop either
        assert _at_once(store.ledger.lookup("t1", "call-1")) is not None, "started: a crash now never reruns it"
        await store.ledger.finished("t1", "call-1", ToolOutcome("ok", content="done"))
        assert _at_once(store.ledger.lookup("t1", "call-1")).content == "done"


async def test_a_read_while_a_write_of_this_process_is_under_way_sees_that_write(tmp_path: Path) -> None:
    async with checkpoint_stores(tmp_path, "", 1) as (store,):
        saver = store.saver
        await save(saver, "t1", "first")
        saving = asyncio.ensure_future((await start_save(saver, "t1", "second"))[1])
        await asyncio.sleep(0)  # the save has started: its statements are queued on the connection's thread
        found = await saver.aget_tuple(config_of("t1"))
        assert found.checkpoint["channel_values"]["note"] == ["second"], "read before the save committed"
        await saving
        ledger = store.ledger
        recording = asyncio.ensure_future(ledger.finished("t1", "call-2", ToolOutcome("ok", content="ran")))
        await asyncio.sleep(0)
        outcome = await ledger.lookup("t1", "call-2")
        assert outcome is not None and outcome.content == "ran", "a cell recorded as run would run again"
        await recording


async def test_what_another_server_committed_is_what_the_read_returns(tmp_path: Path) -> None:
    async with checkpoint_stores(tmp_path, "") as (mine, theirs):
        await save(mine.saver, "t1", "mine")
        await save(mine.saver, "t1", "mine again")
        found = await mine.saver.aget_tuple(config_of("t1"))
        assert found.checkpoint["channel_values"]["note"] == ["mine again"]
        # Every kind of read at once first: none may leave a read open that pins an old snapshot.
        await mine.saver.aget_delta_channel_history(config=found.config, channels=["note"])
        await mine.ledger.lookup("t1", "call-3")
        await save(theirs.saver, "t1", "theirs")
        found = _at_once(mine.saver.aget_tuple(config_of("t1")))
        assert found.checkpoint["channel_values"]["note"] == ["theirs"]
        await theirs.ledger.finished("t1", "call-3", ToolOutcome("ok", content="ran there"))
        assert _at_once(mine.ledger.lookup("t1", "call-3")).content == "ran there"


async def test_a_start_recorded_while_another_connection_writes_waits_and_lands(tmp_path: Path) -> None:
    """The ledger's `started` row is written at once unless another writer holds the file (a save of
    another server, a kernel's %agent): then it waits its turn on the connection's thread, and lands."""
    import sqlite3

    async with checkpoint_stores(tmp_path, "", 1) as (store,):
        other = sqlite3.connect(tmp_path / "checkpoints.sqlite", isolation_level=None, check_same_thread=False)
        try:
            other.execute("BEGIN IMMEDIATE")
            starting = asyncio.ensure_future(store.ledger.started("t1", "call-9"))
            for _ in range(20):  # the loop goes on meanwhile: the write waits on the connection's thread
                await asyncio.sleep(0)
            assert not starting.done(), "it waits for the other writer (and did not fail)"
            other.execute("COMMIT")
            await asyncio.wait_for(starting, 10)
        finally:
            other.close()
        assert await store.ledger.lookup("t1", "call-9") is not None
