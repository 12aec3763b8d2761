"""Long cells (issue 38) in a real browser: the page is closed while an approved cell runs in the
background and opened again; the panel shows the waiting thread's progress, then the answer the
server resumed the run with when the cell ended. Then, in the same page (no second lab), a
tqdm.notebook bar, an ipywidgets FloatProgress read from its comm messages, shown on the step."""

from __future__ import annotations

from typing import Any

import pytest

from devtools.fake_llm import FakeLLM, text, tool_call
from devtools.jupyter_process import TOKEN, JupyterProcess
from tests.ui.conftest import ask_until_card

# A real tqdm loop that runs until the test lets it end (a file in the notebook's folder).
TRAIN = (
    "import pathlib, time\n"
    "from tqdm import tqdm\n"
    "for i in tqdm(range(600), mininterval=0):\n"
    "    if pathlib.Path('release').exists():\n"
    "        break\n"
    "    time.sleep(0.1)\n"
    "print('trained: loss 0.1')\n"
)

# tqdm.notebook's bar (an ipywidgets FloatProgress in an HBox), moved by the test: 30%, then 70%, then done.
WIDGET_BAR = (
    "import pathlib, time\n"
    "from tqdm.notebook import tqdm\n"
    "bar = tqdm(total=10, mininterval=0)\n"
    "bar.update(3)\n"
    "while not pathlib.Path('more').exists():\n"
    "    time.sleep(0.05)\n"
    "bar.update(4)\n"
    "while not pathlib.Path('done').exists():\n"
    "    time.sleep(0.05)\n"
    "bar.update(3)\n"
    "bar.close()\n"
    "print('widget bar done')\n"
)


@pytest.fixture
def lab_config() -> dict[str, Any]:
    return {"Cellwright": {"background_after": 1}}


def test_a_page_closed_while_a_cell_runs_in_the_background_shows_it_and_the_answer_and_a_widget_bar(
    page: Any, lab: JupyterProcess, fake_llm: FakeLLM
) -> None:
    from playwright.sync_api import expect

    fake_llm.script(tool_call("run_cell", {"code": TRAIN}, id="c1"), text("The loss is 0.1."))
    fake_llm.script(tool_call("run_cell", {"code": WIDGET_BAR}, id="c2"), text("The widget bar ended."))
    card = ask_until_card(page, lab, "train the model")
    card.get_by_role("button", name="Approve", exact=True).click()
    progress = page.get_by_test_id("cw-cell-progress")
    expect(progress).to_contain_text("Running in the background", timeout=30_000)

    page.goto("about:blank")  # the page is gone; the cell goes on, followed by the server
    threads = lab.get("cellwright/api/threads").json()["threads"]
    assert [t["status"] for t in threads] == ["waiting_for_cell"], threads
    page.goto(f"{lab.url}/lab?token={TOKEN}")  # the workspace comes back with its notebook
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
    page.keyboard.press("Alt+Shift+C")
    expect(progress).to_contain_text("Running in the background", timeout=30_000)
    expect(progress).to_contain_text("%")  # tqdm's bar, read on the server
    assert len(fake_llm.requests) == 1, "no model request while the cell runs"

    (lab.root / "release").write_text("")
    expect(page.get_by_test_id("cw-final")).to_contain_text("The loss is 0.1.", timeout=30_000)
    outputs = page.locator(".jp-Notebook .jp-OutputArea-output").filter(has_text="trained: loss 0.1")
    expect(outputs).to_have_count(1, timeout=10_000)

    # An ipywidgets bar: its percentage on the step, read on the server from the widget's comm messages.
    page.get_by_role("textbox", name="Message Cellwright").fill("now with a widget bar")
    page.get_by_role("button", name="Send").click()
    page.get_by_role("region", name="Approval required").get_by_role("button", name="Approve").click()
    percent = progress.locator(".cw-cell-progress-percent")
    expect(percent).to_have_text("30%", timeout=30_000)
    expect(progress.locator(".cw-cell-progress-text")).to_have_count(0)  # read from the widget, not printed
    expect(progress).to_contain_text("Running in the background", timeout=30_000)
    (lab.root / "more").write_text("")
    expect(percent).to_have_text("70%", timeout=30_000)
    assert len(fake_llm.requests) == 3, "no model request while the widget's cell runs"
    (lab.root / "done").write_text("")
    expect(page.get_by_test_id("cw-final").last).to_contain_text("The widget bar ended.", timeout=30_000)
    assert not page.errors, page.errors  # type: ignore[attr-defined]
