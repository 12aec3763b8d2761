"""An outside agent (the official mcp SDK's client, as Claude Code would connect) asks to run a cell
through Cellwright's MCP endpoint; the user, with the notebook and the panel open in chromium, is
told a thread waits, reviews the card, approves it; the client gets the output and the notebook
the cell."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from devtools.fake_llm import FakeLLM
from devtools.jupyter_process import TOKEN, JupyterProcess
from tests.test_mcp_endpoint import connected, text_of
from tests.ui.conftest import SHOTS, open_new_notebook, open_panel_from_palette


def test_an_outside_agents_cell_is_approved_in_the_panel(page: Any, lab: JupyterProcess, fake_llm: FakeLLM) -> None:
    from playwright.sync_api import expect

    open_new_notebook(page, lab)
    open_panel_from_palette(page)
    notebook = next(lab.root.glob("Untitled*.ipynb")).name
    answers: list[Any] = []

    async def agent() -> None:
        async with connected(f"{lab.url}/cellwright/mcp", TOKEN) as session:
            code = "print('from outside', 6 * 7)"
            answers.append(await session.call_tool("run_cell", {"code": code, "notebook_path": notebook}))

    client = threading.Thread(target=lambda: asyncio.run(agent()), daemon=True)
    client.start()

    waiting = page.get_by_test_id("cw-waiting")
    expect(waiting).to_contain_text("Claude Code via MCP is waiting for your approval", timeout=60_000)
    waiting.get_by_role("button", name="Review").click()
    card = page.get_by_role("region", name="Approval required")
    expect(card).to_contain_text("from outside")
    page.screenshot(path=str(SHOTS / "outside-agent-card.png"))
    card.get_by_role("button", name="Approve", exact=True).click()

    client.join(60)
    assert answers and not answers[0].is_error and "from outside 42" in text_of(answers[0])
    expect(page.locator(".jp-Notebook .jp-OutputArea-output").filter(has_text="from outside 42")).to_have_count(1)
    expect(waiting).to_have_count(0)
