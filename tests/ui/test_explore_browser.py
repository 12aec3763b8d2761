"""explore and "Run as cell" in a real browser (issue 37): in Ask mode the user asks what is in a
DataFrame of the kernel; the agent explores it in the kernel's sandboxed fork, unasked; the panel shows
the step as "explored (sandboxed)" with its text and figure as a scratchpad, not a cell, and no
approval card. "Run as cell" (in the step's menu) then proposes the code as a real cell: the usual card, approved, and the
notebook has the cell and its outputs. JupyterLab, Debian's chromium, a real kernel, bubblewrap's host
(the sandbox), and an honest scripted model: the variable it explores is the one the user named."""

from __future__ import annotations

from typing import Any

from devtools.fake_llm import FakeLLM, text, tool_call
from devtools.fake_llm_script import Reply, Shown, reading
from devtools.jupyter_process import JupyterProcess
from tests.ui.conftest import SHOTS, open_new_notebook, open_panel_from_palette
from tests.ui.test_context_browser import run_in_first_cell


def _explore_the_named_frame(seen: Shown) -> Reply:
    name = seen.find_in_prompt(r"what's in @(\w+)")  # the user's words, not the system prompt's
    code = f"print({name}.describe())\nimport matplotlib.pyplot as plt\n{name}.plot()\nplt.title('{name}')"
    return tool_call("explore", {"code": code})


def test_explore_shows_a_sandboxed_scratchpad_and_runs_as_a_cell_once_approved(
    page: Any, lab: JupyterProcess, fake_llm: FakeLLM
) -> None:
    from playwright.sync_api import expect

    fake_llm.script(reading(_explore_the_named_frame), text("df has two columns, a and b."))
    open_new_notebook(page, lab)
    run_in_first_cell(page, 'import pandas as pd\ndf = pd.DataFrame({"a": [1, 2, 3, 4], "b": [10, 20, 30, 45]})')
    open_panel_from_palette(page)
    page.get_by_role("radio", name="Ask").check()
    page.get_by_role("textbox", name="Message Cellwright").fill("what's in @df?")
    page.get_by_role("button", name="Send").click()

    step = page.get_by_test_id("cw-explore")
    expect(step).to_have_attribute("data-explore-state", "sandboxed", timeout=90_000)  # a fresh server's first run
    expect(step.get_by_test_id("cw-explore-label")).to_have_text("explored (sandboxed)")
    expect(page.get_by_test_id("cw-final")).to_contain_text("two columns", timeout=30_000)
    scratchpad = step.get_by_test_id("cw-explore-outputs")
    expect(scratchpad).to_contain_text("mean")
    expect(scratchpad).to_contain_text("not in the notebook")
    figure = scratchpad.locator('.cw-output img[src^="data:image/png"]')
    expect(figure).to_have_count(1)
    page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=figure.element_handle())  # drawn
    expect(step.get_by_test_id("cw-explore-code")).to_be_hidden()  # the code is folded away
    step.locator(".cw-tool-summary").click()
    expect(step.get_by_test_id("cw-explore-code")).to_contain_text("describe()")
    # Asked nothing, added nothing: no card, and no cell of the exploration's code in the notebook.
    expect(page.get_by_role("region", name="Approval required")).to_have_count(0)
    agent_cell = page.locator(".jp-Notebook .jp-Cell").filter(has=page.locator(".cm-content", has_text="describe()"))
    expect(agent_cell).to_have_count(0)
    expect(page.locator(".jp-Notebook .jp-OutputArea-output").filter(has_text="mean")).to_have_count(0)
    page.screenshot(path=str(SHOTS / "explore-1-scratchpad.png"))

    row = page.get_by_test_id("cw-step").filter(has=step)  # "Run as cell" is in the step's menu
    row.get_by_test_id("cw-step-menu-button").click()
    row.get_by_role("menuitem", name="Run as cell").click()
    card = page.get_by_role("region", name="Approval required")
    expect(card).to_contain_text("describe()", timeout=30_000)
    page.screenshot(path=str(SHOTS / "explore-2-run-as-cell-card.png"))
    card.get_by_role("button", name="Approve", exact=True).click()

    cell = agent_cell
    expect(cell).to_have_count(1, timeout=30_000)
    expect(cell.locator(".jp-OutputArea-output").filter(has_text="mean")).to_have_count(1, timeout=30_000)
    expect(cell.locator('.jp-OutputArea-output img[src^="data:image/png"]')).to_have_count(1)
    expect(card).to_have_count(0)
    page.screenshot(path=str(SHOTS / "explore-3-cell.png"))
    assert len(fake_llm.requests) == 2, "Run as cell asked the model nothing"
    assert not page.errors, page.errors  # type: ignore[attr-defined]
