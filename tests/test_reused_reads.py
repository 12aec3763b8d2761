"""A thread's newest checkpoint, read for a run's checks and again by LangGraph's loop a moment
later, is deserialized once (agent_core.storage.reused_reads), never at the price of a stale read:
what another process saved in between is what the second read returns. Over the real savers of
both databases, two stores on one database standing for two servers."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint

from tests.checkpoint_stores import checkpoint_stores, config_of, save

pytestmark = pytest.mark.also_postgres


class CountingSerde:
    """The saver's own serializer, counting what it deserializes."""

    def __init__(self, serde: Any) -> None:
        self.serde = serde
        self.loads = 0

    def loads_typed(self, data: Any) -> Any:
        self.loads += 1
        return self.serde.loads_typed(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.serde, name)


@asynccontextmanager
async def two_servers(tmp_path: Path, database_url: str) -> AsyncIterator[tuple[Any, Any]]:
    """Two checkpoint stores on one database, as two servers of one user have: their savers."""
    async with checkpoint_stores(tmp_path, database_url) as (mine, theirs):
        yield mine.saver, theirs.saver


async def test_the_newest_checkpoint_read_again_is_deserialized_once(tmp_path: Path, database_url: str) -> None:
    async with two_servers(tmp_path, database_url) as (saver, _):
        await _read_twice(saver)


async def _read_twice(saver: Any) -> None:
    await save(saver, "t", "first")
    saver.serde = counting = CountingSerde(saver.serde)
    checks = await saver.aget_tuple(config_of("t"))
    after_checks = counting.loads
    assert after_checks > 0 and checks.checkpoint["channel_values"] == {"note": ["first"]}
    loops = await saver.aget_tuple(config_of("t"))  # the run's loop, a moment later
    assert counting.loads == after_checks, "read again, not handed on"
    assert loops.checkpoint == checks.checkpoint and loops.config == checks.config
    # What LangGraph's loop does to the tuple it reads: no other reader sees it, nor the next one.
    loops.checkpoint["channel_versions"]["note"] = "bumped"
    checks.checkpoint["channel_versions"]["note"] = "bumped too"
    again = await saver.aget_tuple(config_of("t"))  # the panel's view of the thread, say
    assert counting.loads == after_checks
    assert again.checkpoint["channel_versions"] == {"note": "first"}


async def test_what_another_server_saved_in_between_is_what_the_next_read_returns(
    tmp_path: Path, database_url: str
) -> None:
    async with two_servers(tmp_path, database_url) as (ours, theirs):
        await _read_after_theirs(ours, theirs)


async def _read_after_theirs(ours: Any, theirs: Any) -> None:
    assert await ours.aget_tuple(config_of("new")) is None  # a new thread: no checkpoint yet
    await save(theirs, "new", "theirs")
    found = await ours.aget_tuple(config_of("new"))
    assert found is not None and found.checkpoint["channel_values"] == {"note": ["theirs"]}

    await save(ours, "t", "ours")
    assert (await ours.aget_tuple(config_of("t"))).checkpoint["channel_values"] == {"note": ["ours"]}
    newer = await save(theirs, "t", "newer")
    found = await ours.aget_tuple(config_of("t"))
    assert found.checkpoint["id"] == newer and found.checkpoint["channel_values"] == {"note": ["newer"]}

    assert (await ours.aget_tuple(config_of("t"))).pending_writes == []
    await theirs.aput_writes(found.config, [("note", "written")], "task-1")  # same checkpoint, a new write
    found = await ours.aget_tuple(config_of("t"))
    assert [(task, channel, value) for task, channel, value in found.pending_writes] == [("task-1", "note", "written")]


async def test_a_checkpoints_history_read_twice_is_deserialized_once(tmp_path: Path, database_url: str) -> None:
    """The messages' history (the writes that led to a checkpoint) is read by the run's checks and
    again by LangGraph's loop: the second read is handed the first's, as what led to a checkpoint
    never changes."""
    async with two_servers(tmp_path, database_url) as (saver, _):
        first = empty_checkpoint()
        stored = await saver.aput(config_of("t"), first, {"step": 1}, {})
        await saver.aput_writes(stored, [("messages", ["hello"])], "task-1")
        second = empty_checkpoint()
        target = await saver.aput(stored, second, {"step": 2}, {})
        saver.serde = counting = CountingSerde(saver.serde)
        checks = await saver.aget_delta_channel_history(config=target, channels=["messages"])
        after_checks = counting.loads
        assert after_checks > 0 and [w[2] for w in checks["messages"]["writes"]] == [["hello"]]
        loops = await saver.aget_delta_channel_history(config=target, channels=["messages"])
        assert counting.loads == after_checks, "read again, not handed on"
        assert loops == checks
