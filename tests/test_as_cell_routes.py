"""Run as cell (issue 37) through the real routes: an explore step of a thread, run unasked in the
kernel's sandboxed fork, becomes a run_cell call awaiting the usual approval (its code the thread's
record of the step, never the request's); approved, it runs in the real kernel and the thread records
it. Refused, with a clear 4xx: an unknown step, another owner's thread, a step that is not an explore
call, a body that carries code, a run active, an approval pending. The model is an honest scripted
one: the variable it explores is the one the user's message names."""

from __future__ import annotations

import re
from typing import Any

from devtools.fake_llm import FakeLLM, text, tool_call
from devtools.fake_llm_script import Reply, Shown, reading
from tests.conftest import NOTEBOOK, Api, execute_reply, of_type


def _explore_the_named_variable(seen: Shown) -> Reply:
    name = seen.find_in_prompt(r"what's in @(\w+)")  # the user's words, not the system prompt's
    return tool_call("explore", {"code": f"print(sorted({name}))\nlen({name})"})


async def _explored(api: Api, fake_llm: FakeLLM, serverapp: Any, kernel_id: str) -> tuple[str, dict[str, Any]]:
    """A thread whose Ask-mode run explored `numbers` in the sandbox, unasked: (thread, its tool_call)."""
    reply = await execute_reply(serverapp, kernel_id, "numbers = [3, 1, 2]")
    assert reply["content"]["status"] == "ok", reply["content"]
    fake_llm.script(reading(_explore_the_named_variable), text("numbers holds 1, 2 and 3."))
    thread = await api.new_thread()
    await api.run(thread, "what's in @numbers?", autonomy="ask")
    events = await api.until_finished(thread)
    assert events[-1]["status"] == "completed", events
    call = of_type(events, "tool_call")[0]
    result = of_type(events, "tool_result")[0]
    assert call["name"] == "explore" and result["id"] == call["id"], events
    assert result["sandboxed"] is True and result["status"] == "ok", result
    assert "[1, 2, 3]" in str(result["outputs"]), result
    assert not of_type(events, "approval_required") and not of_type(events, "cell_started"), events
    return thread, call


def _as_cell(thread: str, call_id: str) -> str:
    return f"threads/{thread}/steps/{call_id}/as_cell"


async def test_run_as_cell_asks_approval_for_exactly_that_code_then_runs_it_in_the_kernel(
    api: Api, fake_llm: FakeLLM, notebook_kernel: str, jp_serverapp: Any
) -> None:
    thread, call = await _explored(api, fake_llm, jp_serverapp, notebook_kernel)
    model_calls = len(fake_llm.requests)

    _, started = await api.call("POST", _as_cell(thread, call["id"]), {}, expect=202)
    first = await api.until_finished(thread, started["after"])
    approval = of_type(first, "approval_required")[0]
    assert approval["id"] == started["tool_call_id"] and approval["name"] == "run_cell"
    assert approval["args"]["code"] == call["args"]["code"]
    assert first[-1]["status"] == "awaiting_approval"
    assert not of_type(first, "cell_started"), "nothing runs before approval"
    assert len(fake_llm.requests) == model_calls, "the one-call run asks the model nothing"

    code, _ = await api.approve(thread, approval["id"], kernel_id=notebook_kernel)
    assert code == 202
    second = await api.until_finished(thread, first[-1]["seq"])
    cell = of_type(second, "cell_started")[0]
    assert cell["id"] == approval["id"] and cell["code"] == call["args"]["code"]
    assert cell["kernel_id"] == notebook_kernel and cell["notebook_path"] == NOTEBOOK
    assert "".join(o["output"].get("text", "") for o in of_type(second, "cell_output")) == "[1, 2, 3]\n"
    finished = of_type(second, "cell_finished")[0]
    assert finished["status"] == "ok" and isinstance(finished["execution_count"], int), finished
    assert second[-1]["status"] == "completed"
    # The real kernel ran it as a cell: its history holds the code (an explore's fork leaves none).
    reply = await execute_reply(jp_serverapp, notebook_kernel, "assert 'print(sorted(numbers))' in In[-1] + In[-2]")
    assert reply["content"]["status"] == "ok", reply["content"]
    # The thread records the call and its result, as it records the model's.
    _, detail = await api.call("GET", f"threads/{thread}", expect=200)
    recorded = [c for m in detail["messages"] for c in (m.get("tool_calls") or []) if c["id"] == approval["id"]]
    assert recorded and recorded[0]["name"] == "run_cell", detail["messages"]
    assert recorded[0]["args"]["code"] == call["args"]["code"]
    results = [m for m in detail["messages"] if m["role"] == "tool" and m["tool_call_id"] == approval["id"]]
    assert results and "[1, 2, 3]" in results[0]["content"], detail["messages"]


async def test_run_as_cell_refuses_what_is_not_this_thread_s_explore_step(
    api: Api, fake_llm: FakeLLM, notebook_kernel: str, jp_serverapp: Any
) -> None:
    from agent_core.contract import make_event
    from agent_core.storage.thread_store import ThreadStore

    thread, call = await _explored(api, fake_llm, jp_serverapp, notebook_kernel)

    code, error = await api.call("POST", _as_cell(thread, "call_nobody_made"), {})
    assert (code, error["error"]) == (404, "step_not_found"), error
    code, error = await api.call("POST", _as_cell(thread, call["id"]), {"code": "import os; os.remove('x')"})
    assert (code, error["error"]) == (400, "bad_request") and '"code"' in error["message"], error

    # Another owner's thread, on the same store, with an explore step of its own: as one that does not exist.
    store = jp_serverapp.web_app.settings["cellwright"].threads
    other = ThreadStore(store._path, owner="someone-else")
    await other.open()
    try:
        theirs = (await other.create(NOTEBOOK, "theirs")).thread_id
        step = make_event("tool_call", id="their_step", name="explore", args={"code": "1"}, needs_approval=True)
        await other.events.append(theirs, {**step, "run_id": "r"})
    finally:
        await other.close()
    code, error = await api.call("POST", _as_cell(theirs, "their_step"), {})
    _, nobodys = await api.call("POST", _as_cell("0" * 32, "their_step"), {})
    assert (code, error["error"]) == (404, "thread_not_found"), error
    assert error["message"].replace(theirs, "0" * 32) == nobodys["message"]

    # While the cell waits for approval: refused (one decision at a time); then the run_cell step is
    # no explore step.
    _, started = await api.call("POST", _as_cell(thread, call["id"]), {}, expect=202)
    await api.until_finished(thread, started["after"])
    code, error = await api.call("POST", _as_cell(thread, call["id"]), {})
    assert (code, error["error"]) == (409, "approval_pending"), error
    code, _ = await api.approve(thread, started["tool_call_id"], "reject", reason="not now")
    assert code == 202
    await api.until_finished(thread, started["after"])
    code, error = await api.call("POST", _as_cell(thread, started["tool_call_id"]), {})
    assert (code, error["error"]) == (409, "not_explore") and "run_cell" in error["message"], error

    # While a run is active (the model has not answered yet): refused, and the run goes on.
    fake_llm.script(tool_call("final_answer", {"answer": "ok"}, hang=True))
    await api.run(thread, "anything else?")
    code, error = await api.call("POST", _as_cell(thread, call["id"]), {})
    assert (code, error["error"]) == (409, "run_active"), error
    assert re.search(r"active", error["message"]), error
    code, _ = await api.call("POST", f"threads/{thread}/cancel", {})
    assert code == 202
