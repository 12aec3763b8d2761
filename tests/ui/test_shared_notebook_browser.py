"""Two real browser pages on one notebook under jupyter-collaboration (its own venv:
devtools/collaboration.py): a run driven through the API shows each agent cell live in both, once,
with its output; closing the first page mid-run does not stop the rest from landing; the saved file
has each cell once. The pages only view (the panel's own switch is another change)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest

from devtools.collaboration import collaboration_server
from devtools.fake_llm import FakeLLM, text, tool_call
from devtools.jupyter_process import QUIET_LAB_ARGS, TOKEN, JupyterProcess, quiet_lab_settings
from tests.conftest import of_type
from tests.ui.conftest import SHOTS, chromium

PATH = "together.ipynb"


@pytest.fixture
def rtc_lab(tmp_path: Path, fake_llm: FakeLLM, servers: list) -> JupyterProcess:
    env = {"OPENAI_BASE_URL": fake_llm.base_url, "OPENAI_API_KEY": "sk-ui-secret", "CELLWRIGHT_MODEL": "fake-model"}
    quiet_lab_settings(tmp_path / "config")
    server = collaboration_server(tmp_path, env, app="lab", args=tuple(QUIET_LAB_ARGS))
    servers.append(server)
    return server.start()


@pytest.fixture
def browser(rtc_lab: JupyterProcess) -> Iterator[Any]:
    with chromium() as shared:
        yield shared


def open_shared(browser: Any, lab: JupyterProcess) -> Any:
    page = browser.new_context(viewport={"width": 1300, "height": 900}).new_page()
    page.goto(f"{lab.url}/lab/tree/{PATH}?reset&token={TOKEN}")
    page.locator(".jp-Cell", has_text="typed_by_user").wait_for(timeout=60_000)
    config = page.evaluate("JSON.parse(document.getElementById('jupyter-config-data').textContent)")
    assert config.get("disableRTC") is False  # the collaboration extension serves this page
    return page


def agent_cell(page: Any, source: str) -> Any:
    return page.locator(".jp-Notebook .jp-Cell", has_text=source)


def test_two_pages_see_each_agent_cell_once_and_closing_one_loses_nothing(
    rtc_lab: JupyterProcess, fake_llm: FakeLLM, browser: Any
) -> None:
    from playwright.sync_api import expect

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell("typed_by_user = 1", id="user-0")]
    nbformat.write(notebook, str(rtc_lab.root / PATH))
    kernel = rtc_lab.open_notebook(PATH)
    fake_llm.script(
        tool_call("run_cell", {"code": "print('first' + '_out')"}, id="call_first"),
        tool_call("run_cell", {"code": "print('second' + '_out')"}, id="call_second"),
        tool_call("run_cell", {"code": "print('third' + '_out')"}, id="call_third"),
        text("Done."),
    )
    first_page, second_page = open_shared(browser, rtc_lab), open_shared(browser, rtc_lab)

    thread = rtc_lab.request("POST", "cellwright/api/threads", {"notebook_path": PATH}).json()["thread_id"]
    assert (
        rtc_lab.request(
            "POST", f"cellwright/api/threads/{thread}/runs", {"message": "go", "kernel_id": kernel}
        ).status_code
        == 202
    )
    rtc_lab.events(thread)
    approve = {"decision": "approve"}
    assert rtc_lab.request("POST", f"cellwright/api/threads/{thread}/approvals/call_first", approve).status_code == 202
    for page in (first_page, second_page):
        cell = agent_cell(page, "print('first' + '_out')")
        expect(cell).to_have_count(1, timeout=30_000)
        expect(cell.locator(".jp-OutputArea-output")).to_have_text("first_out", timeout=30_000)
        expect(cell.locator(".jp-InputPrompt")).to_contain_text("[1]", timeout=30_000)

    rtc_lab.events(thread)
    first_page.context.close()  # the first browser goes away mid-run
    for call in ("call_second", "call_third"):
        assert rtc_lab.request("POST", f"cellwright/api/threads/{thread}/approvals/{call}", approve).status_code == 202
        events = rtc_lab.events(thread)
    assert of_type(events, "final")
    for name in ("second", "third"):
        cell = agent_cell(second_page, f"print('{name}' + '_out')")
        expect(cell).to_have_count(1, timeout=30_000)
        expect(cell.locator(".jp-OutputArea-output")).to_have_text(f"{name}_out", timeout=30_000)
    expect(second_page.locator(".jp-Notebook .jp-Cell")).to_have_count(4)
    second_page.screenshot(path=str(SHOTS / "shared_notebook_second_page.png"))
    saved = wait_saved(rtc_lab, second_page)
    calls = [c["metadata"].get("cellwright", {}).get("tool_call_id") for c in saved]
    assert calls == [None, "call_first", "call_second", "call_third"]


def wait_saved(lab: JupyterProcess, page: Any) -> list[dict[str, Any]]:
    """The file once it holds the four cells. The room saves on its own timer (a second after the last
    change) and tells no one but its peers: read the file until it has them, up to 30 s."""
    path = lab.root / PATH
    deadline = time.monotonic() + 30
    cells: list[dict[str, Any]] = []
    while True:
        try:
            cells = [dict(cell) for cell in nbformat.read(str(path), as_version=4)["cells"]]
        except nbformat.reader.NotJSONError:
            # jupyter_server's atomic writing keeps a backup and rewrites the file in place:
            # a read in the middle of a save sees it empty or cut short.
            cells = []
        if len(cells) == 4 or time.monotonic() > deadline:
            return cells
        page.wait_for_timeout(200)
