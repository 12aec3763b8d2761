"""The RunManager on its own (no HTTP): runs, decisions, stops and the stream readers follow, over a
real ThreadStore, checkpointer and the scripted model. The routes' tests cover the HTTP side."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from agent_core.config.agent_settings import AgentSettings
from agent_core.contract.bodies import StartRun
from agent_core.storage.thread_store import ThreadStore
from devtools.fake_llm import FakeLLM, text, tool_call
from jupyter_ext.errors import BadRequest, Conflict
from jupyter_ext.run_manager import RunManager
from jupyter_ext.thread_following import RUN_FINISHED_GRACE, StreamItem
from tests.tools_env import FolderEnv


@asynccontextmanager
async def run_manager(tmp_path: Path, fake_llm: FakeLLM, database_url: str = "") -> AsyncIterator[RunManager]:
    threads = ThreadStore(
        tmp_path / "threads.sqlite", owner="tester", holder="the test server", database_url=database_url
    )
    await threads.open()
    settings = AgentSettings(model="fake", base_url=fake_llm.base_url, api_key="k", max_retries=0)
    runs = RunManager(threads, lambda: settings, lambda *_: FolderEnv(tmp_path), "", tmp_path / "checkpoints.sqlite")
    try:
        yield runs
    finally:
        await runs.shutdown()
        await threads.close()


async def followed(runs: RunManager, thread_id: str, after: int = 0) -> list[StreamItem]:
    return [item async for item in runs.follow(thread_id, after)]


async def test_a_run_streams_its_backlog_then_caught_up_then_ends(tmp_path: Path, fake_llm: FakeLLM) -> None:
    async with run_manager(tmp_path, fake_llm) as manager:
        fake_llm.script(text(["The answer ", "is 42."]))
        record = await manager.threads.create("n.ipynb", "t")
        await manager.start_run(record.thread_id, StartRun(message="hi"))
        items = await asyncio.wait_for(followed(manager, record.thread_id), 30)
        kinds = [item.event["type"] if item.event else item.kind for item in items]
        assert kinds.count("caught_up") == 1, "the end of the (here empty) backlog, once"
        events = [kind for kind in kinds if kind not in ("caught_up", "ping")]
        assert events[0] == "run_started" and events[-1] == "run_finished"
        last = items[-1].event["seq"]  # type: ignore[index]
        later = await followed(manager, record.thread_id, after=last)
        assert [(i.kind, (i.event or {}).get("seq")) for i in later] == [("caught_up", last)], (
            "nothing new: caught up, then the end"
        )


async def test_decisions_and_stops_are_checked_against_the_thread(tmp_path: Path, fake_llm: FakeLLM) -> None:
    async with run_manager(tmp_path, fake_llm) as manager:
        from agent_core.contract.bodies import Decision

        fake_llm.script(tool_call("write_file", {"path": "a.txt", "content": "x"}, id="w1"))
        record = await manager.threads.create("n.ipynb", "t")
        await manager.start_run(record.thread_id, StartRun(message="write"))
        await asyncio.wait_for(followed(manager, record.thread_id), 30)
        with pytest.raises(Conflict) as refused:
            await manager.decide(record.thread_id, "other", Decision(decision="approve"))
        assert refused.value.kind == "not_pending"
        with pytest.raises(BadRequest) as bad:
            await manager.decide(record.thread_id, "w1", Decision(decision="edit", args={"nope": 1}))
        assert bad.value.kind == "bad_args"
        with pytest.raises(Conflict) as pending:
            await manager.start_run(record.thread_id, StartRun(message="again"))
        assert pending.value.kind == "approval_pending"
        await manager.cancel(record.thread_id)
        detail = await manager.thread_detail(record.thread_id)
        assert detail.pending_approval is None and detail.status == "cancelled"


async def test_a_lease_held_elsewhere_refuses_start_stop_and_delete(tmp_path: Path, fake_llm: FakeLLM) -> None:
    async with run_manager(tmp_path, fake_llm) as manager:
        record = await manager.threads.create("n.ipynb", "t")
        kernel = ThreadStore(tmp_path / "threads.sqlite", owner="tester", holder="a %agent call in kernel 7")
        await kernel.open()
        try:
            assert await kernel.take_lease(record.thread_id)
            for attempt in (
                manager.start_run(record.thread_id, StartRun(message="hi")),
                manager.cancel(record.thread_id),
                manager.delete_thread(record.thread_id),
            ):
                with pytest.raises(Conflict) as refused:
                    await attempt
                assert refused.value.kind == "run_active" and "kernel 7" in refused.value.message
        finally:
            await kernel.close()


async def test_live_only_events_reach_a_follower_in_order(tmp_path: Path, fake_llm: FakeLLM) -> None:
    async with run_manager(tmp_path, fake_llm) as manager:
        record = await manager.threads.create("n.ipynb", "t")
        first = await manager.threads.events.append(record.thread_id, {"type": "token", "text": "a"})
        manager.threads.events.publish_live(
            record.thread_id, {"type": "cell_output", "id": "c", "output": {}, "live_only": True}
        )
        await manager.threads.events.append(record.thread_id, {"type": "token", "text": "b"})
        items = await followed(manager, record.thread_id, after=0)
        order = [(item.event or {}).get("type") for item in items if item.kind == "event"]
        assert order == ["token", "cell_output", "token"] and items[1].stored is False
        assert first["seq"] == 1


def _sqlite_workers() -> set[threading.Thread]:
    """aiosqlite's connection threads (daemons since open_store makes them so: still an open file each)."""
    return {t for t in threading.enumerate() if "_connection_worker_thread" in t.name}


def _still_running(workers: set[threading.Thread]) -> list[str]:
    """The workers that do not end: a closed connection's thread ends right after the close's reply."""
    for worker in workers:
        worker.join(timeout=5)
    return [worker.name for worker in workers if worker.is_alive()]


async def test_a_shutdown_while_the_checkpointer_opens_closes_it(tmp_path: Path, fake_llm: FakeLLM) -> None:
    """A server stopped while recovery opens the checkpointer: its aiosqlite connection must not
    outlive the server (its thread, before open_store made it a daemon, kept a CI run from ever ending)."""
    before = _sqlite_workers()
    async with run_manager(tmp_path, fake_llm) as manager:
        opening = asyncio.create_task(manager.runner())
        await asyncio.sleep(0)  # the open has begun and holds the lock
        await manager.shutdown()
        await opening
        assert _still_running(_sqlite_workers() - before) == [], "the shutdown closed the runner it waited for"


@pytest.mark.postgres
async def test_a_follower_of_a_run_elsewhere_gets_the_run_finished_written_after_the_lease_goes(
    tmp_path: Path, fake_llm: FakeLLM, postgres_url: str
) -> None:
    """Another server drives the thread; it releases its lease, then writes run_finished (so a client
    acting on that event finds the thread free). The follower here must not end in between."""
    async with run_manager(tmp_path, fake_llm, postgres_url) as manager:
        thread = (await manager.threads.create("n.ipynb", "t")).thread_id
        other = ThreadStore(tmp_path / "unused", owner="tester", holder="another server", database_url=postgres_url)
        await other.open()
        try:
            assert await other.take_lease(thread)
            await other.events.append(thread, {"type": "run_started"})
            seen: list[str] = []

            async def read() -> None:
                async for batch in manager.follow_batches(thread, 0):
                    seen.extend(item.event["type"] for item in batch if item.event)

            in_grace = asyncio.Event()  # the follower waits for the run_finished after the lease went (white-box)
            wait_for_events = manager.threads.events.wait_for_events

            async def noted_wait(thread_id: str, after: int, timeout: float, **kwargs: Any) -> None:
                if timeout == RUN_FINISHED_GRACE:
                    in_grace.set()
                await wait_for_events(thread_id, after, timeout, **kwargs)

            manager.threads.events.wait_for_events = noted_wait  # type: ignore[method-assign]
            reading = asyncio.ensure_future(read())
            # Until the follower waits for what comes next (white-box: the log's waiting readers).
            deadline = asyncio.get_running_loop().time() + 10
            while thread not in manager.threads.events._waiting:
                assert not reading.done() and asyncio.get_running_loop().time() < deadline, seen
                await asyncio.sleep(0.01)
            assert seen == ["run_started", "caught_up"]
            await other.release_lease(thread)
            # The window under test: the follower saw the lease go and waits for the run_finished.
            await asyncio.wait_for(in_grace.wait(), 10)
            assert not reading.done(), seen
            await other.events.append(thread, {"type": "run_finished", "status": "completed"})
            await asyncio.wait_for(reading, 10)
            assert seen == ["run_started", "caught_up", "run_finished"]
        finally:
            await other.close()
