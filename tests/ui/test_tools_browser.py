"""Shell command and file edit approvals in the real browser: the card shows the command with its
working directory, and the edit as a diff; approving runs them."""

from __future__ import annotations

from typing import Any

from devtools.fake_llm import FakeLLM, tool_call
from devtools.jupyter_process import JupyterProcess
from tests.ui.conftest import SHOTS, ask_until_card


def test_approve_shell_command_and_file_edit(page: Any, lab: JupyterProcess, fake_llm: FakeLLM) -> None:
    from playwright.sync_api import expect

    (lab.root / "src").mkdir()
    (lab.root / "src" / "config.py").write_text("THRESHOLD = 0.5\nNAME = 'demo'\n")
    fake_llm.script(
        tool_call("execute_command", {"command": "ls && echo listed-ok", "cwd": "src"}, id="sh1"),
        tool_call(
            "edit_file",
            {"path": "src/config.py", "edits": [{"old": "THRESHOLD = 0.5", "new": "THRESHOLD = 0.8"}]},
            id="ed1",
        ),
        tool_call("final_answer", {"answer": "Raised the threshold to 0.8."}),
    )
    card = ask_until_card(page, lab, "raise the threshold")
    expect(page.get_by_test_id("cw-approval-command")).to_contain_text("ls && echo listed-ok")
    expect(page.get_by_test_id("cw-approval-cwd")).to_contain_text("src")
    page.screenshot(path=str(SHOTS / "6-shell-card.png"))
    card.get_by_role("button", name="Approve", exact=True).click()

    expect(page.get_by_test_id("cw-command-output")).to_contain_text("listed-ok", timeout=30_000)
    diff = page.get_by_test_id("cw-diff")
    expect(diff).to_contain_text("-THRESHOLD = 0.5", timeout=30_000)
    expect(diff).to_contain_text("+THRESHOLD = 0.8")
    assert (lab.root / "src" / "config.py").read_text().startswith("THRESHOLD = 0.5"), "nothing written before approval"
    page.screenshot(path=str(SHOTS / "7-diff-card.png"))
    page.get_by_role("region", name="Approval required").get_by_role("button", name="Approve", exact=True).click()

    expect(page.get_by_test_id("cw-final")).to_contain_text("0.8", timeout=30_000)
    assert (lab.root / "src" / "config.py").read_text() == "THRESHOLD = 0.8\nNAME = 'demo'\n"
    assert not page.errors, page.errors  # type: ignore[attr-defined]
