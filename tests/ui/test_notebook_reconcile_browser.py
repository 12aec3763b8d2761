"""Issue 23 without jupyter-collaboration, in the real browser: the notebook tells the truth. Agent
cells of a run nobody watched land once, in order, with their outputs, when the notebook is opened;
a reload mid-run loses none; a user typing while the agent inserts keeps their text; an agent cell
the user deleted stays deleted. Cellwright never writes the .ipynb: the browser saves it."""

from __future__ import annotations

import json
import re
import time
from typing import Any

import nbformat

from devtools.fake_llm import FakeLLM, text, tool_call
from devtools.jupyter_process import TOKEN, JupyterProcess
from tests.ui.conftest import SHOTS, ask_until_card, open_panel_from_palette
from tests.ui.test_workflow_browser import _save

NOTEBOOK = "report.ipynb"
CELLS = ".jp-Notebook .jp-Cell"


def _api(lab: JupyterProcess, method: str, path: str, body: Any = None, expect: int = 200) -> Any:
    response = lab.request(method, f"cellwright/api/{path}", body)
    assert response.status_code == expect, response.text
    return response.json() if response.content else None


def _until_finished(lab: JupyterProcess, thread: str, after: int = 0) -> list[dict[str, Any]]:
    """The thread's events after `after` up to the next run_finished (a run may start after the POST)."""
    events: list[dict[str, Any]] = []
    for _ in range(100):
        events += lab.events(thread, events[-1]["seq"] if events else after)
        if any(e["type"] == "run_finished" for e in events):
            return events
        time.sleep(0.1)  # polling the server for a run that has not started yet, not a wait for the product
    raise AssertionError(f"no run_finished: {events}")


def _run_through_api(lab: JupyterProcess, fake_llm: FakeLLM, approvals: list[str]) -> list[dict[str, Any]]:
    """A run of a thread of NOTEBOOK driven through the HTTP API only (no page has it open), each
    approval in turn: every event."""
    lab.open_notebook(NOTEBOOK)
    thread = _api(lab, "POST", "threads", {"notebook_path": NOTEBOOK}, 201)["thread_id"]
    _api(lab, "POST", f"threads/{thread}/runs", {"message": "analyse", "notebook_path": NOTEBOOK}, 202)
    events = _until_finished(lab, thread)
    for call_id in approvals:
        assert [e for e in events if e["type"] == "approval_required"][-1]["id"] == call_id
        _api(lab, "POST", f"threads/{thread}/approvals/{call_id}", {"decision": "approve"}, 202)
        events += _until_finished(lab, thread, events[-1]["seq"])
    return events


def _open(page: Any, lab: JupyterProcess, path: str, reconciles: int = 1) -> None:
    """Open `path` in a fresh workspace and wait until the bridge has reconciled it `reconciles` times."""
    page.goto(f"{lab.url}/lab/tree/{path}?reset&token={TOKEN}")
    _reconciled(page, reconciles)


def _reconciled(page: Any, times: int) -> None:
    from playwright.sync_api import expect

    # At least `times`: binding and a thread's stream catching up may each reconcile once more.
    at_least = re.compile("^(" + "|".join(str(n) for n in range(times, times + 20)) + ")$")
    expect(page.locator(".jp-NotebookPanel").first).to_have_attribute("data-cw-reconciled", at_least, timeout=60_000)


def _show_panel(page: Any) -> None:
    """The panel, by its shortcut (Alt+Shift+C): typing into the palette may miss it, and letters that
    reach a notebook in command mode change its cells ("r" makes a cell raw)."""
    box = page.get_by_role("textbox", name="Message Cellwright")
    for _ in range(5):
        if box.is_visible():
            return
        page.locator(".jp-Notebook").first.click()
        page.keyboard.press("Escape")
        page.keyboard.press("Alt+Shift+C")
        try:
            box.wait_for(timeout=3_000)
            return
        except Exception:
            continue
    open_panel_from_palette(page)


def _saved(lab: JupyterProcess, path: str = NOTEBOOK) -> dict[str, Any]:
    return json.loads((lab.root / path).read_text())


def _agent_ids(notebook: dict[str, Any]) -> list[str]:
    return [c["metadata"]["cellwright"]["tool_call_id"] for c in notebook["cells"] if "cellwright" in c["metadata"]]


def _text(output: dict[str, Any]) -> str:
    """An output's text as saved (nbformat may split it into lines)."""
    value = output.get("text", output.get("data", {}).get("text/plain", ""))
    return "".join(value) if isinstance(value, list) else value


def _write_notebook(lab: JupyterProcess, *sources: str) -> None:
    """The user's notebook, saved before the test (the server writes none)."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    nbformat.write(nb, str(lab.root / NOTEBOOK))


SCRIPT = (
    tool_call("run_cell", {"code": "total = 6 * 7\nprint('total is', total)"}, id="first"),
    tool_call("add_markdown", {"content": "## Findings\nThe total is **42**."}, id="note"),
    tool_call("run_cell", {"code": "total + 1"}, id="second"),
    text("Done."),
)


def test_cells_of_a_run_driven_through_the_api_land_once_and_a_deleted_one_stays_deleted(
    page: Any, lab: JupyterProcess, fake_llm: FakeLLM
) -> None:
    """Two of the issue's tests on one server (one run, two minutes of CI saved): the cells of a run
    nobody watched land once with outputs, a reload keeps them once; then the user deletes one, saves
    and reloads, and it stays deleted."""
    from playwright.sync_api import expect

    _write_notebook(lab, "mine = 'the user cell'")
    fake_llm.script(*SCRIPT)
    _run_through_api(lab, fake_llm, ["first", "second"])
    assert _agent_ids(_saved(lab)) == []  # the server never wrote the file

    _open(page, lab, NOTEBOOK)
    _show_panel(page)
    cells = page.locator(CELLS)
    expect(cells).to_have_count(4)
    expect(cells.nth(0)).to_contain_text("the user cell")
    expect(cells.nth(1)).to_contain_text("total is 42")  # its stored output
    expect(cells.nth(2).locator("h2")).to_contain_text("Findings")
    expect(cells.nth(3).locator(".jp-OutputArea-output")).to_have_text("43")
    expect(page.get_by_text("3 cells the agent ran while this notebook was closed were added")).to_be_visible()
    page.screenshot(path=str(SHOTS / "23-reconciled.png"))

    saved = _save(page, lab, lambda nb: len(_agent_ids(nb)) == 3)
    assert _agent_ids(saved) == ["first", "note", "second"]
    first, second = saved["cells"][1], saved["cells"][3]
    assert _text(first["outputs"][0]) == "total is 42\n" and _text(second["outputs"][0]) == "43"
    assert second["execution_count"] == first["execution_count"] + 1
    assert first["metadata"]["cellwright"]["decision"] == "approved"
    assert saved["metadata"]["cellwright"]["placed"] == ["first", "note", "second"]

    # A reload reconciles again and finds nothing missing.
    page.reload()
    _reconciled(page, 1)
    expect(cells).to_have_count(4)

    # The user deletes the Markdown cell (command mode, d d), saves and reloads: it stays deleted.
    cells.nth(2).locator(".jp-InputPrompt").click()
    page.keyboard.press("Escape")
    page.keyboard.press("d")
    page.keyboard.press("d")
    expect(cells).to_have_count(3)
    saved = _save(page, lab, lambda nb: len(nb["cells"]) == 3)
    assert _agent_ids(saved) == ["first", "second"]
    page.reload()
    _reconciled(page, 1)
    expect(cells).to_have_count(3)
    expect(page.locator(".jp-Notebook h2")).to_have_count(0)
    assert not page.errors, page.errors  # type: ignore[attr-defined]


def test_a_reload_between_two_approved_cells_loses_neither(page: Any, lab: JupyterProcess, fake_llm: FakeLLM) -> None:
    from playwright.sync_api import expect

    fake_llm.script(
        tool_call("run_cell", {"code": "step = 1\nprint('step one')"}, id="one"),
        tool_call("run_cell", {"code": "print('step two', step + 1)"}, id="two"),
        text("Both steps ran."),
    )
    card = ask_until_card(page, lab, "two steps")
    card.get_by_role("button", name="Approve", exact=True).click()
    cells = page.locator(CELLS)
    expect(cells.filter(has_text="step one")).to_have_count(1, timeout=30_000)  # written live, not saved
    expect(page.get_by_role("region", name="Approval required")).to_be_visible(timeout=30_000)

    page.reload()  # the first cell was never saved: the file lacks it
    _reconciled(page, 1)
    _show_panel(page)
    page.get_by_role("region", name="Approval required").get_by_role("button", name="Approve", exact=True).click()
    expect(page.get_by_test_id("cw-final")).to_contain_text("Both steps ran", timeout=30_000)
    expect(cells.filter(has_text="step two 2")).to_have_count(1, timeout=30_000)

    saved = _save(page, lab, lambda nb: len(_agent_ids(nb)) == 2)
    assert _agent_ids(saved) == ["one", "two"]
    assert _text(saved["cells"][0]["outputs"][0]) == "step one\n"
    expect(cells).to_have_count(2)

    # "Show in notebook" selects the step's cell.
    page.locator('.cw-step[data-tool-call-id="one"]').get_by_test_id("cw-step-menu-button").click()  # its "⋯" menu
    page.locator('[data-testid="cw-show-in-notebook"][data-tool-call-id="one"]').click()
    expect(cells.nth(0)).to_have_class(re.compile("jp-mod-active"))
    assert not page.errors, page.errors  # type: ignore[attr-defined]


def test_a_user_typing_while_the_agent_inserts_keeps_every_keystroke(
    page: Any, lab: JupyterProcess, fake_llm: FakeLLM
) -> None:
    from playwright.sync_api import expect

    fake_llm.script(
        tool_call("run_cell", {"code": "import time\ntime.sleep(1)\nprint('agent one')"}, id="a1"),
        tool_call("run_cell", {"code": "print('agent two')"}, id="a2"),
        text("Two cells."),
    )
    _api(lab, "PUT", "config", {"auto_approve": ["run_cell"]})  # the agent inserts without waiting for a click
    _write_notebook(lab, "note = 'typed")
    lab.open_notebook(NOTEBOOK)  # its kernel, as for a notebook opened before (no kernel picker)
    _open(page, lab, NOTEBOOK)
    _show_panel(page)
    page.get_by_role("textbox", name="Message Cellwright").fill("two cells please")
    page.get_by_role("button", name="Send").click()

    # Type into the user's cell, key by key, while the agent's cells arrive below it: the first one
    # lands between two halves of the typing (unsaved), the second while the second half is typed.
    editor = page.locator(CELLS).nth(0).locator(".cm-content")
    editor.click()
    page.keyboard.press("End")
    page.keyboard.type(" while the agent works,", delay=40)
    expect(page.locator(CELLS).filter(has_text="agent one")).to_have_count(1, timeout=60_000)
    page.keyboard.type(" every key kept'", delay=120)
    expect(page.locator(CELLS).filter(has_text="agent two")).to_have_count(1, timeout=30_000)

    saved = _save(page, lab, lambda nb: len(_agent_ids(nb)) == 2)
    assert "".join(saved["cells"][0]["source"]) == "note = 'typed while the agent works, every key kept'"
    assert _agent_ids(saved) == ["a1", "a2"] and len(saved["cells"]) == 3
    assert not page.errors, page.errors  # type: ignore[attr-defined]


def test_a_second_window_catches_up_once_when_it_comes_back(page: Any, lab: JupyterProcess, fake_llm: FakeLLM) -> None:
    """Two windows on one notebook (no collaboration): the one whose panel drives the run writes the
    cells live; the other adds them, once and in order, when it is looked at again."""
    from playwright.sync_api import expect

    fake_llm.script(*SCRIPT)
    _write_notebook(lab, "mine = 1")
    lab.open_notebook(NOTEBOOK)
    other = page.context.browser.new_page(viewport={"width": 1500, "height": 950})  # a browser of its own
    _open(other, lab, NOTEBOOK)
    _open(page, lab, NOTEBOOK)
    _show_panel(page)
    page.get_by_role("textbox", name="Message Cellwright").fill("analyse")
    page.get_by_role("button", name="Send").click()
    for _ in range(2):
        page.get_by_role("region", name="Approval required").get_by_role("button", name="Approve", exact=True).click()
        expect(page.get_by_role("region", name="Approval required")).to_have_count(0, timeout=30_000)
    expect(page.get_by_test_id("cw-final")).to_contain_text("Done", timeout=30_000)
    expect(page.locator(CELLS)).to_have_count(4)

    other.bring_to_front()
    # Headless pages are always "visible": the event a browser sends when a window is shown again.
    other.evaluate("document.dispatchEvent(new Event('visibilitychange'))")
    cells = other.locator(CELLS)
    expect(cells).to_have_count(4, timeout=30_000)
    for index, shown in ((1, "total is 42"), (2, "Findings"), (3, "43")):
        expect(cells.nth(index)).to_contain_text(shown)
    before = int(other.locator(".jp-NotebookPanel").first.get_attribute("data-cw-reconciled"))
    other.evaluate("document.dispatchEvent(new Event('visibilitychange'))")  # again: nothing more to add
    _reconciled(other, before + 1)
    expect(cells).to_have_count(4)
    assert not page.errors, page.errors  # type: ignore[attr-defined]
