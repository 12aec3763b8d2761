"""Red team, server side: one test per finding of the trust issue (its number in the name). Each
failed on the code before the fix. Real server, real kernels, the scripted model."""

from __future__ import annotations

import asyncio
import json
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from devtools.fake_llm import FakeLLM, text, tool_call
from devtools.sse import parse_sse
from tests.conftest import Api, of_type


async def _app(jp_serverapp: Any) -> Any:
    return jp_serverapp.web_app.settings["cellwright"]


async def _wait_for(
    jp_serverapp: Any, thread: str, kind: str, timeout: float = 30, call_id: str | None = None
) -> list[dict[str, Any]]:
    """The stored events once one of `kind` is there (of the call `call_id`, when given: an earlier
    run's does not count); the stream itself stays open until the run ends."""
    threads = (await _app(jp_serverapp)).threads
    events: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        events = await threads.events.events_after(thread, 0)
        if any(call_id is None or e.get("id") == call_id for e in of_type(events, kind)):
            return events
        await asyncio.sleep(0.05)
    raise AssertionError(f"no {kind} event within {timeout} s: {[e['type'] for e in events]}")


# -- 7: bounded storage


async def test_finding_7_token_deltas_are_coalesced(api: Api, fake_llm: FakeLLM, jp_serverapp: Any) -> None:
    words = [f"w{i} " for i in range(2000)]
    fake_llm.script(text(words, chunk_delay=0.0005))
    thread = await api.new_thread()
    await api.run(thread, "talk")
    events = await api.until_finished(thread)
    tokens = of_type(events, "token")
    assert "".join(e["text"] for e in tokens) == "".join(words), "nothing lost or reordered"
    assert len(tokens) <= 2000 // 10, f"{len(tokens)} token rows for 2000 deltas"
    assert all(len(e["text"]) <= 1024 + 16 for e in tokens)


async def test_finding_7_a_cells_stored_output_is_capped_and_live_readers_get_it_all(
    api: Api, fake_llm: FakeLLM, notebook_kernel: str, jp_serverapp: Any
) -> None:
    await api.call("PUT", "config", {"auto_approve": ["run_cell"]}, expect=200)
    fake_llm.script(tool_call("run_cell", {"code": "for i in range(20000): print(i)"}, id="big"), text("done"))
    thread = await api.new_thread()
    await api.run(thread, "print a lot")
    code, body = await api.call("GET", f"threads/{thread}/events", request_timeout=120)  # connected live, to the end
    live_view = parse_sse(body, live=True)
    streamed = "".join(
        e["output"].get("text", "") for e in of_type(live_view, "cell_output") if not e.get("overflow_summary")
    )
    assert streamed == "".join(f"{i}\n" for i in range(20000)), "a live reader (the notebook) gets every line"

    stored = await api.events(thread)  # a reader after the fact: only what was stored
    outputs = of_type(stored, "cell_output")
    stored_bytes = sum(len(json.dumps(e)) for e in stored)
    assert stored_bytes < 200_000, f"{stored_bytes} bytes stored for one cell"
    text_stored = "".join(e["output"].get("text", "") for e in outputs)
    assert text_stored.startswith("0\n1\n2\n") and text_stored.endswith("19998\n19999\n")
    assert "lines omitted" in text_stored
    assert all(e.get("overflow_summary") for e in outputs if "omitted" in e["output"].get("text", ""))


# -- 8: request bodies


async def test_finding_8_deep_and_huge_bodies_get_clear_4xx(api: Api) -> None:
    thread = await api.new_thread()
    deep = "[" * 100_000 + "]" * 100_000
    code, data = await api.call("POST", f"threads/{thread}/runs", deep)
    assert (code, data["error"]) == (400, "bad_json") and "nested" in data["message"]
    nested = json.dumps({"message": "hi", "x": json.loads("[" * 200 + "]" * 200)})
    code, data = await api.call("POST", f"threads/{thread}/runs", nested)
    assert (code, data["error"]) == (400, "bad_json")
    huge = json.dumps({"message": "a" * (9 * 1024 * 1024)})
    code, data = await api.call("POST", f"threads/{thread}/runs", huge)
    assert (code, data["error"]) == (413, "body_too_large") and "limit" in data["message"]
    code, data = await api.call("POST", f"threads/{thread}/runs", {"message": "a" * 300_000})
    assert code == 400 and "message" in data["message"], "a message past its own limit is not sent to the model"


# -- 9: notebook_path


async def test_finding_9_thread_notebook_path_outside_the_root_is_refused(
    api: Api, jp_root_dir: Path, tmp_path: Path
) -> None:
    for path in ("../../etc/passwd.ipynb", "/etc/passwd.ipynb", "a/../../x.ipynb"):
        code, data = await api.call("POST", "threads", {"notebook_path": path})
        assert (code, data["error"]) == (400, "path_outside_root"), path
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (jp_root_dir / "link").symlink_to(outside)
    code, data = await api.call("POST", "threads", {"notebook_path": "link/n.ipynb"})
    assert (code, data["error"]) == (400, "path_outside_root")
    code, data = await api.call("POST", "threads", {"notebook_path": "sub/n.ipynb"})
    assert code == 201 and data["notebook_path"] == "sub/n.ipynb"


# -- 10: secrets in URLs, private files


@pytest.fixture
def cellwright_config(fake_llm: FakeLLM, tmp_path: Any) -> dict[str, Any]:
    # Credentials in base_url (what finding 10 is about); the fake server ignores them.
    base = fake_llm.base_url.replace("http://", "http://alice:hunter2@")
    return {
        "model": "fake-model",
        "base_url": base,
        "api_key": "sk-test-secret-key",
        "data_dir": str(tmp_path / "cellwright-data"),
        "request_timeout": 10.0,
        "max_retries": 0,
    }


async def test_finding_10_credentials_in_base_url_never_reach_events(
    api: Api, fake_llm: FakeLLM, jp_serverapp: Any
) -> None:
    fake_llm.stop()  # unreachable: the error names the endpoint
    thread = await api.new_thread()
    await api.run(thread, "hello")
    events = await api.until_finished(thread)
    errors = of_type(events, "error")
    assert errors and "***@" in errors[-1]["message"], errors
    app = await _app(jp_serverapp)
    stored = b"".join(p.read_bytes() for p in Path(app.configuration.data_dir).glob("threads.sqlite*"))
    assert b"hunter2" not in stored and "hunter2" not in json.dumps(events)
    _, config = await api.call("GET", "config")
    assert "hunter2" not in json.dumps(config)


async def test_finding_10_data_files_are_owner_only(api: Api, fake_llm: FakeLLM, jp_serverapp: Any) -> None:
    fake_llm.script(text("hi"))
    thread = await api.new_thread()
    await api.run(thread, "hello")
    await api.until_finished(thread)
    await api.call("PUT", "config", {"model": "fake-model"}, expect=200)
    data = Path((await _app(jp_serverapp)).configuration.data_dir)
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    for name in ("threads.sqlite", "checkpoints.sqlite", "settings.json"):
        assert stat.S_IMODE((data / name).stat().st_mode) == 0o600, name


# -- 11 and 12: Stop ends with an idle kernel; an approved cell waits for a busy kernel


def _kernel_state(jp_serverapp: Any, kernel_id: str) -> str:
    return jp_serverapp.kernel_manager.get_kernel(kernel_id).execution_state


async def _state_within(jp_serverapp: Any, kernel_id: str, state: str, seconds: float) -> float:
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        if _kernel_state(jp_serverapp, kernel_id) == state:
            return time.monotonic() - started
        await asyncio.sleep(0.05)
    raise AssertionError(
        f"the kernel was still {_kernel_state(jp_serverapp, kernel_id)} after {seconds} s, not {state}"
    )


@pytest.fixture
def cpu_load() -> Any:
    """Two busy processes: CI's 2 cores under load, where a single SIGINT was seen to be lost."""
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    yield
    for burner in burners:
        burner.kill()
        burner.wait()


async def test_finding_11_stop_always_leaves_the_kernel_idle(
    api: Api, fake_llm: FakeLLM, notebook_kernel: str, jp_serverapp: Any, cpu_load: Any
) -> None:
    await api.call("PUT", "config", {"auto_approve": ["run_cell"]}, expect=200)
    thread = await api.new_thread()
    for attempt in range(10):
        fake_llm.script(
            tool_call("run_cell", {"code": "import time\nfor _ in range(600): time.sleep(0.1)"}, id=f"long{attempt}")
        )
        await api.run(thread, f"sleep {attempt}")
        events = await _wait_for(jp_serverapp, thread, "cell_started", call_id=f"long{attempt}")
        # The cell runs (its minute of sleeps) when Stop comes; on a loaded machine that can take a moment.
        await _state_within(jp_serverapp, notebook_kernel, "busy", 10.0)
        code, _ = await api.call("POST", f"threads/{thread}/cancel", {})
        assert code == 202
        took = await _state_within(jp_serverapp, notebook_kernel, "idle", 5.0)
        finished = of_type(await api.until_finished(thread, after=events[-1]["seq"] if events else 0), "run_finished")
        assert finished[-1]["status"] == "cancelled", (attempt, took)
        result = [e for e in await api.events(thread) if e["type"] == "tool_result" and e["id"] == f"long{attempt}"]
        assert result and result[-1]["stopped"] is True


async def _run_user_cell(jp_serverapp: Any, kernel_id: str, code: str) -> tuple[Any, str]:
    """The user's own cell, sent by another client (JupyterLab's, in real life)."""
    from jupyter_client.session import Session

    manager = jp_serverapp.kernel_manager.get_kernel(kernel_id)
    client = manager.client(session=Session(key=manager.session.key))  # its own identity, as a browser tab has
    client.start_channels()
    await client.wait_for_ready(timeout=30)
    return client, client.execute(code)


async def _reply(client: Any, msg_id: str, timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        msg = await client.get_shell_msg(timeout=deadline - time.monotonic())
        if msg["parent_header"].get("msg_id") == msg_id:
            return msg["content"]
    raise AssertionError("no reply")


async def test_finding_12_an_approved_cell_waits_for_a_busy_kernel(
    api: Api, fake_llm: FakeLLM, notebook_kernel: str, jp_serverapp: Any, monkeypatch: Any, tmp_path: Path
) -> None:
    import jupyter_ext.kernel_executor as executor

    monkeypatch.setattr(executor, "READY_SECONDS", 2.0)  # so the old 30 s failure mode would show fast
    release = tmp_path / "release"
    # The user's cell runs until the test releases it: as long as the run up to the card takes, and then
    # longer than READY_SECONDS. It says when it has started.
    wait = f"while not os.path.exists({str(release)!r}): time.sleep(0.05)"
    code = f"import os, time\nprint('started', flush=True)\n{wait}\nuser_done = 1"
    client, user_cell = await _run_user_cell(jp_serverapp, notebook_kernel, code)
    try:
        while (await client.get_iopub_msg(timeout=10))["msg_type"] != "stream":
            pass
        fake_llm.script(tool_call("run_cell", {"code": "print('agent', user_done)"}, id="queued"), text("ok"))
        thread = await api.new_thread()
        await api.run(thread, "go")
        first = await api.until_finished(thread)
        await api.approve(thread, "queued")
        await _wait_for(jp_serverapp, thread, "cell_started", call_id="queued")
        await asyncio.sleep(executor.READY_SECONDS + 0.5)  # the old failure: the approved cell gave up here
        release.touch()
        second = await api.until_finished(thread, after=first[-1]["seq"])
        starts = of_type(second, "cell_started")
        assert starts[0]["waiting_for_kernel"] is True and starts[-1]["waiting_for_kernel"] is False
        assert "".join(o["output"].get("text", "") for o in of_type(second, "cell_output")) == "agent 1\n"
        assert (await _reply(client, user_cell, 10))["status"] == "ok"
    finally:
        release.touch()
        client.stop_channels()


async def test_finding_12_stop_while_waiting_leaves_the_users_cell_alone(
    api: Api, fake_llm: FakeLLM, notebook_kernel: str, jp_serverapp: Any
) -> None:
    await api.call("PUT", "config", {"auto_approve": ["run_cell"]}, expect=200)
    client, user_cell = await _run_user_cell(jp_serverapp, notebook_kernel, "import time; time.sleep(4); user_done = 1")
    try:
        await asyncio.sleep(0.5)
        fake_llm.script(tool_call("run_cell", {"code": "agent_ran = 1"}, id="never"))
        thread = await api.new_thread()
        await api.run(thread, "go")
        await _wait_for(jp_serverapp, thread, "cell_started")
        await api.call("POST", f"threads/{thread}/cancel", {}, expect=202)
        assert (await _reply(client, user_cell, 10))["status"] == "ok", "the user's cell was not interrupted"
        events = await api.events(thread)
        assert of_type(events, "cell_finished")[-1]["status"] == "aborted"
        assert of_type(events, "tool_result")[-1]["stopped"] is True
    finally:
        client.stop_channels()
    probe, first = await _run_user_cell(jp_serverapp, notebook_kernel, "")
    try:
        await _reply(probe, first, 10)
        msg_id = probe.execute("", user_expressions={"v": "'agent_ran' in globals()"})
        reply = await _reply(probe, msg_id, 10)
        assert reply["user_expressions"]["v"]["data"]["text/plain"] == "False", "a stopped cell never runs"
    finally:
        probe.stop_channels()


# -- 13: Stop and delete respect the lease and the lock


async def test_finding_13_stop_and_delete_respect_another_process_lease(api: Api, jp_serverapp: Any) -> None:
    from agent_core.storage.thread_store import ThreadStore

    thread = await api.new_thread()
    app = await _app(jp_serverapp)
    kernel_side = ThreadStore(app.threads._path, owner=app.threads.owner, holder="a %agent call in kernel 1234")
    await kernel_side.open()
    try:
        assert await kernel_side.take_lease(thread)
        code, data = await api.call("POST", f"threads/{thread}/cancel", {})
        assert (code, data["error"]) == (409, "run_active") and "%agent call in kernel 1234" in data["message"]
        code, data = await api.call("DELETE", f"threads/{thread}")
        assert (code, data["error"]) == (409, "run_active")
        assert await app.threads.get(thread) is not None, "nothing was deleted"
        assert not of_type(await api.events(thread), "run_finished"), "nothing was written into its run"
        await kernel_side.release_lease(thread)
        await api.call("DELETE", f"threads/{thread}", expect=204)
    finally:
        await kernel_side.close()


async def test_finding_13_the_lease_is_released_when_saving_the_end_fails(
    api: Api, fake_llm: FakeLLM, jp_serverapp: Any, monkeypatch: Any
) -> None:
    app = await _app(jp_serverapp)
    fake_llm.script(text("hi"))
    thread = await api.new_thread()
    real_update = type(app.threads).update

    async def failing_update(self: Any, thread_id: str, **fields: str) -> None:
        if fields.get("status") == "completed":
            raise OSError("disk full")
        await real_update(self, thread_id, **fields)

    monkeypatch.setattr(type(app.threads), "update", failing_update)
    await api.run(thread, "hello")
    for _ in range(100):
        if not app.run_manager.is_running(thread):
            break
        await asyncio.sleep(0.05)
    other = type(app.threads)(app.threads._path, owner=app.threads.owner)
    await other.open()
    try:
        assert await other.leased_elsewhere(thread) is None, "the lease went with the failed run"
    finally:
        await other.close()


# -- 14: reads have no side effects


async def test_finding_14_reading_a_stuck_thread_starts_nothing(api: Api, fake_llm: FakeLLM, jp_serverapp: Any) -> None:
    from agent_core.loop.state import appended

    thread = await api.new_thread()
    graph = await (await _app(jp_serverapp)).run_manager.graph()
    call = {"id": "c1", "type": "function", "function": {"name": "add_markdown", "arguments": '{"content": "x"}'}}
    config = {"configurable": {"thread_id": thread}}
    await graph.aupdate_state(config, {"messages": appended({"role": "user", "content": "x"})}, as_node="__start__")
    await graph.aupdate_state(
        config, {"messages": appended({"role": "assistant", "content": "", "tool_calls": [call]})}, as_node="model"
    )
    await (await _app(jp_serverapp)).threads.update(thread, status="running")  # as a crash mid-run leaves it
    fake_llm.script(text("never asked"))
    for _ in range(3):
        code, detail = await api.call("GET", f"threads/{thread}")
        assert code == 200 and detail["pending_approval"] is None
    assert not await api.events(thread) and not fake_llm.requests, "no tool ran and no model was called"
    await (await _app(jp_serverapp)).run_manager.recover()  # what start-up does
    events = await api.events(thread)
    assert of_type(events, "tool_result")[0]["id"] == "c1"


# -- 16: every body field is type-checked


@pytest.mark.parametrize(
    "path, body",
    [
        ("threads", {"notebook_path": 5}),
        ("threads", {"title": ["x"]}),
        ("threads/{t}/runs", {"message": 5}),
        ("threads/{t}/runs", {"message": "hi", "kernel_id": ["k"]}),
        ("threads/{t}/runs", {"message": "hi", "notebook_path": {"a": 1}}),
        ("threads/{t}/approvals/x", {"decision": "approve", "reason": 5}),
        ("threads/{t}/approvals/x", {"decision": "edit", "args": "code"}),
        ("resources", {"files": "a.csv"}),
        ("resources", {"dataframes": 5}),
        ("diagnostics", {"code": "1", "kernel_id": 5}),
    ],
)
async def test_finding_16_wrong_field_types_are_400(api: Api, path: str, body: dict[str, Any]) -> None:
    thread = await api.new_thread()
    code, data = await api.call("POST", path.format(t=thread), body)
    assert code == 400 and data["error"] and data["message"], (code, data)


# -- 17: a tool call written as JSON after some prose


async def test_finding_17_json_call_after_prose_is_rescued(api: Api, fake_llm: FakeLLM) -> None:
    call = json.dumps({"name": "add_markdown", "arguments": {"content": "# Rescued"}})
    fake_llm.script(text(f"Let me add a heading. I will call it: {call} and then finish."), text("done"))
    thread = await api.new_thread()
    await api.run(thread, "add a heading")
    events = await api.until_finished(thread)
    assert of_type(events, "tool_call")[0]["args"] == {"content": "# Rescued"}
    assert of_type(events, "tool_result")[0]["status"] == "ok"


async def test_finding_17_a_near_miss_is_reported_to_the_model(api: Api, fake_llm: FakeLLM) -> None:
    call = json.dumps({"name": "add_markdown", "arguments": {"text": "wrong argument name"}})
    fake_llm.script(text(f"Calling: {call}"), text("All done."))
    thread = await api.new_thread()
    await api.run(thread, "add a heading")
    events = await api.until_finished(thread)
    assert not of_type(events, "tool_call") and of_type(events, "final")[0]["answer"] == "All done."
    told = fake_llm.requests[-1]["messages"][-1]["content"]
    assert "did not run" in told and "add_markdown" in told and "content" in told
