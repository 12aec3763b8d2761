"""Issue 11 through the real routes, a real kernel and the scripted model: edit_cell on the right
cell (or a clear error for a deleted one), Ask and Plan modes enforced on the server, token usage
per run and thread, restart_kernel and a restart the user made, and the settings form's routes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
import pytest

from devtools.fake_llm import FakeLLM, text, tool_call
from tests.conftest import NOTEBOOK, Api, of_type


def _write_notebook(root: Path, cells: list[tuple[str, str]]) -> None:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source, id=cell_id) for cell_id, source in cells]
    nbformat.write(notebook, str(root / NOTEBOOK))


def _tool_names(request: dict[str, Any]) -> set[str]:
    return {tool["function"]["name"] for tool in request.get("tools") or []}


def _tool_messages(request: dict[str, Any]) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


@pytest.mark.also_gateway
async def test_edit_cell_diffs_the_live_cell_and_reruns_it_in_place(
    api: Api, fake_llm: FakeLLM, notebook_kernel: str, jp_root_dir: Path
) -> None:
    _write_notebook(jp_root_dir, [("first", "import math"), ("broken", "print(1/0)")])
    fake_llm.script(
        tool_call("edit_cell", {"cell_id": "broken", "source": "print(1/2)"}, id="fix1"),
        tool_call("final_answer", {"answer": "Fixed."}),
    )
    thread = await api.new_thread()
    # The browser's copy differs from the saved file: the card diffs against what the user sees.
    live = [
        {"id": "first", "cell_type": "code", "source": "import math"},
        {"id": "broken", "cell_type": "code", "source": "print(1/0)  # unsaved"},
    ]
    await api.run(thread, "fix the cell", notebook_cells=live)
    first = await api.until_finished(thread)
    card = of_type(first, "approval_required")[0]
    assert card["name"] == "edit_cell" and not card.get("will_fail")
    assert "-print(1/0)  # unsaved" in card["diff"] and "+print(1/2)" in card["diff"]

    await api.approve(thread, "fix1", notebook_cells=live)
    second = await api.until_finished(thread, first[-1]["seq"])
    started = of_type(second, "cell_started")[-1]
    assert started["cell_id"] == "broken" and started["edit"] is True and started["code"] == "print(1/2)"
    assert "0.5" in of_type(second, "cell_output")[0]["output"]["text"]
    told = _tool_messages(fake_llm.requests[-1])[-1]
    assert "cell_id broken" in told and "0.5" in told


async def test_edit_cell_on_a_deleted_cell_tells_the_model_and_changes_nothing(
    api: Api, fake_llm: FakeLLM, notebook_kernel: str, jp_root_dir: Path
) -> None:
    _write_notebook(jp_root_dir, [("keep", "x = 1"), ("gone", "y = 2")])
    saved = (jp_root_dir / NOTEBOOK).read_text()
    fake_llm.script(tool_call("edit_cell", {"cell_id": "gone", "source": "y = 3"}, id="e1"), text("It was deleted."))
    thread = await api.new_thread()
    # The user deleted the cell in the browser; the saved file still has it.
    await api.run(thread, "change y", notebook_cells=[{"id": "keep", "cell_type": "code", "source": "x = 1"}])
    events = await api.until_finished(thread)
    assert not of_type(events, "approval_required") and not of_type(events, "cell_started")
    result = of_type(events, "tool_result")[0]
    assert result["name"] == "edit_cell" and result["status"] == "error"
    told = _tool_messages(fake_llm.requests[-1])[-1]
    assert "no cell with id 'gone'" in told and "cell 0, id keep (code): x = 1" in told
    assert (jp_root_dir / NOTEBOOK).read_text() == saved and events[-1]["status"] == "completed"


async def test_run_cell_gives_its_cell_an_id_the_model_can_edit(
    api: Api, fake_llm: FakeLLM, notebook_kernel: str
) -> None:
    fake_llm.script(tool_call("run_cell", {"code": "print('hi')"}, id="r1"), text("done"))
    thread = await api.new_thread()
    await api.run(thread, "say hi")
    first = await api.until_finished(thread)
    await api.approve(thread, "r1")
    second = await api.until_finished(thread, first[-1]["seq"])
    started = of_type(second, "cell_started")[-1]
    assert started["cell_id"].startswith("cw-") and started["edit"] is False
    assert f"cell_id {started['cell_id']}" in _tool_messages(fake_llm.requests[-1])[-1]


async def test_ask_mode_offers_read_only_tools_and_refuses_run_cell(
    api: Api, fake_llm: FakeLLM, notebook_kernel: str
) -> None:
    fake_llm.script(tool_call("run_cell", {"code": "import os; os.remove('x')"}, id="sneaky"), text("Here is how."))
    thread = await api.new_thread()
    await api.run(thread, "how do I delete x?", autonomy="ask")
    events = await api.until_finished(thread)
    assert events[0]["type"] == "run_started" and events[0]["autonomy"] == "ask"
    assert not of_type(events, "approval_required") and not of_type(events, "cell_started")
    assert of_type(events, "tool_result")[0]["status"] == "error"
    offered = _tool_names(fake_llm.requests[0])
    assert "read_file" in offered and "final_answer" in offered
    assert not offered & {
        "run_cell",
        "edit_cell",
        "execute_command",
        "write_file",
        "edit_file",
        "add_markdown",
        "restart_kernel",
    }
    assert "Mode: Ask" in fake_llm.requests[0]["messages"][0]["content"]
    assert "not available in Ask mode" in _tool_messages(fake_llm.requests[-1])[-1]
    _, detail = await api.call("GET", f"threads/{thread}", expect=200)
    assert detail["autonomy"] == "ask"


async def test_plan_mode_stops_at_the_plan_and_proceeds_once_approved(
    api: Api, fake_llm: FakeLLM, notebook_kernel: str
) -> None:
    plan = [{"content": "Load data", "status": "pending"}, {"content": "Plot", "status": "pending"}]
    fake_llm.script(
        tool_call("write_todos", {"todos": plan}, id="plan1"),
        tool_call("run_cell", {"code": "print('step 1')"}, id="step1"),
        tool_call("final_answer", {"answer": "Done."}),
    )
    thread = await api.new_thread()
    await api.run(thread, "analyse it", autonomy="plan")
    first = await api.until_finished(thread)
    card = of_type(first, "approval_required")[0]
    assert card["name"] == "write_todos" and first[-1]["status"] == "awaiting_approval"
    assert "run_cell" not in _tool_names(fake_llm.requests[0]) and "write_todos" in _tool_names(fake_llm.requests[0])
    assert not of_type(first, "todos"), "the plan is not adopted before the user approves it"

    edited = [{"content": "Load data", "status": "in_progress"}, {"content": "Plot with seaborn", "status": "pending"}]
    code, _ = await api.approve(thread, "plan1", "edit", args={"todos": edited})
    assert code == 202
    second = await api.until_finished(thread, first[-1]["seq"])
    assert of_type(second, "todos")[0]["todos"] == edited
    assert second[0]["autonomy"] == "plan"
    # Approved: every tool is offered now, and a step that changes something still asks.
    assert "run_cell" in _tool_names(fake_llm.requests[1])
    assert of_type(second, "approval_required")[0]["id"] == "step1"
    assert "approved this plan" in _tool_messages(fake_llm.requests[1])[-1]


async def test_usage_adds_up_over_runs_and_estimates_are_marked(api: Api, fake_llm: FakeLLM) -> None:
    fake_llm.script(text("One."), text("Two."))
    thread = await api.new_thread()
    await api.run(thread, "first")
    first = await api.until_finished(thread)
    await api.run(thread, "second")
    second = await api.until_finished(thread, first[-1]["seq"])
    calls = [e["call"] for e in of_type(first + second, "usage")]
    assert len(calls) == 2 and all(c["prompt_tokens"] > 0 for c in calls)
    _, detail = await api.call("GET", f"threads/{thread}", expect=200)
    usage = detail["usage"]
    assert usage["prompt_tokens"] == sum(c["prompt_tokens"] for c in calls)
    assert usage["completion_tokens"] == sum(c["completion_tokens"] for c in calls)
    assert second[-1]["usage"]["prompt_tokens"] == calls[1]["prompt_tokens"], "a run's totals start at zero"
    meter = of_type(second, "usage")[0]
    assert meter["context_budget"] > meter["context_tokens"] > 0 and meter["thread"] == usage
    assert "cost" not in usage, "no price configured, no cost"


async def test_prices_give_a_cost(api: Api, fake_llm: FakeLLM) -> None:
    await api.call("PUT", "config", {"prices": {"fake-model": {"prompt": 1000000, "completion": 2000000}}}, expect=200)
    fake_llm.script(text("Priced."))
    thread = await api.new_thread()
    await api.run(thread, "how much?")
    events = await api.until_finished(thread)
    call = of_type(events, "usage")[0]["call"]
    assert call["cost"] == call["prompt_tokens"] + 2 * call["completion_tokens"]
    _, bad = await api.call("PUT", "config", {"prices": {"m": {"prompt": -1, "completion": 1}}}, expect=400)
    assert "prices" in bad["message"]


@pytest.mark.also_gateway
async def test_restart_kernel_tool_and_a_restart_by_the_user_are_told_to_the_model(
    api: Api, fake_llm: FakeLLM, notebook_kernel: str, jp_serverapp: Any
) -> None:
    fake_llm.script(
        tool_call("run_cell", {"code": "kept = 1"}, id="set"),
        tool_call("restart_kernel", {}, id="restart"),
        tool_call("run_cell", {"code": "print('kept' in dir())"}, id="check"),
        text("Gone."),
    )
    thread = await api.new_thread()
    await api.run(thread, "set, restart, check")
    events = await api.until_finished(thread)
    for call_id in ("set", "restart", "check"):
        card = of_type(events, "approval_required")[-1]
        assert card["id"] == call_id
        if call_id == "restart":
            assert "variables" in card["description"]
        await api.approve(thread, call_id)
        events = await api.until_finished(thread, events[-1]["seq"])
    assert of_type(events, "cell_output")[0]["output"]["text"] == "False\n"

    # Now the user restarts the kernel themselves, between two runs: the next run is told.
    await jp_serverapp.kernel_manager.restart_kernel(notebook_kernel)
    fake_llm.script(text("Noted."))
    await api.run(thread, "carry on")
    await api.until_finished(thread, events[-1]["seq"])
    notes = [m["content"] for m in fake_llm.requests[-1]["messages"] if m["role"] == "user"]
    assert any("kernel restarted" in note for note in notes)
    fake_llm.script(text("Still fine."))
    await api.run(thread, "and again")
    await api.until_finished(thread)
    assert not any("kernel restarted" in m.get("content", "") for m in fake_llm.requests[-1]["messages"][-2:])


async def test_connection_test_and_model_list(api: Api, fake_llm: FakeLLM) -> None:
    fake_llm.script(text("OK"), text("OK"))
    _, report = await api.call("POST", "config/test", {}, expect=200)
    assert report["ok"] is True and [c["name"] for c in report["checks"]] == ["reachable", "key", "model", "tools"]
    _, models = await api.call("GET", "config/models", expect=200)
    assert models["models"] and "error" not in models or models.get("error") is None
    _, down = await api.call("POST", "config/test", {"base_url": "http://127.0.0.1:9/v1"}, expect=200)
    assert down["ok"] is False and down["checks"][-1]["name"] == "reachable"
    _, config = await api.call("GET", "config", expect=200)
    assert config["sources"]["model"] == "config" and config["api_key_set"] is True
    for answer in (report, models, down, config):
        assert "sk-test-secret-key" not in json.dumps(answer)


async def test_a_cell_left_out_of_the_live_cells_is_diffed_against_the_saved_file(
    api: Api, fake_llm: FakeLLM, notebook_kernel: str, jp_root_dir: Path
) -> None:
    _write_notebook(jp_root_dir, [("big", "data = 'saved source'")])
    fake_llm.script(tool_call("edit_cell", {"cell_id": "big", "source": "data = 'new'"}, id="e2"))
    thread = await api.new_thread()
    await api.run(
        thread, "change it", notebook_cells=[{"id": "big", "cell_type": "code", "source": "", "truncated": True}]
    )
    card = of_type(await api.until_finished(thread), "approval_required")[0]
    assert "-data = 'saved source'" in card["diff"] and "+data = 'new'" in card["diff"]
