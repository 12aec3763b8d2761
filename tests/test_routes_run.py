"""The backbone through the real routes: ask, approve / edit / reject, run in the real kernel."""

from __future__ import annotations

from typing import Any

import pytest

from devtools.fake_llm import FakeLLM, text, tool_call
from tests.conftest import Api, execute_reply, of_type

pytestmark = pytest.mark.also_postgres  # every store in SQLite, then in PostgreSQL


@pytest.mark.also_gateway
async def test_approve_runs_cell_in_kernel_and_finishes(api: Api, fake_llm: FakeLLM, notebook_kernel: str) -> None:
    fake_llm.script(
        tool_call("write_todos", {"todos": [{"content": "Compute", "status": "in_progress"}]}),
        tool_call("run_cell", {"code": "x = 6 * 7\nprint(x)"}, id="call_cell"),
        tool_call("final_answer", {"answer": "x is **42**", "next_items": [{"title": "Plot", "prompt": "plot x"}]}),
    )
    thread = await api.new_thread()
    await api.run(thread, "compute x")
    first = await api.until_finished(thread)
    assert [e["type"] for e in first][0] == "run_started"
    assert of_type(first, "todos")[0]["todos"] == [{"content": "Compute", "status": "in_progress"}]
    approval = of_type(first, "approval_required")[0]
    assert approval["id"] == "call_cell" and approval["args"]["code"].startswith("x = 6 * 7")
    assert first[-1]["status"] == "awaiting_approval"
    assert not of_type(first, "cell_started"), "nothing runs before approval"

    code, _ = await api.approve(thread, "call_cell")
    assert code == 202
    second = await api.until_finished(thread, after=first[-1]["seq"])
    outputs = of_type(second, "cell_output")
    assert "".join(o["output"].get("text", "") for o in outputs) == "42\n"
    assert of_type(second, "cell_finished")[0]["status"] == "ok"
    final = of_type(second, "final")[0]
    assert final["answer"] == "x is **42**" and final["next_items"][0]["prompt"] == "plot x"
    assert second[-1]["status"] == "completed"
    # The model saw the cell's output.
    tool_messages = [m for m in fake_llm.requests[-1]["messages"] if m["role"] == "tool"]
    assert any("42" in m["content"] for m in tool_messages)
    seqs = [e["seq"] for e in first + second]
    assert seqs == list(range(1, len(seqs) + 1))


async def _until_approval(api: Api, thread: str, after: int = 0) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    events = await api.until_finished(thread, after)
    assert events[-1]["status"] == "awaiting_approval", events
    return of_type(events, "approval_required")[0], events


@pytest.mark.also_gateway
async def test_edit_runs_the_edited_code(api: Api, fake_llm: FakeLLM, notebook_kernel: str) -> None:
    fake_llm.script(tool_call("run_cell", {"code": "print('original')"}, id="c1"), text("ok"))
    thread = await api.new_thread()
    await api.run(thread, "print something")
    _, first = await _until_approval(api, thread)
    code, _ = await api.approve(thread, "c1", "edit", args={"code": "print('edited')"})
    assert code == 202
    events = await api.until_finished(thread, first[-1]["seq"])
    assert of_type(events, "cell_started")[0]["code"] == "print('edited')"
    assert "edited" in of_type(events, "cell_output")[0]["output"]["text"]
    assert "original" not in str(of_type(events, "cell_output"))


async def test_reject_tells_the_model_the_reason(api: Api, fake_llm: FakeLLM, notebook_kernel: str) -> None:
    fake_llm.script(tool_call("run_cell", {"code": "import os; os.remove('data.csv')"}, id="c1"), text("Understood."))
    thread = await api.new_thread()
    await api.run(thread, "clean up")
    _, first = await _until_approval(api, thread)
    code, _ = await api.approve(thread, "c1", "reject", reason="never delete my data")
    assert code == 202
    events = await api.until_finished(thread, first[-1]["seq"])
    assert not of_type(events, "cell_started")
    assert of_type(events, "tool_result")[0]["status"] == "rejected"
    tool_message = [m for m in fake_llm.requests[-1]["messages"] if m["role"] == "tool"][-1]
    assert "never delete my data" in tool_message["content"]
    assert events[-1]["status"] == "completed"


@pytest.mark.also_gateway
async def test_double_approval_runs_the_tool_once(api: Api, fake_llm: FakeLLM, notebook_kernel: str) -> None:
    import asyncio

    fake_llm.script(
        tool_call("run_cell", {"code": "counter = globals().get('counter', 0) + 1\nprint(counter)"}, id="c1"),
        text("done"),
    )
    thread = await api.new_thread()
    await api.run(thread, "count")
    _, first = await _until_approval(api, thread)
    results = await asyncio.gather(*(api.approve(thread, "c1") for _ in range(3)))
    assert sorted(code for code, _ in results) == [202, 409, 409]
    events = await api.until_finished(thread, first[-1]["seq"])
    assert len(of_type(events, "cell_started")) == 1
    code, _ = await api.approve(thread, "c1")  # a stale approval after the fact
    assert code == 409
    assert of_type(events, "cell_output")[0]["output"]["text"] == "1\n"


async def test_replay_from_last_event_id(api: Api, fake_llm: FakeLLM, notebook_kernel: str) -> None:
    fake_llm.script(text(["The ", "answer ", "is ", "42."]))
    thread = await api.new_thread()
    await api.run(thread, "what is the answer")
    everything = await api.until_finished(thread)
    assert "".join(e["text"] for e in of_type(everything, "token")) == "The answer is 42."
    assert of_type(everything, "final")[0]["answer"] == "The answer is 42."
    for cut in range(len(everything)):
        replay = await api.events(thread, headers={"Last-Event-ID": str(everything[cut]["seq"])})
        assert replay == everything[cut + 1 :]
    assert await api.events(thread, after=0) == everything


@pytest.mark.also_gateway
async def test_cancel_during_long_cell_interrupts_kernel(
    api: Api, fake_llm: FakeLLM, notebook_kernel: str, jp_serverapp: Any
) -> None:
    import asyncio

    fake_llm.script(
        tool_call("run_cell", {"code": "import time\nprint('start', flush=True)\ntime.sleep(60)"}, id="slow")
    )
    thread = await api.new_thread()
    await api.run(thread, "sleep")
    _, first = await _until_approval(api, thread)
    await api.approve(thread, "slow")
    store = jp_serverapp.web_app.settings["cellwright"].threads
    for _ in range(100):  # wait until the cell prints, i.e. runs in the kernel (the stream stays open meanwhile)
        if of_type(await store.events.events_after(thread, first[-1]["seq"]), "cell_output"):
            break
        await asyncio.sleep(0.1)
    code, _ = await api.call("POST", f"threads/{thread}/cancel", {})
    assert code == 202
    events = await api.until_finished(thread, first[-1]["seq"])
    assert of_type(events, "cell_finished"), events
    assert of_type(events, "cell_finished")[0]["status"] == "aborted"
    assert events[-1]["status"] == "cancelled"
    # The kernel was interrupted, not left sleeping: it answers right away.
    for _ in range(10):  # ipykernel aborts requests that arrive right after an interrupt
        reply = await execute_reply(jp_serverapp, notebook_kernel, "print('alive')")
        if reply["content"]["status"] == "ok":
            break
        await asyncio.sleep(0.3)
    assert reply["content"]["status"] == "ok"
    # The thread stays usable, and the cancelled call is never run again.
    fake_llm.script(text("ready again"))
    await api.run(thread, "are you there?")
    again = await api.until_finished(thread, events[-1]["seq"])
    assert again[-1]["status"] == "completed" and not of_type(again, "cell_started")
    dangling = [m for m in fake_llm.requests[-1]["messages"] if m.get("tool_call_id") == "slow"]
    assert len(dangling) == 1


async def test_event_stream_closes_when_the_run_ends(api: Api, fake_llm: FakeLLM) -> None:
    """The stream stays open only until the run's run_finished (not until the next 15 s ping)."""
    import time

    fake_llm.script(text(["slow ", "answer"], delay_before=0.5))
    thread = await api.new_thread()
    await api.run(thread, "hello")
    started = time.monotonic()
    events = await api.events(thread)  # opened while the run is still waiting for the model
    assert events[-1]["type"] == "run_finished"
    assert time.monotonic() - started < 10, "the stream outlived its run"
