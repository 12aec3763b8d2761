"""An outside ACP agent chosen in the panel's picker (issue 40): the user asks, the agent's
permission request and its file write come up as approval cards, and the write lands once both
are approved; the thread says which agent it is and where its data goes."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from devtools.jupyter_process import JupyterProcess
from tests.ui.conftest import SHOTS, open_new_notebook, open_panel_from_palette

ROOT = str(Path(__file__).resolve().parent.parent.parent)


@pytest.fixture
def lab_config() -> dict[str, Any]:
    agent = {"command": sys.executable, "args": ["-m", "tests.acp.sdk_agent"], "env": {"PYTHONPATH": ROOT}}
    return {"Cellwright": {"acp_agents": {"SDK agent": agent}}}


def test_an_acp_agent_picked_in_the_panel_writes_after_approval(page: Any, lab: JupyterProcess) -> None:
    from playwright.sync_api import expect

    open_new_notebook(page, lab)
    open_panel_from_palette(page)
    page.get_by_test_id("cw-agent-picker").select_option("SDK agent")
    page.get_by_role("textbox", name="Message Cellwright").fill("write notes.txt hello from the browser")
    page.get_by_role("button", name="Send").click()

    card = page.get_by_role("region", name="Approval required")
    expect(card).to_contain_text("Write notes.txt", timeout=60_000)
    expect(page.get_by_test_id("cw-agent-notice")).to_contain_text("SDK agent")
    expect(card.get_by_role("button", name="Edit")).to_have_count(0)  # an ACP request cannot be edited
    card.get_by_role("button", name="Approve", exact=True).click()

    expect(card).to_contain_text("hello from the browser", timeout=30_000)  # the write's own card, its diff
    assert not (lab.root / "notes.txt").exists()
    page.screenshot(path=str(SHOTS / "acp-agent-write-card.png"))
    card.get_by_role("button", name="Approve", exact=True).click()
    # The agent's finished turn is folded since the panel's redesign (issue 39): its report is in the
    # thread (opening the fold is the design test's business), and the write landed once.
    expect(page.get_by_text("write: written")).to_have_count(1, timeout=30_000)
    assert (lab.root / "notes.txt").read_text() == "hello from the browser"
