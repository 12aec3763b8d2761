"""Issue 25 in the real browser: "Rewind to here" on a step shows what goes back and what cannot,
then the notebook loses the agent's later cells and the panel says the earlier attempt is a branch;
"Try again from here" opens a new thread from before a step, and the first one is there as it was."""

from __future__ import annotations

from typing import Any

import pytest

from devtools.fake_llm import FakeLLM, text, tool_call
from devtools.jupyter_process import JupyterProcess
from tests.ui.conftest import SHOTS, open_new_notebook, open_panel_from_palette


@pytest.fixture
def lab_config() -> dict[str, Any]:
    return {"Cellwright": {"auto_approve": ["run_cell", "execute_command"]}}


def test_rewind_from_the_panel_removes_the_later_cells_and_keeps_the_branch(
    page: Any, lab: JupyterProcess, fake_llm: FakeLLM
) -> None:
    from playwright.sync_api import expect

    fake_llm.script(
        tool_call("run_cell", {"code": "kept_here = 1"}, id="r1"),
        tool_call("run_cell", {"code": "gone_two = 2"}, id="r2"),
        tool_call("add_markdown", {"content": "Gone markdown"}, id="r3"),
        tool_call("execute_command", {"command": "echo done"}, id="r4"),
        tool_call("run_cell", {"code": "gone_four = 4"}, id="r5"),
        text("All done."),
    )
    open_new_notebook(page, lab)
    open_panel_from_palette(page)
    page.get_by_role("textbox", name="Message Cellwright").fill("make cells")
    page.get_by_role("button", name="Send").click()
    cells = page.locator(".jp-Notebook .jp-Cell")
    for source in ("kept_here = 1", "gone_two = 2", "Gone markdown", "gone_four = 4"):
        expect(cells.filter(has_text=source)).to_have_count(1, timeout=60_000)
    expect(page.locator('.cw-step[data-tool-call-id="r5"]')).to_be_visible(timeout=30_000)

    # A step's actions are in its "⋯" menu.
    step_action(page, "r2", "cw-rewind-open")
    card = page.get_by_role("region", name="Rewind")
    expect(card.get_by_test_id("cw-rewind-step")).to_have_count(4)
    expect(card.get_by_test_id("cw-rewind-cannot").filter(has_text="shell command")).to_have_count(1)
    # What the agent changed from r2 on (GET diff): its three cells, each a diff from nothing.
    changed = card.get_by_test_id("cw-step-change-cell")
    expect(changed).to_have_count(3)
    card.get_by_text("What the agent changed from this step on").click()
    changed.first.locator("summary").click()
    expect(changed.first).to_contain_text("+gone_two = 2")
    page.screenshot(path=str(SHOTS / "25-rewind-card.png"))
    card.get_by_test_id("cw-rewind-confirm").click()

    for source in ("gone_two = 2", "Gone markdown", "gone_four = 4"):
        expect(cells.filter(has_text=source)).to_have_count(0, timeout=20_000)
    expect(cells.filter(has_text="kept_here = 1")).to_have_count(1)
    expect(page.get_by_test_id("cw-rewind-message")).to_contain_text("kept as a branch (2 branches)")
    expect(page.locator('.cw-rewind[data-tool-call-id="r5"]')).to_contain_text("kept in an earlier branch")
    expect(page.locator('.cw-step[data-tool-call-id="r1"]').get_by_test_id("cw-rewind-open")).to_have_count(1)
    page.screenshot(path=str(SHOTS / "25-rewound.png"))

    # "Try again from here" on r1: a new thread from just before it, this one untouched.
    fake_llm.script(tool_call("run_cell", {"code": "second_try = 5"}, id="n1"), text("Tried again."))
    step_action(page, "r1", "cw-try-again")
    forked = page.get_by_test_id("cw-forked")
    expect(forked).to_contain_text("make cells", timeout=20_000)
    expect(page.get_by_test_id("cw-user-message")).to_have_count(1)
    expect(page.locator('.cw-rewind[data-tool-call-id="r1"]')).to_have_count(0)  # not a step of this thread
    page.get_by_role("textbox", name="Message Cellwright").fill("once more")
    page.get_by_role("button", name="Send").click()
    expect(cells.filter(has_text="second_try = 5")).to_have_count(1, timeout=60_000)
    expect(cells.filter(has_text="kept_here = 1")).to_have_count(1)
    sent = fake_llm.requests[-1]["messages"]
    assert [m["content"] for m in sent if m["role"] == "user" and m["content"] in ("make cells", "once more")] == [
        "make cells",
        "once more",
    ]
    page.screenshot(path=str(SHOTS / "25-tried-again.png"))
    forked.get_by_role("button").click()  # back to the thread it came from, as it was left
    expect(page.locator('.cw-rewind[data-tool-call-id="r5"]')).to_contain_text("kept in an earlier branch")
    expect(page.get_by_test_id("cw-forked")).to_have_count(0)
    assert not page.errors, page.errors  # type: ignore[attr-defined]


def step_action(page: Any, tool_call_id: str, action: str) -> None:
    """Open the "⋯" menu of step `tool_call_id` and pick the item `action` (its test id)."""
    step = page.locator(f'.cw-step[data-tool-call-id="{tool_call_id}"]')
    step.get_by_test_id("cw-step-menu-button").click()
    step.get_by_test_id(action).click()
