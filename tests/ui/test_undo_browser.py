"""Issue 12 in the real browser: the approval card shows what the cell will touch; the cell the agent
wrote carries its provenance in the saved .ipynb (nbformat metadata `cellwright`); reopening the
notebook shows the cell's badge; the badge's Undo removes the cell and the variables it made."""

from __future__ import annotations

from typing import Any

from devtools.fake_llm import FakeLLM, text, tool_call
from devtools.jupyter_process import JupyterProcess
from tests.ui.conftest import SHOTS, ask_until_card, run_cell_from_editor
from tests.ui.test_workflow_browser import _save


def test_provenance_survives_reopening_and_the_badge_undoes_the_step(
    page: Any, lab: JupyterProcess, fake_llm: FakeLLM
) -> None:
    from playwright.sync_api import expect

    fake_llm.script(
        tool_call("run_cell", {"code": "x = 5\ntmp = x * 2\nprint('made', tmp)"}, id="make_tmp"),
        tool_call("final_answer", {"answer": "Made tmp."}),
    )
    card = ask_until_card(page, lab, "make tmp")
    chips = card.get_by_test_id("cw-impact-chip")
    expect(chips.filter(has_text="tmp")).to_have_count(1)
    expect(chips.filter(has_text="line 2").first).to_be_visible()
    expect(card.get_by_test_id("cw-impact-undo")).to_have_attribute("data-undoable", "true")
    page.screenshot(path=str(SHOTS / "12-impact-card.png"))
    card.get_by_role("button", name="Approve", exact=True).click()
    expect(page.get_by_test_id("cw-final")).to_contain_text("Made tmp", timeout=30_000)
    expect(page.get_by_test_id("cw-undo-step")).to_have_count(1)

    saved = _save(page, lab, lambda nb: any("cellwright" in c.get("metadata", {}) for c in nb["cells"]))
    meta = next(c["metadata"]["cellwright"] for c in saved["cells"] if "cellwright" in c.get("metadata", {}))
    assert meta["tool_call_id"] == "make_tmp" and meta["decision"] == "approved" and meta["model"] == "fake-model"
    assert meta["thread_id"] and meta["run_id"] and meta["undoable"] is True

    # Reopened (a reload restores the open notebook from the saved file): the badge is back.
    page.reload()
    page.wait_for_selector('.jp-Notebook-ExecutionIndicator[data-status="idle"]', timeout=60_000)
    badge = page.get_by_test_id("cw-cell-badge")
    expect(badge).to_have_count(1, timeout=20_000)
    page.screenshot(path=str(SHOTS / "12-cell-badge.png"))
    badge.get_by_role("button", name="Cellwright").click()  # opens the thread at that step
    step = page.locator('.cw-undo[data-tool-call-id="make_tmp"]')
    expect(step).to_have_attribute("data-undo-state", "undoable", timeout=20_000)
    badge.get_by_test_id("cw-cell-badge-undo").click()
    expect(page.locator(".jp-Notebook .jp-Cell .cm-content").filter(has_text="tmp = x * 2")).to_have_count(
        0, timeout=20_000
    )
    expect(step).to_have_attribute("data-undo-state", "undone", timeout=20_000)
    page.screenshot(path=str(SHOTS / "12-undone.png"))

    # The kernel lost what the step made: a cell of the user's says so.
    page.locator(".jp-Notebook").first.click()
    page.keyboard.press("Escape")
    page.keyboard.press("b")  # a new cell below (or the first one)
    cell = page.locator(".jp-Notebook .jp-Cell").last
    cell.locator(".cm-content").click()
    page.keyboard.type("print('tmp' in dir(), 'x' in dir())")
    run_cell_from_editor(page, cell)
    expect(cell.locator(".jp-OutputArea-output")).to_contain_text("False False", timeout=20_000)
    assert not page.errors, page.errors  # type: ignore[attr-defined]


def test_reject_and_save_as_rule(page: Any, lab: JupyterProcess, fake_llm: FakeLLM) -> None:
    from playwright.sync_api import expect

    fake_llm.script(tool_call("run_cell", {"code": "%pip install requests"}, id="pip1"), text("Understood."))
    card = ask_until_card(page, lab, "get requests")
    expect(card.get_by_test_id("cw-impact-chip").filter(has_text="installs")).to_have_count(1)
    card.get_by_role("button", name="Reject").click()
    card.get_by_test_id("cw-save-rule").check()
    rule = card.get_by_test_id("cw-rule-text")
    expect(rule).to_have_value("Never install packages")
    rule.fill("Never install packages without asking")
    page.screenshot(path=str(SHOTS / "12-save-rule.png"))
    card.get_by_role("button", name="Confirm reject").click()
    expect(page.get_by_role("region", name="Approval required")).to_have_count(0, timeout=20_000)
    rules = lab.root / ".cellwright" / "rules.md"
    for _ in range(50):
        if rules.exists():
            break
        page.wait_for_timeout(100)
    assert "- Never install packages without asking" in rules.read_text()
    assert not page.errors, page.errors  # type: ignore[attr-defined]
