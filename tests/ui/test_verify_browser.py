"""Issue 26 in the real browser: "Verify" under the final answer saves the notebook, re-runs it from
the top in a fresh kernel and shows a badge: verified; then, after the user adds a cell that reads a
name no cell defines, fails at that cell, naming the hidden state."""

from __future__ import annotations

from typing import Any

from devtools.fake_llm import FakeLLM, tool_call
from devtools.jupyter_process import JupyterProcess
from tests.ui.conftest import SHOTS, ask_until_card


def test_verify_shows_a_badge_for_the_saved_notebook(page: Any, lab: JupyterProcess, fake_llm: FakeLLM) -> None:
    from playwright.sync_api import expect

    fake_llm.script(
        tool_call("run_cell", {"code": "total = 6 * 7\nprint(total)"}, id="v_cell"),
        tool_call("final_answer", {"answer": "The total is 42."}),
    )
    card = ask_until_card(page, lab, "compute the total")
    card.get_by_role("button", name="Approve", exact=True).click()
    expect(page.get_by_test_id("cw-final")).to_contain_text("The total is 42", timeout=30_000)
    expect(page.locator(".jp-Notebook .jp-Cell .cm-content").filter(has_text="total = 6 * 7")).to_have_count(1)

    page.get_by_test_id("cw-verify-button").click()
    badge = page.get_by_test_id("cw-verify-badge")
    expect(badge).to_have_text("verified", timeout=60_000)
    expect(badge).to_have_class("cw-verify-badge cw-verify-ok")
    page.screenshot(path=str(SHOTS / "26-verified.png"))

    # A cell of the user's, not run, reads a name that no cell defines: Verify saves it first.
    page.locator(".jp-Notebook .jp-Cell").last.click()
    page.keyboard.press("Escape")
    page.keyboard.press("b")
    cell = page.locator(".jp-Notebook .jp-Cell").last
    cell.locator(".cm-content").click()
    page.keyboard.type("print(total + offset)")
    page.get_by_test_id("cw-verify-button").click()
    expect(badge).to_have_text("fails at cell 2", timeout=60_000)
    expect(page.locator(".cw-verify-detail")).to_contain_text("NameError")
    expect(page.locator(".cw-verify-detail")).to_contain_text("Hidden state (read before any cell defines it): offset")
    page.screenshot(path=str(SHOTS / "26-fails.png"))
    assert not page.errors, page.errors  # type: ignore[attr-defined]
