"""Issue 28 in the real browser: under data_policy redact, "What was sent to the model" shows the
thread's summary (a cell output reached the model; redactions counted) and each request's text on
demand, with the email replaced as it was sent; each step shows what its own request sent."""

from __future__ import annotations

from typing import Any

import pytest

from devtools.fake_llm import FakeLLM, tool_call
from devtools.jupyter_process import JupyterProcess
from tests.ui.conftest import SHOTS, open_new_notebook, open_panel_from_palette

HOSTILE = "the contact <img src=x onerror=window.__cwPwned=1>"


@pytest.fixture
def lab_config() -> dict[str, Any]:
    return {"Cellwright": {"data_policy": "redact", "auto_approve": ["run_cell"]}}


def test_the_panel_shows_what_was_sent(page: Any, lab: JupyterProcess, fake_llm: FakeLLM) -> None:
    from playwright.sync_api import expect

    fake_llm.script(
        # The description is the model's: it becomes a source's name in the panel, shown as text.
        tool_call("run_cell", {"code": "print('write to alice@example.com')", "description": HOSTILE}, id="c1"),
        tool_call("final_answer", {"answer": "Written."}),
    )
    open_new_notebook(page, lab)
    open_panel_from_palette(page)
    page.get_by_role("textbox", name="Message Cellwright").fill("Find the contact")
    page.get_by_role("button", name="Send").click()
    expect(page.get_by_test_id("cw-final")).to_contain_text("Written.", timeout=60_000)

    page.get_by_test_id("cw-sent-toggle").click()
    summary = page.get_by_test_id("cw-sent-summary")
    expect(summary).to_have_text("Data that reached the model: 1 cell output", timeout=10_000)
    expect(page.get_by_test_id("cw-sent-totals")).to_contain_text("2 requests")
    expect(page.get_by_test_id("cw-sent-totals")).to_contain_text(
        "2 redactions"
    )  # the code the model wrote, and the output
    requests = page.get_by_test_id("cw-sent-request")
    expect(requests).to_have_count(2)
    expect(requests.nth(1)).to_contain_text("new: cell output: the contact")
    requests.nth(1).get_by_test_id("cw-sent-request-text-toggle").click()
    text = requests.nth(1).get_by_test_id("cw-sent-request-text")
    expect(text).to_contain_text("[REDACTED:email]")
    expect(text).not_to_contain_text("alice@example.com")
    page.screenshot(path=str(SHOTS / "28-what-was-sent.png"))

    # Per step: under each model call, what its request sent; the second carried the cell's output.
    steps = page.get_by_test_id("cw-sent-step")
    expect(steps).to_have_count(2)
    expect(steps.nth(1)).to_contain_text("Sent to the model:")
    expect(steps.nth(1)).to_contain_text("2 redactions")
    steps.nth(1).locator("summary").click()
    expect(steps.nth(1)).to_contain_text("cell output: the contact")
    steps.nth(1).get_by_test_id("cw-sent-step-text-toggle").click()
    expect(steps.nth(1).get_by_test_id("cw-sent-step-text")).to_contain_text("[REDACTED:email]")
    expect(steps.nth(1)).not_to_contain_text("alice@example.com")
    expect(steps.nth(1)).to_contain_text("<img src=x")  # the model's text, inert
    assert page.evaluate("window.__cwPwned") is None
    page.screenshot(path=str(SHOTS / "28-sent-per-step.png"))
    assert "alice@example.com" not in fake_llm.raw_requests[1].decode()
    assert not page.errors, page.errors  # type: ignore[attr-defined]
