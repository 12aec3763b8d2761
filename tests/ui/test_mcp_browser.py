"""Issue 14 in the real browser: after a message, the settings view's Tools section shows the
configured MCP server as connected with its namespaced tools and the notebook's @tool function,
and the server's env secret appears nowhere."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from devtools.fake_llm import FakeLLM, tool_call
from devtools.jupyter_process import JupyterProcess
from tests.ui.conftest import SHOTS, open_new_notebook, open_panel_from_palette, run_cell_from_editor

FIXTURE = str(Path(__file__).resolve().parents[1] / "mcp_server_fixture.py")
SECRET = "ui-mcp-secret-8812"


def test_tools_section_shows_the_connected_server(page: Any, lab: JupyterProcess, fake_llm: FakeLLM) -> None:
    from playwright.sync_api import expect

    bodies: list[str] = []
    page.on(
        "response",
        lambda r: bodies.append(r.text()) if "/cellwright/api/" in r.url and "/events" not in r.url else None,
    )
    servers = {
        "fixture": {
            "command": sys.executable,
            "args": [FIXTURE],
            "env": {"FIXTURE_NOTES": str(lab.root), "SECRET": SECRET},
        }
    }
    # What the settings form's save does, before the page loads: PUT config with the server.
    response = lab.request("PUT", "cellwright/api/config", {"mcp_servers": servers})
    assert response.status_code == 200 and SECRET not in response.text, response.text
    fake_llm.script(
        tool_call("mcp__fixture__lookup", {"country": "Peru"}, id="m1"), tool_call("final_answer", {"answer": "Ready."})
    )
    open_new_notebook(page, lab)
    cell = page.locator(".jp-Notebook .jp-Cell").first
    cell.locator(".cm-content").click()
    page.keyboard.type("from agent_core import tool\ndef shout(word: str) -> str: return word.upper()\n")
    page.keyboard.type("tool(shout)")
    run_cell_from_editor(page, cell)
    expect(cell.locator(".jp-OutputArea-output")).to_contain_text("__main__.shout", timeout=30_000)
    open_panel_from_palette(page)
    page.get_by_role("textbox", name="Message Cellwright").fill("hello")
    page.get_by_role("button", name="Send").click()
    card = page.get_by_role("region", name="Approval required")
    card.wait_for(timeout=60_000)  # a fresh server imports langgraph and openai on its first run
    expect(card).to_have_attribute("data-tool-name", "mcp__fixture__lookup")
    expect(card.get_by_test_id("cw-approval-origin")).to_contain_text("the server says it is read-only (not verified)")
    page.screenshot(path=str(SHOTS / "14-mcp-card.png"))
    card.get_by_role("button", name="Approve", exact=True).click()
    expect(page.get_by_test_id("cw-final")).to_contain_text("Ready.", timeout=60_000)
    assert any(t["function"]["name"] == "mcp__fixture__lookup" for t in fake_llm.requests[0]["tools"])

    page.get_by_role("button", name="Model settings").click()
    tools = page.get_by_test_id("cw-tools")
    server = tools.locator('[data-server="fixture"]')
    expect(server).to_have_attribute("data-status", "connected", timeout=20_000)
    expect(server).to_contain_text("mcp__fixture__lookup")
    expect(server).to_contain_text("says read-only; still asks")
    expect(page.get_by_test_id("cw-notebook-tools")).to_contain_text("shout", timeout=20_000)
    assert any(t["function"]["name"] == "shout" for t in fake_llm.requests[0]["tools"])
    expect(page.get_by_role("form", name="Model settings").get_by_label("MCP servers (JSON)")).to_have_value(
        json.dumps(_shown(servers), indent=2)
    )
    page.screenshot(path=str(SHOTS / "14-tools-section.png"))
    page.wait_for_timeout(300)
    assert not any(SECRET in body for body in bodies) and SECRET not in page.content()
    assert not page.errors, page.errors  # type: ignore[attr-defined]


def _shown(servers: dict[str, Any]) -> dict[str, Any]:
    return {
        name: {**server, "env": {k: "********" for k in server["env"]}, "start_timeout": 20, "call_timeout": 120}
        for name, server in servers.items()
    }
