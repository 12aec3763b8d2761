"""A multi-agent run in the real browser: the agent indicator follows the delegation and the
sub-agent's approval card says which agent asks."""

from __future__ import annotations

from typing import Any

from devtools.fake_llm import FakeLLM, text, tool_call
from devtools.jupyter_process import JupyterProcess
from tests.ui.conftest import SHOTS, open_new_notebook, open_panel_from_palette


def test_subagent_approval_in_multi_mode(page: Any, lab: JupyterProcess, fake_llm: FakeLLM) -> None:
    from playwright.sync_api import expect

    fake_llm.script(  # in request order: planner, developer, developer (after approval), planner
        tool_call("task", {"agent": "python_developer", "description": "Compute 6 * 7 and print it."}, id="p1"),
        tool_call("run_cell", {"code": "answer = 6 * 7\nprint(answer)"}, id="d1"),
        text(["Printed 42; ", "it is in `answer`."]),
        tool_call("final_answer", {"answer": "The answer is **42**."}),
    )
    open_new_notebook(page, lab)
    open_panel_from_palette(page)
    page.get_by_role("combobox", name="Agent mode").select_option("multi")
    page.get_by_role("textbox", name="Message Cellwright").fill("what is 6 * 7?")
    page.get_by_role("button", name="Send").click()

    card = page.get_by_role("region", name="Approval required")
    card.wait_for(timeout=60_000)  # a fresh server imports langgraph and openai on its first run
    expect(page.get_by_test_id("cw-approval-agent")).to_contain_text("Python developer")
    expect(page.get_by_test_id("cw-agent")).to_contain_text("Python developer")
    expect(page.get_by_test_id("cw-subtask")).to_contain_text("Compute 6 * 7")
    page.screenshot(path=str(SHOTS / "4-multi-agent-approval.png"))

    card.get_by_role("button", name="Approve", exact=True).click()
    expect(page.get_by_test_id("cw-final")).to_contain_text("The answer is 42", timeout=30_000)
    expect(page.locator(".jp-Notebook .jp-OutputArea-output").filter(has_text="42")).to_have_count(1, timeout=10_000)
    expect(page.get_by_test_id("cw-agent")).to_contain_text("Planner")
    page.screenshot(path=str(SHOTS / "5-multi-agent-final.png"))
    assert not page.errors, page.errors  # type: ignore[attr-defined]
