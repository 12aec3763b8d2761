"""Issue 39 in the real browser, all in one lab and one page (the browser tests are the suite's
most expensive part): a thread with every kind of step (plan, listing, an exploration, a cell that
fails, a cell, a rejected shell command, an answer; a step undone, a step rewound, a sub-agent's
block) built through the real routes by keyboard only (send with Enter, approve with Ctrl+Enter on
the card that took the focus, reject with R and a reason, undo and rewind from a step's menu opened
with the keyboard); each step one line, with its menu; focus that moves through the thread in
reading order; then, at panel widths 280, 400 and 800 px in the light and the dark theme, nothing
wider than the panel, no overlapping boxes and a screenshot each; axe-core over the thread and
over an open approval card (no serious or critical violation); and the "waiting for your
approval" banner never standing stale after the card was approved from a second client."""

from __future__ import annotations

import re
import time
from itertools import pairwise
from typing import Any

import pytest

from devtools.fake_llm import FakeLLM, text, tool_call
from devtools.jupyter_process import REPO, JupyterProcess
from tests.ui.conftest import SHOTS, open_new_notebook, open_panel_from_palette

AXE = REPO / "node_modules" / "axe-core" / "axe.min.js"
WIDTHS = (280, 400, 800)
THEMES = ("JupyterLab Light", "JupyterLab Dark")


@pytest.fixture
def lab_config() -> dict[str, Any]:
    # window.jupyterapp: the theme is switched with JupyterLab's own command.
    return {"LabApp": {"expose_app_in_browser": True}}


# In the page: every element of the panel wider than it, and every pair of sibling boxes that
# overlap. An element inside a box that scrolls or clips (a code block) is that box's business.
MEASURE = """(root) => {
  const panel = root.getBoundingClientRect();
  const wide = [], overlaps = [];
  const name = el => `${el.tagName.toLowerCase()}.${[...el.classList].join('.')}` +
    (el.dataset.testid ? `[${el.dataset.testid}]` : '');
  const shown = el => {
    const s = getComputedStyle(el);
    const r = el.getBoundingClientRect();
    return s.display !== 'none' && s.visibility !== 'hidden' && r.width > 1 && r.height > 1;
  };
  const clipped = el => {
    for (let p = el.parentElement; p && p !== root; p = p.parentElement) {
      if (getComputedStyle(p).overflowX !== 'visible') return true;
    }
    return false;
  };
  for (const el of root.querySelectorAll('*')) {
    if (!shown(el) || clipped(el)) continue;
    const r = el.getBoundingClientRect();
    if (r.left < panel.left - 1 || r.right > panel.right + 1) wide.push(`${name(el)} ${Math.round(r.width)}px`);
  }
  for (const el of [root, ...root.querySelectorAll('*')]) {
    if (!shown(el)) continue;
    const kids = [...el.children].filter(k => {
      const s = getComputedStyle(k);
      return shown(k) && s.display !== 'inline' && !['absolute', 'fixed', 'sticky'].includes(s.position) &&
        !k.classList.contains('cw-visually-hidden');
    });
    for (let i = 0; i < kids.length; i++) {
      const a = kids[i].getBoundingClientRect();
      for (let j = i + 1; j < kids.length; j++) {
        const b = kids[j].getBoundingClientRect();
        const x = Math.min(a.right, b.right) - Math.max(a.left, b.left);
        const y = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
        if (x > 1 && y > 1) overlaps.push(`${name(kids[i])} / ${name(kids[j])}`);
      }
    }
  }
  const log = root.querySelector('.cw-log');
  return {wide, overlaps, scroll: log ? log.scrollWidth - log.clientWidth : 0, width: Math.round(panel.width)};
}"""

# In the page: each selector's box height, to compare a step's line with a plain one-line step's.
HEIGHTS = """(selectors) => Object.fromEntries(selectors.map(s => {
  const el = document.querySelector(s);
  return [s, el ? Math.round(el.getBoundingClientRect().height) : -1];
}))"""

# In the page: what has the focus, and where it starts in the thread, for the reading order.
LINE = ".cw-step[data-tool-call-id='{}'] .cw-tool-summary"
SUBTASK = '[data-testid="cw-subtask"] summary'

FOCUSED = """() => {
  const el = document.activeElement;
  const log = el && el.closest('.cw-log');
  if (!log) return null;
  const r = el.getBoundingClientRect();
  // In the thread's own coordinates: focusing an element scrolls the thread to it.
  const y = r.top - log.getBoundingClientRect().top + log.scrollTop;
  return {what: `${el.tagName.toLowerCase()}.${[...el.classList].join('.')}`, x: Math.round(r.left), y: Math.round(y)};
}"""

AXE_RUN = """async (selector) => {
  const result = await axe.run(document.querySelector(selector), {resultTypes: ['violations']});
  return result.violations
    .filter(v => v.impact === 'serious' || v.impact === 'critical')
    .map(v => `${v.id} (${v.impact}): ${v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(', ')}`);
}"""


def _panel_width(page: Any, width: int) -> None:
    """Drag the handle between the main area and the right sidebar until the panel is `width` wide."""
    panel = page.locator("#cellwright-panel")
    for _ in range(3):
        box = panel.bounding_box()
        if abs(box["width"] - width) <= 2:
            return
        handle = page.locator("#jp-main-split-panel > .lm-SplitPanel-handle:not(.lm-mod-hidden)").last
        hb = handle.bounding_box()
        x, y = hb["x"] + hb["width"] / 2, hb["y"] + hb["height"] / 2
        page.mouse.move(x, y)
        page.mouse.down()
        page.mouse.move(x + (box["width"] - width), y, steps=4)
        page.mouse.up()
    raise AssertionError(f"the panel is {panel.bounding_box()['width']}px wide, not {width}")


def _theme(page: Any, theme: str) -> None:
    page.evaluate("(theme) => window.jupyterapp.commands.execute('apputils:change-theme', {theme})", theme)
    page.wait_for_function(
        "(theme) => document.body.dataset.jpThemeName === theme && !document.body.classList.contains('lm-mod-override-cursor')",
        arg=theme,
        timeout=20_000,
    )


def _axe(page: Any, selector: str) -> list[str]:
    return page.evaluate(AXE_RUN, selector)


def _ask_for_a_cell(page: Any, fake_llm: FakeLLM, message: str, call_id: str, code: str, answer: str) -> None:
    """Send `message` by keyboard to a model that asks to run `code`, then answers; wait for its card."""
    from playwright.sync_api import expect

    fake_llm.script(tool_call("run_cell", {"code": code}, id=call_id), tool_call("final_answer", {"answer": answer}))
    page.get_by_role("textbox", name="Message Cellwright").focus()
    page.keyboard.type(message)
    page.keyboard.press("Enter")
    card = page.get_by_role("region", name="Approval required")
    expect(card).to_have_attribute("data-tool-call-id", call_id, timeout=30_000)


def test_the_panel_designed(page: Any, lab: JupyterProcess, fake_llm: FakeLLM) -> None:
    from playwright.sync_api import expect

    long_line = "result = " + " + ".join(f"value_{i}" for i in range(40))
    fake_llm.script(
        tool_call(
            "write_todos",
            {
                "todos": [
                    {"content": "List the folder", "status": "completed"},
                    {
                        "content": "Compute the values and check each of them against the expected table",
                        "status": "in_progress",
                    },
                    {"content": "X.", "status": "pending"},
                ]
            },
        ),
        tool_call("list_files", {"path": "."}, id="ls"),
        tool_call("explore", {"code": "print(sum(range(10)))"}, id="ex"),  # sandboxed: no card
        tool_call("run_cell", {"code": "1 / 0", "description": "X."}, id="boom"),
        tool_call(
            "run_cell",
            {"code": f"values = {{f'value_{{i}}': i for i in range(40)}}\nprint(len(values))\n# {long_line}"},
            id="ok",
        ),
        tool_call("execute_command", {"command": "rm -rf build && echo removed"}, id="sh"),
        tool_call(
            "final_answer", {"answer": "Done: **40 values**.", "next_items": [{"title": "Plot them", "prompt": "plot"}]}
        ),
    )
    open_new_notebook(page, lab)
    open_panel_from_palette(page)

    # Keyboard only: the message is sent with Enter; each card takes the focus when it appears.
    box = page.get_by_role("textbox", name="Message Cellwright")
    box.focus()
    page.keyboard.type("compute the values")
    page.keyboard.press("Enter")
    card = page.get_by_role("region", name="Approval required")
    card.wait_for(timeout=60_000)
    expect(card).to_be_focused()
    if card.get_attribute("data-tool-call-id") == "ex":
        # The kernel's sandbox probe said no (seen once under load): exploring then asks, and is approved.
        expect(card.get_by_role("heading")).to_have_text("Explore in a copy of the kernel, unsandboxed")
        page.keyboard.press("Control+Enter")
        expect(card).to_have_attribute("data-tool-call-id", "boom", timeout=30_000)
        expect(card).to_be_focused()
    expect(card.get_by_role("heading")).to_have_text("Run a cell")  # said once: verb, then the code
    expect(card.get_by_role("button", name="Approve", exact=True)).to_have_attribute(
        "aria-keyshortcuts", "Control+Enter Meta+Enter"
    )
    assert AXE.exists(), "npm ci installs axe-core (a devDependency)"
    page.add_script_tag(content=AXE.read_text())
    assert _axe(page, '[data-testid="cw-approval-card"]') == []
    page.keyboard.press("Control+Enter")  # the cell that fails
    expect(card).to_have_attribute("data-tool-call-id", "ok", timeout=30_000)
    expect(card).to_be_focused()
    page.keyboard.press("Control+Enter")
    expect(card).to_have_attribute("data-tool-call-id", "sh", timeout=30_000)
    expect(card).to_be_focused()
    page.keyboard.press("r")
    reason = card.get_by_role("textbox", name="Reason for rejecting")
    expect(reason).to_be_focused()
    page.keyboard.type("not the build folder")
    page.keyboard.press("Control+Enter")
    expect(page.get_by_test_id("cw-final")).to_contain_text("40 values", timeout=30_000)
    assert "not the build folder" in str(fake_llm.requests[-1]["messages"])
    steps = page.get_by_test_id("cw-step")
    expect(steps).to_have_count(5)  # the plan is the checklist on top, not a step
    expect(page.get_by_test_id("cw-todos")).to_be_visible()
    # What each model call sent: in that call's details (folded), not a line between the steps.
    expect(page.locator('.cw-step [data-testid="cw-sent-step"]')).to_have_count(4)
    expect(page.locator('.cw-step [data-testid="cw-sent-step"]:visible')).to_have_count(0)
    expect(page.get_by_test_id("cw-run-usage")).to_have_count(0)  # usage once: the footer's

    # A step's menu by keyboard: Enter opens it on its first item, Escape gives focus back.
    menu_button = page.locator('.cw-step[data-tool-call-id="ok"]').get_by_role("button", name="Step actions")
    menu_button.focus()
    page.keyboard.press("Enter")
    menu = page.locator('.cw-step[data-tool-call-id="ok"]').get_by_role("menu")
    expect(menu).to_be_visible()
    expect(menu.get_by_role("menuitem", name="Show in notebook")).to_be_focused()
    page.keyboard.press("ArrowDown")
    expect(menu.get_by_role("menuitem").nth(1)).to_be_focused()
    page.keyboard.press("Escape")
    expect(menu).to_be_hidden()
    expect(menu_button).to_be_focused()
    # Undo by keyboard: the menu again, down to Undo, Enter; the focus goes back to the step's button.
    page.keyboard.press("Enter")
    page.keyboard.press("ArrowDown")
    expect(menu.get_by_role("menuitem", name="Undo", exact=True)).to_be_focused()
    page.keyboard.press("Enter")
    expect(menu_button).to_be_focused()
    undo_state = page.locator('[data-testid="cw-undo"][data-tool-call-id="ok"]')
    expect(undo_state).to_have_attribute("data-undo-state", "undone", timeout=30_000)
    # The exploration ran in the kernel's sandboxed copy; "Run as cell" is in its menu, not under it.
    explore = page.locator('.cw-step[data-tool-call-id="ex"]')
    expect(explore.get_by_test_id("cw-explore")).to_have_attribute("data-explore-state", re.compile("sandboxed$"))
    expect(explore.locator('[role="menuitem"][data-testid="cw-run-as-cell"]')).to_have_count(1)
    expect(explore.locator('button[data-testid="cw-run-as-cell"]:not([role="menuitem"])')).to_have_count(0)

    # A step rewound: a second run's cell, then "Rewind to here" from its menu, confirmed by keyboard.
    _ask_for_a_cell(page, fake_llm, "set a scratch value", "scratch", "scratch = 1", "Scratch set.")
    expect(card).to_be_focused()
    page.keyboard.press("Control+Enter")
    expect(page.get_by_test_id("cw-final").last).to_contain_text("Scratch set", timeout=30_000)
    scratch = page.locator('.cw-step[data-tool-call-id="scratch"]')
    scratch.get_by_role("button", name="Step actions").focus()
    page.keyboard.press("Enter")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    expect(scratch.get_by_role("menuitem", name="Rewind to here")).to_be_focused()
    page.keyboard.press("Enter")
    confirm = scratch.get_by_test_id("cw-rewind-confirm")
    confirm.focus()
    page.keyboard.press("Enter")
    expect(scratch.locator(".cw-rewind-state")).to_be_visible(timeout=30_000)
    expect(scratch.locator('[role="menuitem"][data-testid="cw-try-again"]')).to_have_count(1)
    expect(scratch.locator('[role="menuitem"][data-testid="cw-rewind-open"]')).to_have_count(0)

    # A sub-agent's block: a multi-agent run where the planner hands the listing to the researcher.
    fake_llm.script(
        tool_call("task", {"agent": "researcher", "description": "List the folder."}, id="delegated"),
        tool_call("list_files", {"path": "."}, id="sub_ls"),
        text("The folder holds the notebook."),
        tool_call("final_answer", {"answer": "Listed by the researcher."}),
    )
    mode = page.get_by_role("combobox", name="Agent mode")
    mode.select_option("multi")
    box.focus()
    page.keyboard.type("have the folder listed")
    page.keyboard.press("Enter")
    expect(page.get_by_test_id("cw-final").last).to_contain_text("Listed by the researcher", timeout=30_000)
    subtask = page.get_by_test_id("cw-subtask")
    expect(subtask).to_have_attribute("data-active", "false")
    mode.select_option("single")

    # Each step has its menu (none where nothing applies: the sub-agent's listing).
    for step in ("ex", "ok", "scratch", "boom", "sh"):
        expect(page.locator(f'.cw-step[data-tool-call-id="{step}"] [data-testid="cw-step-menu-button"]')).to_have_count(
            1
        )

    # Focus order follows reading order: Tab from the thread's first control goes down the thread.
    page.locator(".cw-log summary").first.focus()
    order = [page.evaluate(FOCUSED)]
    for _ in range(60):
        page.keyboard.press("Tab")
        focused = page.evaluate(FOCUSED)
        if focused is None:
            break
        order.append(focused)
    assert len(order) > 10, order
    backwards = [
        (a, b) for a, b in pairwise(order) if b["y"] < a["y"] - 4 or (abs(b["y"] - a["y"]) <= 4 and b["x"] <= a["x"])
    ]
    assert backwards == [], backwards

    # Every width and theme: nothing wider than the panel, nothing overlapping, a screenshot.
    root = page.locator("#cellwright-panel")
    problems = []
    for theme in THEMES:
        _theme(page, theme)
        for width in WIDTHS:
            _panel_width(page, width)
            measured = root.evaluate(MEASURE)
            if width == 800:  # room for a step's line: each kind is one line, as high as a plain step's
                heights = page.evaluate(HEIGHTS, [LINE.format(i) for i in ("ls", "ex", "ok", "scratch")] + [SUBTASK])
                plain = heights.pop(LINE.format("ls"))
                if not (plain > 0 and all(0 < h <= plain * 1.3 for h in heights.values())):
                    problems.append(f"{theme} {width}px: steps of more than one line: {plain} {heights}")
            for kind in ("wide", "overlaps"):
                problems += [f"{theme} {width}px {kind}: {what}" for what in measured[kind]]
            if measured["scroll"] > 0:
                problems.append(f"{theme} {width}px: the thread scrolls sideways by {measured['scroll']}px")
            shot = f"39-{theme.split()[-1].lower()}-{width}.png"
            root.screenshot(path=str(SHOTS / shot))
        assert _axe(page, "#cellwright-panel") == [], theme
    assert problems == [], "\n".join(problems[:40])

    # The stale banner: a card approved from a second client (here over REST) leaves no
    # "waiting for your approval" behind, though the panel's poll still says it waits.
    _theme(page, "JupyterLab Light")
    _ask_for_a_cell(page, fake_llm, "once more", "again", "print('again')", "Again done.")
    threads = lab.get("cellwright/api/threads").json()["threads"]
    waiting = [t for t in threads if t["status"] == "awaiting_approval"]
    assert len(waiting) == 1, threads
    thread_id = waiting[0]["thread_id"]
    # At the narrowest width the card shares the panel with the composer, never covers it.
    _panel_width(page, 280)
    card_box, box_box = card.bounding_box(), box.bounding_box()
    assert box_box and box_box["y"] >= card_box["y"] + card_box["height"] - 1, (card_box, box_box)
    assert box_box["y"] + box_box["height"] <= page.viewport_size["height"], box_box
    card.get_by_role("button", name="Approve", exact=True).scroll_into_view_if_needed()
    root.screenshot(path=str(SHOTS / "39-card-280.png"))
    # The panel asks for waiting threads every 3 s: let one answer see this one waiting.
    page.wait_for_timeout(3_200)
    answer = lab.request("POST", f"cellwright/api/threads/{thread_id}/approvals/again", {"decision": "approve"})
    assert answer.status_code in (200, 202), answer.text
    approved = time.monotonic()
    expect(card).to_have_count(0, timeout=5_000)
    banner = page.get_by_test_id("cw-waiting")
    expect(banner).to_have_count(0, timeout=max(1, int(500 - (time.monotonic() - approved) * 1000)))
    expect(page.get_by_test_id("cw-final").last).to_contain_text("Again done", timeout=30_000)
    expect(banner).to_have_count(0)
    assert not page.errors, page.errors  # type: ignore[attr-defined]
