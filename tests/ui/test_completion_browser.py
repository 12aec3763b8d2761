"""Inline completion in the real browser: typing in a code cell shows Cellwright's ghost text, Tab
accepts it, and typing on while a suggestion still streams closes that request (the scripted model
sees its connection closed) and asks again; the panel's footer counts the completions."""

from __future__ import annotations

from typing import Any

import pytest

from devtools.fake_llm import FakeLLM, Reply, text
from devtools.jupyter_process import JupyterProcess
from tests.ui.conftest import SHOTS, open_new_notebook, open_panel_from_palette


@pytest.fixture
def lab_config() -> dict[str, Any]:
    return {"Cellwright": {"inline_completion": True}}  # the browser tests' labs have it off otherwise


def test_ghost_text_tab_accepts_and_typing_on_cancels(page: Any, lab: JupyterProcess, fake_llm: FakeLLM) -> None:
    from playwright.sync_api import expect

    def reply(body: dict[str, Any]) -> Reply:
        # By the prompt's end, not by order: a keystroke slowed past the debounce asks once more.
        prompt = body.get("prompt", "")
        if prompt.endswith("value = pr"):
            return text("ice * 2")
        if prompt.endswith("total = value + "):
            return text(["long_", "running", "_name"], chunk_delay=0.05, hang=True)  # streams until closed
        if prompt.endswith("total = value + s"):
            return text("ubtotal")
        return text("")

    fake_llm.script(*[reply] * 30)
    open_new_notebook(page, lab)
    cell = page.locator(".jp-Cell .cm-content").first
    cell.click()
    page.keyboard.type("value = pr")
    # the suggestion itself, not the spacers JupyterLab leaves a moment where one was dismissed
    ghost = page.locator(".jp-GhostText:not(.jp-GhostText-letterSpacer):not(.jp-GhostText-lineSpacer)")
    expect(ghost).to_contain_text("ice * 2", timeout=30_000)
    assert set(fake_llm.paths) == {"/v1/completions"}
    page.screenshot(path=str(SHOTS / "completion-ghost.png"))
    page.keyboard.press("Tab")
    expect(cell).to_have_text("value = price * 2")
    expect(ghost).to_have_count(0)

    page.keyboard.press("Enter")
    page.keyboard.type("total = value + ")
    expect(ghost).to_contain_text("long_", timeout=30_000)  # the first pieces of a reply that never ends
    page.keyboard.type("s")
    fake_llm.wait_for_close(1, timeout=10)  # the server closed the model's stream behind the keystroke
    expect(ghost).to_contain_text("ubtotal", timeout=30_000)
    assert fake_llm.requests[-1]["prompt"].endswith("total = value + s")
    assert len(fake_llm.closed) == 1  # the one request that was still streaming
    open_panel_from_palette(page)  # the footer counts completions apart from any thread
    expect(page.get_by_test_id("cw-completion-usage")).to_contain_text("Inline completion: ", timeout=10_000)
    assert not page.errors, page.errors  # type: ignore[attr-defined]
