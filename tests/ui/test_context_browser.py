"""Context in a real browser: `@` mentions of a kernel variable and a workspace file picked with the
keyboard, shown as chips, reaching the model; "Ask Cellwright about this cell" from a cell's
context menu. JupyterLab with Cellwright in Debian's chromium, a real kernel, the scripted fake LLM."""

from __future__ import annotations

import json
import re
from typing import Any

from devtools.fake_llm import FakeLLM, text
from devtools.jupyter_process import JupyterProcess
from tests.ui.conftest import SHOTS, open_new_notebook, open_panel_from_palette


def run_in_first_cell(page: Any, code: str) -> None:
    """Type `code` into the notebook's first cell and run it (Shift+Enter), waiting for its prompt."""
    editing = page.locator(".jp-Notebook.jp-mod-editMode .jp-Cell.jp-mod-active .cm-focused")
    for _ in range(10):  # a click before the editor is attached leaves the notebook in command mode
        page.locator(".jp-Notebook .jp-Cell .cm-content").first.click()
        try:
            editing.wait_for(timeout=2_000)
            break
        except Exception:
            page.wait_for_timeout(500)
    # Typed line by line: the editor auto-indents and closes brackets as it would for a user.
    for i, line in enumerate(code.split("\n")):
        if i:
            page.keyboard.press("Enter")
        page.keyboard.insert_text(line)
    page.keyboard.press("Shift+Enter")
    first = page.locator(".jp-Notebook .jp-Cell").first.locator(".jp-InputPrompt")
    # Seen here: Shift+Enter before the kernel connection is complete moves on without running the cell.
    for _ in range(3):
        try:
            first.filter(has_text=re.compile(r"\[[\d*]+\]")).wait_for(timeout=10_000)
            break
        except Exception:
            first.click()
            page.keyboard.press("Shift+Enter")
    try:
        # A cold first `import pandas` on a loaded machine has taken more than 30 s here.
        first.filter(has_text=re.compile(r"\[\d+\]")).wait_for(timeout=90_000)
    except Exception:
        page.screenshot(path=str(SHOTS / "context-run-cell-failed.png"))
        raise


def variables_route(lab: JupyterProcess) -> tuple[bool, str]:
    """Whether the server answers `POST cellwright/api/variables` for the open notebook's kernel."""
    sessions = lab.get("api/sessions").json()
    body = {"kernel_id": sessions[0]["kernel"]["id"], "notebook_path": sessions[0]["path"]} if sessions else {}
    response = lab.request("POST", "cellwright/api/variables", body)
    return response.status_code == 200, f"{response.status_code} {response.text[:200]}"


def user_text(request: dict[str, Any]) -> str:
    """Everything the model was sent as the user's words, whatever the content's shape."""
    return json.dumps([m.get("content") for m in request["messages"] if m.get("role") == "user"])


def test_mention_variable_and_file_with_keyboard(page: Any, lab: JupyterProcess, fake_llm: FakeLLM) -> None:
    from playwright.sync_api import expect

    fake_llm.script(text("Revenue by month is plotted next."))
    (lab.root / "sales_2024.csv").write_text("month,revenue\n1,3.0\n2,4.5\n")
    (lab.root / ".sales_secret.csv").write_text("hidden\n")
    open_new_notebook(page, lab)
    run_in_first_cell(page, 'import pandas\nsales_df = pandas.DataFrame({"month": [1, 2], "revenue": [3.0, 4.5]})')
    has_variables, why = variables_route(lab)

    open_panel_from_palette(page)
    box = page.get_by_role("textbox", name="Message Cellwright")
    box.click()
    listbox = page.get_by_role("listbox", name="Variables and files to mention")
    expected = "plot "
    page.keyboard.type("plot @sal")
    expect(listbox).to_be_visible(timeout=10_000)
    expect(box).to_have_attribute("aria-controls", re.compile(r".+"))  # the list it points into
    file_option = listbox.get_by_role("option").filter(has_text="sales_2024.csv")
    expect(file_option).to_have_count(1, timeout=10_000)
    expect(listbox).not_to_contain_text("secret")  # hidden files are never offered
    expect(box).to_have_attribute("aria-activedescendant", re.compile(r"-option-0$"))
    if has_variables:
        variable = listbox.get_by_role("option").first
        expect(variable).to_contain_text("sales_df", timeout=10_000)
        expect(variable).to_contain_text("DataFrame (2, 2)")
        page.screenshot(path=str(SHOTS / "context-1-mention-list.png"))
        page.keyboard.press("ArrowDown")  # to the file
        expect(listbox.get_by_role("option").nth(1)).to_have_attribute("aria-selected", "true")
        page.keyboard.press("ArrowUp")  # back to the variable
        expect(variable).to_have_attribute("aria-selected", "true")
        page.keyboard.press("Enter")
        expected += "@sales_df "
        expect(box).to_have_value(expected)
        expect(listbox).to_have_count(0)
        expect(box).not_to_have_attribute("aria-controls", re.compile(r".*"))
        page.keyboard.type("from @sales_2")
        expected += "from "
    else:
        print(f"variables route not available ({why}): the variable part is skipped, files only")
        page.keyboard.press("Backspace")
        page.keyboard.press("Backspace")
        page.keyboard.press("Backspace")
        page.keyboard.type("sales_2")
    expect(listbox.get_by_role("option")).to_have_count(1, timeout=10_000)
    page.keyboard.press("Tab")
    expected += "@sales_2024.csv "
    expect(box).to_have_value(expected)

    # Escape closes the list without touching the text; typing on into the next word is plain text.
    page.keyboard.type("@zz")
    expect(listbox).to_be_visible()
    expect(page.get_by_test_id("cw-mentions")).to_contain_text("Nothing to mention matches", timeout=10_000)
    page.keyboard.press("Escape")
    expect(listbox).to_have_count(0)
    for _ in range(3):
        page.keyboard.press("Backspace")
    page.keyboard.type("by month")
    expected += "by month"
    expect(box).to_have_value(expected)
    page.keyboard.press("Enter")

    message = page.get_by_test_id("cw-user-message")
    expect(message).to_contain_text("by month", timeout=20_000)
    chips = message.get_by_test_id("cw-mention-chip")
    names = ["@sales_df", "@sales_2024.csv"] if has_variables else ["@sales_2024.csv"]
    expect(chips).to_have_text(names)
    expect(page.get_by_test_id("cw-final")).to_contain_text("plotted next", timeout=30_000)
    page.screenshot(path=str(SHOTS / "context-2-mention-chips.png"))
    sent = user_text(fake_llm.requests[0])
    for name in names:
        assert name in sent, sent
    assert not page.errors, page.errors  # type: ignore[attr-defined]


def test_ask_about_cell_from_context_menu(page: Any, lab: JupyterProcess, fake_llm: FakeLLM) -> None:
    from playwright.sync_api import expect

    fake_llm.script(text("It divides by zero."))
    open_new_notebook(page, lab)
    run_in_first_cell(page, 'print("hello from the cell")\n1/0')
    expect(
        page.locator(".jp-Notebook .jp-OutputArea-output").filter(has_text="ZeroDivisionError").first
    ).to_be_visible()

    page.locator(".jp-Notebook .jp-Cell").first.locator(".jp-InputPrompt").click(button="right")
    item = page.locator('.lm-Menu-item[data-command="cellwright:ask-about-cell"]')
    expect(item).to_contain_text("Ask Cellwright about This Cell")
    item.click()

    attachment = page.get_by_test_id("cw-attachment")
    expect(attachment).to_contain_text(re.compile(r"Cell 1 \[\d+\] of Untitled.ipynb"), timeout=10_000)
    box = page.get_by_role("textbox", name="Message Cellwright")
    expect(box).to_be_focused()
    page.screenshot(path=str(SHOTS / "context-3-cell-attached.png"))
    page.keyboard.type("why does this fail?")
    page.keyboard.press("Enter")

    message = page.get_by_test_id("cw-user-message")
    expect(message).to_contain_text("why does this fail?", timeout=20_000)
    attached = message.get_by_test_id("cw-cell-context")
    expect(attached.locator("summary")).to_have_text(re.compile(r"Cell 1 \[\d+\] attached"))
    attached.locator("summary").click()
    expect(attached.locator("pre")).to_contain_text("1/0")
    expect(attached.locator("pre")).to_contain_text("ZeroDivisionError: division by zero")
    expect(attachment).to_have_count(0)
    expect(page.get_by_test_id("cw-final")).to_contain_text("divides by zero", timeout=30_000)
    sent = user_text(fake_llm.requests[0])
    assert "why does this fail?" in sent and "1/0" in sent and "hello from the cell" in sent, sent
    assert "ZeroDivisionError" in sent and "\\u001b[" not in sent, sent  # the traceback without ANSI colours
    assert not page.errors, page.errors  # type: ignore[attr-defined]
