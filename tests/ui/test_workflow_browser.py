"""Issue 11 in the real browser: "Fix with Cellwright" edits the failing cell in place (same id, same
position, no extra cell); the approval card keeps its buttons in view after a plan and a long shell
output, in the light and the dark theme; a server without a model opens the panel on the settings
form, which tests the connection, saves, and never shows the key again."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devtools.fake_llm import FakeLLM, text, tool_call
from devtools.jupyter_process import JupyterProcess
from tests.ui.conftest import SHOTS, ask_until_card, open_new_notebook, run_cell_from_editor

FIRST_CARD = 60_000  # a fresh server imports langgraph and openai on its first run


def _notebook(lab: JupyterProcess) -> dict[str, Any]:
    paths = sorted(lab.root.glob("*.ipynb"))
    assert paths, "the notebook was saved"
    return json.loads(paths[0].read_text())


def _save(page: Any, lab: JupyterProcess, done: Any) -> dict[str, Any]:
    """Save the notebook (Ctrl+S in command mode) until the file on disk satisfies `done`."""
    for _ in range(10):
        page.locator(".jp-Notebook .jp-Cell .jp-InputPrompt").first.click()
        page.keyboard.press("Escape")
        page.keyboard.press("Control+s")
        page.wait_for_timeout(700)
        accept = page.locator(".jp-Dialog .jp-Dialog-button.jp-mod-accept")
        if accept.count():  # the first save offers to rename the untitled notebook: keep its name
            accept.first.click()
            page.wait_for_timeout(700)
        notebook = _notebook(lab)
        if done(notebook):
            return notebook
    raise AssertionError(f"the saved notebook is not as expected: {_notebook(lab)}")


def test_fix_with_cellwright_edits_the_cell_in_place(page: Any, lab: JupyterProcess, fake_llm: FakeLLM) -> None:
    from playwright.sync_api import expect

    seen: dict[str, str] = {}

    def fix(body: dict) -> Any:
        # The id of the cell, as the panel's message gives it to the model.
        user = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
        match = re.search(r"cell id `([^`]+)`", user)
        assert match, user
        seen["cell_id"] = match.group(1)
        seen["message"] = user
        return tool_call(
            "edit_cell", {"cell_id": match.group(1), "source": "x = 1\ny = x / 1\nprint('fixed', y)"}, id="fix1"
        )

    fake_llm.script(fix, tool_call("final_answer", {"answer": "Divided by 1 instead of 0."}))
    open_new_notebook(page, lab)
    cell = page.locator(".jp-Notebook .jp-Cell").first
    cell.locator(".cm-content").click()
    page.keyboard.type("x = 1\ny = x / 0")
    run_cell_from_editor(page, cell)
    expect(cell.locator(".jp-OutputArea-output")).to_contain_text("ZeroDivisionError", timeout=30_000)
    # Saved: the server's fallback when it does not read the live cells.
    before = _save(page, lab, lambda nb: len(nb["cells"]) == 1 and "x / 0" in "".join(nb["cells"][0]["source"]))[
        "cells"
    ][0]["id"]

    button = cell.get_by_role("button", name="Fix with Cellwright")
    expect(button).to_be_visible(timeout=10_000)
    page.screenshot(path=str(SHOTS / "11-fix-button.png"))
    button.click()

    card = page.get_by_role("region", name="Approval required")
    card.wait_for(timeout=FIRST_CARD)
    assert seen["cell_id"] == before, "the message names the failing cell's nbformat id"
    assert "\x1b" not in seen["message"] and "ZeroDivisionError" in seen["message"]
    expect(card).to_have_attribute("data-tool-name", "edit_cell")
    diff = card.get_by_test_id("cw-diff")
    expect(diff).to_contain_text("-y = x / 0")
    expect(diff).to_contain_text("+y = x / 1")
    page.screenshot(path=str(SHOTS / "12-fix-diff-card.png"))
    card.get_by_role("button", name="Approve", exact=True).click()

    expect(page.get_by_test_id("cw-final")).to_contain_text("Divided by 1", timeout=30_000)
    cells = page.locator(".jp-Notebook .jp-Cell")
    expect(cells).to_have_count(1)
    expect(cells.first.locator(".jp-OutputArea-output")).to_contain_text("fixed 1.0", timeout=10_000)
    expect(cells.first.locator(".jp-OutputArea-output")).not_to_contain_text("ZeroDivisionError")
    expect(cells.first.get_by_role("button", name="Fix with Cellwright")).to_have_count(0)
    page.screenshot(path=str(SHOTS / "13-fixed-in-place.png"))
    saved = _save(page, lab, lambda nb: "x / 1" in "".join(nb["cells"][0]["source"]))["cells"]
    assert len(saved) == 1 and saved[0]["id"] == before, saved
    assert "".join(saved[0]["source"]).startswith("x = 1\ny = x / 1")
    assert not page.errors, page.errors  # type: ignore[attr-defined]


def _switch_theme(page: Any, name: str) -> None:
    """Settings > Theme > `name`, from the menu bar."""
    page.locator(".lm-MenuBar-itemLabel", has_text="Settings").click()
    page.locator(".lm-Menu-itemLabel", has_text="Theme").first.hover()
    page.locator(".lm-Menu-itemLabel").filter(has_text=re.compile(f"^{re.escape(name)}$")).first.click()
    page.wait_for_function("() => document.body.dataset.jpThemeLight === 'false'", timeout=20_000)
    page.wait_for_timeout(1000)


def _assert_buttons_in_view(page: Any, shot: str) -> None:
    card = page.get_by_role("region", name="Approval required")
    card.wait_for(timeout=FIRST_CARD)
    viewport = page.viewport_size
    card_box = card.bounding_box()
    assert card_box is not None
    for name in ("Approve", "Edit", "Reject"):
        box = card.get_by_role("button", name=name, exact=True).bounding_box()
        assert box is not None, name
        assert box["y"] >= 0 and box["y"] + box["height"] <= viewport["height"], (name, box, viewport)
        assert card_box["y"] <= box["y"] and box["y"] + box["height"] <= card_box["y"] + card_box["height"] + 0.5, (
            name,
            box,
            card_box,
        )
    # Nothing had to scroll: the button is where a click lands.
    hit = page.evaluate(
        """() => { const b = [...document.querySelectorAll('[data-testid="cw-approval-footer"] button')]
              .find(x => x.textContent.trim().startsWith('Approve')); const r = b.getBoundingClientRect();
              return document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2) === b; }"""
    )
    assert hit, "the Approve button is covered or clipped"
    page.screenshot(path=str(SHOTS / shot))


def test_approval_buttons_stay_in_view(page: Any, lab: JupyterProcess, fake_llm: FakeLLM) -> None:
    from playwright.sync_api import expect

    code = "\n".join(f"value_{i} = {i} * 2  # step {i} of the computation" for i in range(12)) + "\nprint(value_11)"
    fake_llm.script(
        tool_call(
            "write_todos",
            {"todos": [{"content": f"Step {i}: do part {i} of the work", "status": "pending"} for i in range(8)]},
        ),
        tool_call("execute_command", {"command": "seq 1 200"}, id="sh1"),
        tool_call("run_cell", {"code": code, "description": "Compute the values"}, id="cell13"),
        tool_call("final_answer", {"answer": "Done."}),
    )
    card = ask_until_card(page, lab, "compute the values")
    card.get_by_role("button", name="Approve", exact=True).click()
    expect(page.get_by_test_id("cw-command-output")).to_contain_text("200", timeout=30_000)
    expect(page.get_by_role("region", name="Approval required")).to_have_attribute(
        "data-tool-name", "run_cell", timeout=30_000
    )
    assert len(code.split("\n")) == 13
    _assert_buttons_in_view(page, "14-card-buttons-light.png")
    _switch_theme(page, "JupyterLab Dark")
    _assert_buttons_in_view(page, "15-card-buttons-dark.png")
    page.get_by_role("region", name="Approval required").get_by_role("button", name="Approve", exact=True).click()
    expect(page.get_by_test_id("cw-final")).to_contain_text("Done.", timeout=30_000)
    assert not page.errors, page.errors  # type: ignore[attr-defined]


@pytest.fixture
def bare_lab(tmp_path: Path) -> Iterator[JupyterProcess]:
    """JupyterLab with Cellwright and no model configured anywhere."""
    args = ["--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    settings = tmp_path / "config" / "lab" / "user-settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )
    server = JupyterProcess(tmp_path, {}, app="lab", extra_args=args)
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "CELLWRIGHT_MODEL", "CELLWRIGHT_TOOL_CALLING"):
        server.env.pop(name, None)
    server.start()
    yield server
    server.stop()


def test_first_run_settings_form(bare_lab: JupyterProcess, fake_llm: FakeLLM) -> None:
    from playwright.sync_api import expect

    from tests.ui.conftest import chromium

    key = "sk-first-run-secret-4711"
    lab = bare_lab
    # Two tiny requests for "Test connection" (without, then with a tool), then the message's reply.
    fake_llm.script(text("OK"), text("OK"), tool_call("final_answer", {"answer": "Hello from the configured model."}))
    with chromium() as browser:
        page = browser.new_context(viewport={"width": 1500, "height": 950}).new_page()
        errors: list[str] = []
        bodies: list[tuple[str, str]] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))

        def record(response: Any) -> None:
            if "/cellwright/api/" in response.url and "/events" not in response.url:
                try:
                    bodies.append((response.url, response.text()))
                except Exception:
                    pass

        page.on("response", record)
        open_new_notebook(page, lab)
        page.locator(".jp-Notebook").first.click()
        page.keyboard.press("Escape")
        page.keyboard.press("Alt+Shift+C")
        form = page.get_by_role("form", name="Model settings")
        expect(form).to_be_visible(timeout=20_000)
        expect(page.get_by_test_id("cw-setup-intro")).to_be_visible()
        expect(page.get_by_role("textbox", name="Message Cellwright")).to_have_count(0)
        expect(form.get_by_test_id("cw-api-key-status")).to_have_text("not set")
        form.get_by_label("Endpoint (base URL)").fill(fake_llm.base_url)
        form.get_by_label("Model", exact=True).fill("fake-model")
        form.get_by_label("API key", exact=True).fill(key)
        page.screenshot(path=str(SHOTS / "16-settings-form.png"))
        form.get_by_role("button", name="Test connection").click()
        report = page.get_by_test_id("cw-connection-report")
        expect(report).to_have_attribute("data-ok", "true", timeout=30_000)
        expect(report).to_contain_text("The connection works.")
        page.screenshot(path=str(SHOTS / "17-settings-tested.png"))
        form.get_by_role("button", name="Save").click()

        box = page.get_by_role("textbox", name="Message Cellwright")
        expect(box).to_be_visible(timeout=20_000)
        box.fill("say hello")
        page.get_by_role("button", name="Send").click()
        expect(page.get_by_test_id("cw-final")).to_contain_text("Hello from the configured model.", timeout=FIRST_CARD)

        page.get_by_role("button", name="Model settings").click()
        expect(page.get_by_role("form", name="Model settings").get_by_test_id("cw-api-key-status")).to_have_text(
            "set", timeout=10_000
        )
        page.screenshot(path=str(SHOTS / "18-settings-key-set.png"))
        page.wait_for_timeout(500)
        leaked = [url for url, text in bodies if key in text]
        assert not leaked, leaked
        assert bodies, "the page's responses were recorded"
        assert key not in page.content()
        assert not errors, errors
