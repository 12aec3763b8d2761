"""Issue 15 in the real browser: while the agent's cell runs, the panel shows the kernel's CPU and
memory (polled from POST resources); a cell that allocates 500 MB shows the rise, and the memory
warning of the settings registry (set low here) appears."""

from __future__ import annotations

import json
from typing import Any

from devtools.fake_llm import FakeLLM, tool_call
from devtools.jupyter_process import JupyterProcess
from tests.ui.conftest import SHOTS, ask_until_card, open_new_notebook, open_panel_from_palette

# Holds the memory until the test has seen it (the test then creates `release` in the kernel's folder).
ALLOCATE = (
    "ballast = bytearray(500 * 2**20)\nballast[::4096] = b'x' * len(ballast[::4096])\nimport os, time\n"
    "while not os.path.exists('release'):\n    time.sleep(0.05)\nprint('held')"
)


def test_the_panel_shows_the_kernels_memory_rise(page: Any, lab: JupyterProcess, fake_llm: FakeLLM) -> None:
    from playwright.sync_api import expect

    settings = lab.root.parent / "config" / "lab" / "user-settings" / "cellwright"
    settings.mkdir(parents=True, exist_ok=True)
    (settings / "plugin.jupyterlab-settings").write_text(json.dumps({"kernelMemoryWarningMB": 300}))
    fake_llm.script(
        tool_call("run_cell", {"code": ALLOCATE}, id="big1"),
        tool_call("final_answer", {"answer": "Allocated."}),
    )
    card = ask_until_card(page, lab, "allocate 500 MB")
    card.get_by_role("button", name="Approve", exact=True).click()

    figures = page.get_by_test_id("cw-kernel-usage-figures")
    expect(figures).to_be_visible(timeout=30_000)
    page.wait_for_function(
        "() => Number(document.querySelector('[data-testid=cw-kernel-usage-figures]')?.dataset.memoryBytes || 0) > 450 * 2**20",
        timeout=30_000,
    )
    expect(figures).to_contain_text("CPU")
    expect(page.get_by_test_id("cw-kernel-usage-warning")).to_be_visible(timeout=10_000)
    page.screenshot(path=str(SHOTS / "15-kernel-usage.png"))
    (lab.root / "release").touch()
    expect(page.get_by_test_id("cw-final")).to_contain_text("Allocated.", timeout=60_000)
    expect(page.get_by_test_id("cw-kernel-usage")).to_have_count(0)  # gone once the run is over
    assert not page.errors, page.errors  # type: ignore[attr-defined]


def test_the_settings_view_shows_the_workspace_index(page: Any, lab: JupyterProcess) -> None:
    from playwright.sync_api import expect

    (lab.root / "docs").mkdir()
    for number in range(3):
        (lab.root / "docs" / f"guide_{number}.md").write_text(
            f"# Guide {number}\n\nHow we compute churn, part {number}.\n"
        )
    (lab.root / ".private.md").write_text("# Hidden\n\nnot indexed\n")
    open_new_notebook(page, lab)
    open_panel_from_palette(page)
    page.get_by_role("button", name="Model settings").click()
    status = page.get_by_test_id("cw-knowledge-status-text")
    expect(status).to_contain_text("ready", timeout=30_000)
    expect(status).to_contain_text(
        "3 passages"
    )  # the three guides (the hidden file is not indexed; the new notebook is empty)
    # GET health's sandbox (issue 37): the kernel can make it here (the escape suite proves it holds).
    expect(page.get_by_test_id("cw-sandbox-status")).to_contain_text("Available (fork + user")
    page.screenshot(path=str(SHOTS / "15-knowledge-status.png"))
    assert not page.errors, page.errors  # type: ignore[attr-defined]
