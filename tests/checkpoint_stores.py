"""Checkpoint stores for the saver tests: several on one database, as several servers (or a server
and a kernel) of one user have, and checkpoints whose one channel holds a note."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import empty_checkpoint

from agent_core.storage.checkpoint import AgentStore, open_store
from agent_core.storage.thread_store import ThreadStore


@asynccontextmanager
async def checkpoint_stores(tmp_path: Path, database_url: str, n: int = 2) -> AsyncIterator[list[AgentStore]]:
    """`n` checkpoint stores (savers and tool ledgers) on one database ("": one SQLite file)."""
    threads = [ThreadStore(tmp_path / f"threads{i}.sqlite", owner="alice", database_url=database_url) for i in range(n)]
    stores: list[AgentStore] = []
    try:
        for thread_store in threads:
            await thread_store.open()
            stores.append(await open_store(database_url, tmp_path / "checkpoints.sqlite", thread_store.database))
        yield stores
    finally:
        for store in stores:
            await store.aclose()
        for thread_store in threads:
            await thread_store.close()


def config_of(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}


async def start_save(saver: Any, thread: str, note: str) -> tuple[str, Awaitable[Any]]:
    """A checkpoint of `thread` after its newest, whose one channel holds [`note`] (a list: PostgreSQL
    keeps it as a blob, as it keeps messages): its id, and its save, not awaited yet."""
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"note": [note]}
    checkpoint["channel_versions"] = {"note": note}
    newest = await saver.aget_tuple(config_of(thread))
    config = newest.config if newest is not None else config_of(thread)
    return checkpoint["id"], saver.aput(config, checkpoint, {"step": 1}, {"note": note})


async def save(saver: Any, thread: str, note: str) -> str:
    """As start_save, saved; its id."""
    checkpoint_id, saving = await start_save(saver, thread, note)
    await saving
    return checkpoint_id
