"""The backbone through the real routes: ask, approve / edit / reject, run in the real kernel."""
from __future__ import annotations

from typing import Any

from tests.conftest import Api, of_type
from tests.fake_llm import FakeLLM, text, tool_call


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
