"""Issue 44 in the real browser, with scripted models that know only what the tools showed them: the
user asks in words to change their first cell and the model finds it by the id read_notebook gave;
the agent fixes its own failed cell with no browser open, and the notebook opened afterwards shows
that cell once, fixed, with the edit's provenance."""

from __future__ import annotations

from typing import Any

import nbformat

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


def test_asked_in_words_the_model_reads_the_id_and_edits_the_users_first_cell(
    page: Any, lab: JupyterProcess, fake_llm: FakeLLM
) -> None:
    from playwright.sync_api import expect

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source, id=cell_id) for cell_id, source in USER_CELLS]
    nbformat.write(notebook, str(lab.root / NOTEBOOK))
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
    card.get_by_role("button", name="Approve").click()

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
