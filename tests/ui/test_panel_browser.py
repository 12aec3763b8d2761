"""The user story in a real browser: JupyterLab with Cellwright in Debian's chromium (Playwright),
a real kernel, and the scripted fake LLM. Screenshots go to .output/ui/ (ignored by git)."""

from __future__ import annotations

from typing import Any

from devtools.fake_llm import FakeLLM, text, tool_call
from devtools.jupyter_process import JupyterProcess
from tests.ui.conftest import SHOTS, open_new_notebook, open_panel_from_palette


def test_ask_approve_run_and_answer(page: Any, lab: JupyterProcess, fake_llm: FakeLLM) -> None:
    from playwright.sync_api import expect

    fake_llm.script(
        tool_call(
            "write_todos",
            {
                "todos": [
                    {"content": "Load data.csv", "status": "in_progress"},
                    {"content": "Report", "status": "pending"},
                ]
            },
        ),
        tool_call(
            "run_cell",
            {
                "code": "rows = [l for l in open('data.csv')][1:]\nprint('shape', (len(rows), 2))",
                "description": "Load the CSV",
            },
            id="call_load",
        ),
        tool_call(
            "final_answer",
            {
                "answer": "The data has **3 rows** and 2 columns.",
                "next_items": [{"title": "Plot it", "prompt": "plot the data"}],
            },
        ),
        text(["A plot ", "comes next."]),
    )
    (lab.root / "data.csv").write_text("a,b\n1,2\n3,4\n5,6\n")
    open_new_notebook(page, lab)
    open_panel_from_palette(page)
    box = page.get_by_role("textbox", name="Message Cellwright")
    box.fill("load data.csv and show its shape")
    page.get_by_role("button", name="Send").click()

    card = page.get_by_role("region", name="Approval required")
    card.wait_for(timeout=60_000)  # a fresh server imports langgraph and openai on its first run
    expect(card).to_contain_text("open('data.csv')")
    expect(page.get_by_test_id("cw-todos")).to_contain_text("Load data.csv")
    page.screenshot(path=str(SHOTS / "1-approval-card.png"))
    assert not page.locator(".jp-Notebook .jp-OutputArea-output").filter(has_text="shape").count(), "nothing ran yet"

    card.get_by_role("button", name="Approve", exact=True).click()
    final = page.get_by_test_id("cw-final")
    expect(final).to_contain_text("3 rows", timeout=30_000)
    expect(page.locator(".jp-Notebook .jp-OutputArea-output").filter(has_text="shape (3, 2)")).to_have_count(
        1, timeout=10_000
    )
    expect(page.locator(".jp-Notebook .jp-Cell .cm-content").filter(has_text="open('data.csv')")).to_have_count(1)
    next_item = page.get_by_test_id("cw-next-item")
    expect(next_item).to_have_text("Plot it")
    page.screenshot(path=str(SHOTS / "2-final-answer.png"))

    next_item.click()  # a suggestion sends its prompt
    expect(page.get_by_test_id("cw-final")).to_have_count(2, timeout=30_000)
    assert fake_llm.requests[-1]["messages"][-1] == {"role": "user", "content": "plot the data"}
    assert "sk-ui-secret" not in page.content()
    assert not page.errors, page.errors  # type: ignore[attr-defined]

    # Reopening the tab shows the thread again, without inserting the cell twice.
    page.reload()
    page.wait_for_selector('.jp-Notebook-ExecutionIndicator[data-status="idle"]', timeout=60_000)
    page.keyboard.press("Alt+Shift+C")
    expect(page.get_by_test_id("cw-final").first).to_contain_text("3 rows", timeout=20_000)
    page.wait_for_timeout(1000)
    assert page.locator(".jp-Notebook .jp-OutputArea-output").filter(has_text="shape (3, 2)").count() <= 1
    page.screenshot(path=str(SHOTS / "3-after-reload.png"))
