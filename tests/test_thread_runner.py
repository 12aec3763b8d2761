"""The one driver on its own: `ThreadRunner.start` / `resume` / `stop_pending` over a real store,
checkpointer and the scripted model, in both environments a run acts in: the server's kernels (a
real ipykernel through jupyter_server) and the in-kernel shell of `%agent` (a real IPython shell,
served on this thread while the driver works in another, as the magic does)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from agent_core.config.agent_settings import AgentSettings
from agent_core.contract.routes import Decision, StartRun
from agent_core.loop.thread_runner import BadDecision, NotPending, ThreadRunner
from agent_core.storage.thread_store import ThreadStore
from devtools.fake_llm import FakeLLM, text, tool_call
from tests.conftest import NOTEBOOK

ValueOf = Callable[[str], Awaitable[Any]]


async def _scenario(tmp_path: Path, fake_llm: FakeLLM, env: Any, value_of: ValueOf) -> None:
    """Start, approve, reject with a reason, refuse bad decisions, stop a pending call."""
    threads = ThreadStore(tmp_path / "threads.sqlite", owner="tester", holder="the test")
    await threads.open()
    runner = await ThreadRunner.open(threads, "", tmp_path / "checkpoints.sqlite")
    settings = AgentSettings(
        model="fake", base_url=fake_llm.base_url, api_key="k", max_retries=0, namespace_snapshot=False
    )
    environment = lambda _record: env  # noqa: E731
    seen: list[dict[str, Any]] = []
    try:
        record = await threads.create(NOTEBOOK, "t")
        thread = record.thread_id
        fake_llm.script(
            tool_call("run_cell", {"code": "answer = 41 + 1"}, id="c1"),
            text("Set."),
            tool_call("run_cell", {"code": "answer = 0"}, id="c2"),
            text("Understood."),
            tool_call("run_cell", {"code": "answer = -1"}, id="c3"),
        )
        run = await runner.start(thread, StartRun(message="set answer"), environment, settings, on_event=seen.append)
        assert await run.drive() == "awaiting_approval"
        assert runner.pending(await runner.snapshot(thread))["id"] == "c1"
        with pytest.raises(NotPending):
            await runner.resume(thread, "c9", Decision(decision="approve"), environment, settings)
        with pytest.raises(BadDecision):
            await runner.resume(thread, "c1", Decision(decision="edit", args={"code": 5}), environment, settings)
        run = await runner.resume(
            thread, "c1", Decision(decision="approve"), environment, settings, on_event=seen.append
        )
        assert await run.drive() == "completed"
        assert await value_of("answer") == 42
        assert [e["status"] for e in seen if e["type"] == "cell_finished"] == ["ok"]

        run = await runner.start(thread, StartRun(message="reset it"), environment, settings)
        assert await run.drive() == "awaiting_approval"
        run = await runner.resume(thread, "c2", Decision(decision="reject", reason="keep it"), environment, settings)
        assert await run.drive() == "completed"
        assert await value_of("answer") == 42
        assert "keep it" in [m for m in fake_llm.requests[-1]["messages"] if m["role"] == "tool"][-1]["content"]

        run = await runner.start(thread, StartRun(message="negate"), environment, settings)
        assert await run.drive() == "awaiting_approval"
        assert await runner.stop_pending(thread, run.run_id)
        assert runner.pending(await runner.snapshot(thread)) is None
        with pytest.raises(NotPending):
            await runner.resume(thread, "c3", Decision(decision="approve"), environment, settings)
        assert await value_of("answer") == 42, "a stopped call never runs"
        statuses = [e["status"] for e in await threads.events.events_after(thread, 0) if e["type"] == "run_finished"]
        assert statuses == [
            "awaiting_approval",
            "completed",
            "awaiting_approval",
            "completed",
            "awaiting_approval",
            "cancelled",
        ]
    finally:
        await runner.aclose()
        await threads.close()


async def test_the_server_kernel(tmp_path: Path, fake_llm: FakeLLM, jp_serverapp: Any, notebook_kernel: str) -> None:
    import json

    env = jp_serverapp.web_app.settings["cellwright"].kernel_environment(NOTEBOOK, notebook_kernel)

    async def value_of(name: str) -> Any:
        return json.loads(json.dumps(await env.evaluate_json(f"__import__('json').dumps({name})")))

    await _scenario(tmp_path, fake_llm, env, value_of)


def test_the_in_kernel_shell(tmp_path: Path, fake_llm: FakeLLM) -> None:
    from IPython.core.interactiveshell import InteractiveShell

    from agent_core.kernel_side.shell_environment import MainThread, ShellEnvironment

    shell = InteractiveShell.instance()
    main = MainThread()
    env = ShellEnvironment(shell=shell, main=main, notebook_path=NOTEBOOK, root_dir=tmp_path)

    async def value_of(name: str) -> Any:
        return await main.call(lambda: shell.user_ns[name])

    failure: list[BaseException] = []

    def work() -> None:
        try:
            asyncio.run(_scenario(tmp_path, fake_llm, env, value_of))
        except BaseException as exc:  # reported on the test's thread
            failure.append(exc)

    worker = threading.Thread(target=work)
    worker.start()
    main.serve(worker.is_alive)
    worker.join()
    if failure:
        raise failure[0]
    assert shell.user_ns["answer"] == 42
