"""A run saves its steps in the background (durability "async": the model is asked while the user's
message is saved), yet nothing a tool does happens before the model's call is saved: the tools node
waits for its step's checkpoint (agent_core.storage.step_saves). Over real savers: LangGraph's
in-memory one held at a gate, and the SQLite checkpointer of a real run, held and slowed."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from agent_core.config.agent_settings import AgentSettings
from agent_core.contract.bodies import StartRun
from agent_core.loop.thread_runner import ThreadRunner
from agent_core.storage.step_saves import SaveFailed, with_step_saves
from agent_core.storage.thread_store import ThreadStore
from devtools.fake_llm import FakeLLM, text, tool_call
from tests.conftest import NOTEBOOK

CONFIG = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}


class GatedSaver(InMemorySaver):
    """LangGraph's in-memory saver whose saves wait at a gate (a slow database) or fail there."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()
        self.arrived = asyncio.Event()
        self.failure: Exception | None = None

    async def aput(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        self.arrived.set()
        await self.gate.wait()
        if self.failure is not None:
            raise self.failure
        return await super().aput(config, checkpoint, metadata, new_versions)


async def _held(saver: Any, checkpoint_id: str) -> asyncio.Task[None]:
    """A waiter for `checkpoint_id`, checked to be still waiting once the save is at the gate."""
    waiter = asyncio.create_task(saver.until_saved("t", "", checkpoint_id))
    await saver.arrived.wait()
    for _ in range(20):  # every ready callback of the loop runs: the waiter has had every chance
        await asyncio.sleep(0)
    assert not waiter.done(), "returned before the checkpoint was saved"
    return waiter


async def test_a_waiter_returns_once_its_checkpoint_is_saved() -> None:
    saver = with_step_saves(GatedSaver)()
    checkpoint = empty_checkpoint()
    saving = asyncio.create_task(saver.aput(CONFIG, checkpoint, {"step": 1}, {}))
    waiter = await _held(saver, checkpoint["id"])
    saver.gate.set()
    await asyncio.wait_for(waiter, 5)
    await saving
    await asyncio.wait_for(saver.until_saved("t", "", checkpoint["id"]), 5)  # saved: at once
    fresh = with_step_saves(InMemorySaver)()  # a process that never saw the save: the database says
    fresh.storage, fresh.writes, fresh.blobs = saver.storage, saver.writes, saver.blobs
    await asyncio.wait_for(fresh.until_saved("t", "", checkpoint["id"]), 5)


async def test_a_failed_save_fails_its_waiter() -> None:
    saver = with_step_saves(GatedSaver)()
    saver.failure = OSError("disk full")
    checkpoint = empty_checkpoint()
    saving = asyncio.create_task(saver.aput(CONFIG, checkpoint, {"step": 1}, {}))
    waiter = await _held(saver, checkpoint["id"])
    saver.gate.set()
    with pytest.raises(SaveFailed, match="disk full"):
        await asyncio.wait_for(waiter, 5)
    with pytest.raises(OSError):
        await saving


SLOW_SAVE_SECONDS = 0.3


class SlowSqliteSaver(with_step_saves(AsyncSqliteSaver)):  # type: ignore[misc]
    """The SQLite checkpointer on a slow disk: each save takes SLOW_SAVE_SECONDS more, and none is
    made while the gate is closed. `saved`: each save's graph ("": the thread's own, else a
    sub-agent's namespace in it) and step, in the order they were made."""

    saved: list[tuple[str, int]]
    gate: asyncio.Event

    async def aput(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        await self.gate.wait()
        await asyncio.sleep(SLOW_SAVE_SECONDS)
        stored = await super().aput(config, checkpoint, metadata, new_versions)
        self.saved.append((config["configurable"].get("checkpoint_ns", ""), metadata["step"]))
        return stored


Seen = list[tuple[dict[str, Any], list[tuple[str, int]]]]  # each event, with the saves made when it came


async def _runs_on_a_slow_disk(
    tmp_path: Path, fake_llm: FakeLLM, env: Any, request: StartRun, script: Callable[[str], list[dict[str, Any]]]
) -> Seen:
    """A warm-up run, then the measured one, each of `script(suffix of its call ids)` on a thread whose
    saves are held until the model's first answer, then slowed; the measured run's events (ids "...1")."""
    threads = ThreadStore(tmp_path / "threads.sqlite", owner="tester", holder="the test")
    await threads.open()
    runner = await ThreadRunner.open(threads, "", tmp_path / "checkpoints.sqlite")
    runner.store.saver.__class__ = SlowSqliteSaver  # the same connection, saving slowly
    saver = runner.store.saver
    saver.saved, saver.gate = [], asyncio.Event()
    settings = AgentSettings(
        model="fake", base_url=fake_llm.base_url, api_key="k", max_retries=0, namespace_snapshot=False
    )
    seen: Seen = []

    def on_event(event: dict[str, Any]) -> None:
        seen.append((event, list(saver.saved)))
        if event["type"] == "usage":  # the model answered: saves may go on
            saver.gate.set()

    try:
        record = await threads.create(NOTEBOOK, "t")
        for n in range(2):  # the first run also loads what a process's first model call needs
            seen.clear()
            saver.gate.clear()
            fake_llm.script(*script(str(n)))
            run = await runner.start(record.thread_id, request, lambda _r: env, settings, on_event)
            # The model is asked while nothing can be saved: a run that waited for a save first never ends.
            assert await asyncio.wait_for(run.drive(), 60) == "completed"
        state = await runner.snapshot(record.thread_id)
        assert [m["role"] for m in state.values["messages"]][-3:] == ["assistant", "tool", "assistant"]
        return seen
    finally:
        await runner.aclose()
        await threads.close()


def _saves_when(seen: Seen, kind: str, call_id: str | None = None) -> list[tuple[str, int]]:
    return next(saves for event, saves in seen if event["type"] == kind and call_id in (None, event.get("id")))


@pytest.fixture
def kernel_env(jp_serverapp: Any, notebook_kernel: str) -> Any:
    return jp_serverapp.web_app.settings["cellwright"].kernel_environment(NOTEBOOK, notebook_kernel)


async def test_a_tool_runs_only_once_the_models_call_is_saved(
    tmp_path: Path, fake_llm: FakeLLM, kernel_env: Any
) -> None:
    def script(n: str) -> list[dict[str, Any]]:
        return [tool_call("list_files", {"path": "."}, id=f"l{n}"), text("Listed.")]

    seen = await _runs_on_a_slow_disk(tmp_path, fake_llm, kernel_env, StartRun(message="what is here?"), script)
    before = len(_saves_when(seen, "run_started"))
    # The tool ran only once its step was saved: the input, the start and the model's call.
    own = [step for graph, step in _saves_when(seen, "tool_result", "l1")[before:] if not graph]
    assert len(own) >= 3, seen


async def test_a_sub_agents_tool_runs_only_once_its_models_call_is_saved(
    tmp_path: Path, fake_llm: FakeLLM, kernel_env: Any
) -> None:
    def script(n: str) -> list[dict[str, Any]]:
        return [
            tool_call("task", {"agent": "researcher", "description": "list the files"}, id=f"t{n}"),
            tool_call("list_files", {"path": "."}, id=f"l{n}"),
            text("There are files."),
            text("Done."),
        ]

    request = StartRun(message="what is here?", mode="multi")
    seen = await _runs_on_a_slow_disk(tmp_path, fake_llm, kernel_env, request, script)
    # The sub-agent's graph saves under its task's namespace: its input, start and model's call.
    before = len(_saves_when(seen, "run_started"))
    own = [step for graph, step in _saves_when(seen, "tool_result", "l1")[before:] if graph]
    assert own[:3] == [-1, 0, 1], seen
