"""Issue 44 in the real browser, with scripted models that know only what the tools showed them: the
user asks in words to change their first cell and the model finds it by the id read_notebook gave;
the agent fixes its own failed cell with no browser open, and the notebook opened afterwards shows
that cell once, fixed, with the edit's provenance."""

from __future__ import annotations

import re
from typing import Any

import nbformat
import pytest

from devtools.fake_llm import FakeLLM, reading, text, tool_call
from devtools.jupyter_process import JupyterProcess
from tests.ui.conftest import SHOTS, open_panel_from_palette
from tests.ui.test_notebook_reconcile_browser import CELLS, NOTEBOOK, _api, _open, _saved, _until_finished
from tests.ui.test_workflow_browser import _save

USER_CELLS = [
    ("cell-aa", "alpha = 1"),
    ("cell-bb", "beta = alpha + 1"),
    ("cell-cc", "gamma = 3"),
    ("cell-dd", "print(beta)"),
]
FAILED_ID = r"\[cell_id (cw-[0-9a-f]+)"


@pytest.fixture
def lab_config() -> dict[str, Any]:
    # window.jupyterapp: the user's "Run All" is JupyterLab's own command.
    return {"LabApp": {"expose_app_in_browser": True}}


def test_asked_in_words_the_model_reads_the_id_and_edits_the_users_first_cell(
    page: Any, lab: JupyterProcess, fake_llm: FakeLLM
) -> None:
    from playwright.sync_api import expect

    _write_user_notebook(lab)
    fake_llm.script(
        tool_call("read_notebook", {}),
        reading(lambda seen: tool_call("edit_cell", {"cell_id": seen.cell("alpha")["id"], "source": "alpha = 10"})),
        text("alpha is 10 now."),
    )
    lab.open_notebook(NOTEBOOK)  # its kernel (JupyterLab would otherwise ask which one)
    _open(page, lab, NOTEBOOK)
    open_panel_from_palette(page)
    page.get_by_role("textbox", name="Message Cellwright").fill("change alpha in my first cell to 10")
    page.get_by_role("button", name="Send").click()
    card = page.get_by_role("region", name="Approval required")
    card.wait_for(timeout=60_000)
    expect(card).to_have_attribute("data-tool-name", "edit_cell")
    expect(card.get_by_test_id("cw-diff")).to_contain_text("+alpha = 10")
    card.get_by_role("button", name="Approve", exact=True).click()

    cells = page.locator(CELLS)
    expect(cells.first).to_contain_text("alpha = 10", timeout=30_000)
    expect(cells).to_have_count(4)
    expect(cells.nth(1)).to_contain_text("beta = alpha + 1")
    page.screenshot(path=str(SHOTS / "44-edited-by-id.png"))
    saved = _save(page, lab, lambda nb: "alpha = 10" in "".join(nb["cells"][0]["source"]))["cells"]
    assert [c["id"] for c in saved] == [c for c, _ in USER_CELLS]
    assert [("".join(c["source"])) for c in saved[1:]] == [s for _, s in USER_CELLS[1:]]
    assert not page.errors, page.errors  # type: ignore[attr-defined]


def test_a_cell_fixed_with_no_browser_open_shows_once_fixed_when_opened(
    page: Any, lab: JupyterProcess, fake_llm: FakeLLM
) -> None:
    from playwright.sync_api import expect

    nbformat.write(nbformat.v4.new_notebook(), str(lab.root / NOTEBOOK))
    fake_llm.script(
        tool_call("run_cell", {"code": "ratio = 1 / 0"}),
        reading(
            lambda seen: tool_call(
                "edit_cell", {"cell_id": seen.find(FAILED_ID, tool="run_cell"), "source": "ratio = 1 / 4\nprint(ratio)"}
            )
        ),
        text("Fixed."),
    )
    lab.open_notebook(NOTEBOOK)  # its kernel, as JupyterLab would start it; no page has the notebook
    thread = _api(lab, "POST", "threads", {"notebook_path": NOTEBOOK}, 201)["thread_id"]
    _api(lab, "POST", f"threads/{thread}/runs", {"message": "compute the ratio", "notebook_path": NOTEBOOK}, 202)
    events = _until_finished(lab, thread)
    for _ in range(2):  # the cell, then its fix: each approved by the id its card carries
        card = [e for e in events if e["type"] == "approval_required"][-1]
        _api(lab, "POST", f"threads/{thread}/approvals/{card['id']}", {"decision": "approve"}, 202)
        events += _until_finished(lab, thread, events[-1]["seq"])
    fixed = [e for e in events if e["type"] == "cell_started"][-1]
    assert fixed["edit"] is True and events[-1]["status"] == "completed"
    assert _saved(lab)["cells"] == []  # the server never writes the file

    _open(page, lab, NOTEBOOK)
    cells = page.locator(CELLS)
    expect(cells).to_have_count(1)
    expect(cells.first).to_contain_text("ratio = 1 / 4")
    expect(cells.first.locator(".jp-OutputArea-output")).to_contain_text("0.25")
    expect(cells.first).not_to_contain_text("ZeroDivisionError")
    page.screenshot(path=str(SHOTS / "44-fixed-before-opened.png"))
    saved = _save(page, lab, lambda nb: len(nb["cells"]) == 1 and "1 / 4" in "".join(nb["cells"][0]["source"]))
    meta = saved["cells"][0]["metadata"]["cellwright"]
    assert saved["cells"][0]["id"] == fixed["cell_id"] and meta["tool_call_id"] == fixed["id"]
    assert meta["previous_source"] == "ratio = 1 / 0"  # the edit's provenance: what Undo gives back
    assert not page.errors, page.errors  # type: ignore[attr-defined]


def _write_user_notebook(lab: JupyterProcess) -> None:
    """The user's four cells, by their ids, saved as the notebook the tests open."""
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source, id=cell_id) for cell_id, source in USER_CELLS]
    nbformat.write(notebook, str(lab.root / NOTEBOOK))


def _run_all(page: Any, printed: str) -> None:
    """Run every cell with JupyterLab's own "Run All" once the notebook's kernel is connected and idle,
    until the last cell printed `printed`. (Before the connection, Run All finds "no kernel" and opens
    JupyterLab's kernel picker, which waits for a click for ever.)"""
    from playwright.sync_api import expect

    page.wait_for_function(KERNEL_CONNECTED, timeout=60_000)
    # Not awaited: the command's promise ends with the last cell, which the output below shows.
    page.evaluate("() => { void window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
    expect(page.locator(CELLS).nth(3).locator(".jp-OutputArea-output")).to_have_text(printed, timeout=60_000)


KERNEL_CONNECTED = """() => {
    const kernel = window.jupyterapp.shell.currentWidget?.sessionContext?.session?.kernel;
    return !!kernel && kernel.connectionStatus === 'connected' && kernel.status === 'idle';
}"""


def _counts(page: Any) -> list[int]:
    prompts = page.locator(CELLS).locator(".jp-InputPrompt").all_inner_texts()
    return [int(text.strip("[]: ")) for text in prompts]


def test_stale_badges_then_approve_and_rerun_dependents_brings_them_up_to_date(
    page: Any, lab: JupyterProcess, fake_llm: FakeLLM
) -> None:
    """Issue 42: the agent's edit of the first cell, approved as it stands, leaves cells 1 and 3 stale,
    and their badges say why; the user runs all and saves, and the badges go; the next edit, approved
    with "Approve and re-run dependents", re-runs them after it in order, and no badge comes back."""
    from playwright.sync_api import expect

    _write_user_notebook(lab)
    fake_llm.script(
        tool_call("read_notebook", {}),
        reading(lambda seen: tool_call("edit_cell", {"cell_id": seen.cell("alpha")["id"], "source": "alpha = 10"})),
        text("alpha is 10 now."),  # says nothing of the stale cells: sent back once
        reading(
            lambda seen: text(f"alpha is 10; cells {seen.find_in_prompt(r'left cells ([0-9, ]+) stale')} are stale.")
        ),
        reading(lambda seen: tool_call("edit_cell", {"cell_id": seen.cell("alpha")["id"], "source": "alpha = 20"})),
        reading(lambda seen: text(f"alpha is 20; re-ran cells {seen.find(r'made stale .cells ([0-9, ]+)')}.")),
    )
    lab.open_notebook(NOTEBOOK)
    _open(page, lab, NOTEBOOK)
    _run_all(page, "2")
    _save(page, lab, lambda nb: all(c.get("execution_count") for c in nb["cells"]))
    cells = page.locator(CELLS)
    badges = page.get_by_test_id("cw-stale-badge")
    expect(badges).to_have_count(0)

    open_panel_from_palette(page)
    box = page.get_by_role("textbox", name="Message Cellwright")
    box.fill("change alpha in my first cell to 10")
    page.get_by_role("button", name="Send").click()
    card = page.get_by_role("region", name="Approval required")
    card.wait_for(timeout=60_000)
    expect(card.get_by_test_id("cw-makes-stale")).to_contain_text("redefines alpha, read by cell 1")
    expect(card.get_by_test_id("cw-approve-rerun")).to_be_visible()
    card.get_by_role("button", name="Approve", exact=True).click()
    expect(page.get_by_text("alpha is 10; cells 1, 3 are stale.")).to_be_visible(timeout=60_000)
    expect(badges).to_have_count(2)  # cell 2 reads nothing alpha changed
    expect(cells.nth(1).get_by_test_id("cw-stale-badge")).to_have_text("stale")
    expect(cells.nth(1).get_by_test_id("cw-stale-badge")).to_have_attribute(
        "title", re.compile(r"reads alpha, redefined by cell 0 at \[\d+\]")
    )
    expect(cells.nth(3).get_by_test_id("cw-stale-badge")).to_have_attribute(
        "title", re.compile("reads beta from cell 1")
    )
    page.screenshot(path=str(SHOTS / "42-stale-badges.png"))

    _run_all(page, "11")  # the user brings them up to date: once saved, the graph says so
    _save(page, lab, lambda nb: "11" in str(nb["cells"][3].get("outputs")))
    expect(badges).to_have_count(0)

    box.fill("now make it 20, and bring the cells that read it up to date")
    page.get_by_role("button", name="Send").click()
    card.wait_for(timeout=60_000)
    expect(card.get_by_test_id("cw-makes-stale")).to_contain_text("redefines alpha, read by cell 1")
    card.get_by_test_id("cw-approve-rerun").click()
    expect(page.get_by_text("alpha is 20; re-ran cells 1, 3.")).to_be_visible(timeout=60_000)
    expect(cells.nth(3).locator(".jp-OutputArea-output")).to_have_text("21")
    expect(badges).to_have_count(0)
    counts = _counts(page)
    assert counts[0] < counts[1] < counts[3], counts  # the edit, then its dependents in dependency order
    graph = _api(lab, "GET", f"notebook/graph?path={NOTEBOOK}", None, 200)
    assert not [c for c in graph["cells"] if c["stale"]], graph  # the badges' source agrees
    page.screenshot(path=str(SHOTS / "42-rerun-dependents.png"))
    assert not page.errors, page.errors  # type: ignore[attr-defined]
