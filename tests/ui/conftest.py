"""Browser fixtures: JupyterLab with Cellwright in a subprocess, Debian's chromium through Playwright.

One chromium process serves every browser test of a test process (it takes seconds to start on the
2-core machine), reached over the DevTools protocol. Each test's page starts with no cookies and no
storage, but keeps chromium's HTTP cache, and each lab of a test process serves on the same port: so
JupyterLab's scripts (the same files, at the same URLs) come from the cache with V8's compiled code
after the first test. Loading the lab costs chromium ~1 s of CPU instead of ~7-9 (bench figures in
tests/README.md). Playwright's sync API cannot stay open across tests (it holds the thread's event
loop, which the async route tests need), so each test connects for its own duration."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from devtools.fake_llm import FakeLLM
from devtools.jupyter_process import QUIET_LAB_ARGS, REPO, TOKEN, JupyterProcess, quiet_lab_settings

CHROMIUM = "/usr/bin/chromium"
SHOTS = REPO / ".output" / "ui"
LAUNCH_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-quic",
]


@pytest.fixture
def lab_config() -> dict[str, Any]:
    """Server config (jupyter_server_config.json) for the lab a test starts; a module overrides it."""
    return {}


@pytest.fixture
def lab(tmp_path: Path, fake_llm: FakeLLM, lab_config: dict[str, Any]) -> Iterator[JupyterProcess]:
    env = {"OPENAI_BASE_URL": fake_llm.base_url, "OPENAI_API_KEY": "sk-ui-secret", "CELLWRIGHT_MODEL": "fake-model"}
    quiet_lab_settings(tmp_path / "config")
    # Inline completion off unless a module turns it on: typing in a cell would otherwise ask the
    # scripted model for ghost text and take the replies scripted for the agent.
    cellwright = {"inline_completion": False, **lab_config.get("Cellwright", {})}
    config = {**lab_config, "Cellwright": cellwright}
    (tmp_path / "config" / "jupyter_server_config.json").write_text(json.dumps(config))
    # Its kernels forked from a warm process, as the in-process servers' are (devtools/forked_kernels.py).
    server = JupyterProcess(tmp_path, env, app="lab", extra_args=QUIET_LAB_ARGS, forked_kernels=True)
    server.start(port=LAB_PORT.port())
    LAB_PORT.serving(server.port)
    yield server
    server.stop()


class LabPort:
    """The port the labs of this test process serve on, one after another: the page's URLs, and so
    chromium's cache entries, stay the same from test to test. Taken anew only when it is busy."""

    def __init__(self) -> None:
        self._port = 0

    def port(self) -> int:
        if not self._port:
            from devtools.jupyter_process import free_port

            self._port = free_port()
        return self._port

    def serving(self, port: int) -> None:
        self._port = port

    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port()}"


LAB_PORT = LabPort()


class SharedChromium:
    """The test process's chromium, started on first use (again if it died) and stopped at the session's end."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None
        self._profile: Path | None = None
        self._url = ""

    def url(self) -> str:
        """The DevTools endpoint (http://127.0.0.1:<port>) of a running chromium."""
        if self._proc is None or self._proc.poll() is not None:
            self.stop()
            self._start()
        return self._url

    def _start(self, timeout: float = 60) -> None:
        self._profile = Path(tempfile.mkdtemp(prefix="cellwright-chromium-"))
        args = [CHROMIUM, *LAUNCH_ARGS, "--remote-debugging-port=0", f"--user-data-dir={self._profile}", "about:blank"]
        self._proc = subprocess.Popen(
            args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        # chromium writes the port it chose into the profile once its DevTools server listens.
        port_file = self._profile / "DevToolsActivePort"
        deadline = time.monotonic() + timeout
        while not (port_file.exists() and port_file.read_text().strip()):
            if self._proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"{CHROMIUM} did not start (exit code {self._proc.poll()})")
            time.sleep(0.05)
        self._url = f"http://127.0.0.1:{port_file.read_text().split()[0]}"

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        if self._profile is not None:
            shutil.rmtree(self._profile, ignore_errors=True)
        self._proc, self._profile = None, None


SHARED_CHROMIUM = SharedChromium()


@pytest.fixture(scope="session", autouse=True)
def _shared_chromium_stops() -> Iterator[None]:
    yield
    SHARED_CHROMIUM.stop()


# How long an `expect` waits for the page to get there (Playwright's default: 5 s). A passing test
# waits no longer for it; on a loaded 2-core machine a lab page can take more than 5 s to reconcile a
# notebook or render a run's cells (CI: a count of 4 cells reached after 5 s).
EXPECT_TIMEOUT_MS = 20_000


@contextmanager
def chromium() -> Iterator[Any]:
    """The shared chromium as a Playwright `Browser`: every context a test makes on it is closed at the end."""
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=EXPECT_TIMEOUT_MS)
    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.connect_over_cdp(SHARED_CHROMIUM.url())
        try:
            yield browser
        finally:
            for context in browser.contexts[1:]:  # the default context stays, with its cache
                context.close()
            browser.close()  # over DevTools: disconnects, the process stays for the next test


@contextmanager
def browser_page() -> Iterator[Any]:
    """A page of the shared chromium with no cookies and no stored data (the labs' origin cleared),
    chromium's HTTP cache kept; `page.errors` collects the page's uncaught errors."""
    with chromium() as browser:
        context = browser.contexts[0]  # the default context: the one whose cache outlives a test
        context.clear_cookies()
        before = list(context.pages)  # chromium's first tab: closing every tab could end a headless chromium
        page = context.new_page()
        page.set_viewport_size({"width": 1500, "height": 950})
        # What JupyterLab keeps in the browser (local storage, IndexedDB...), never the HTTP cache.
        page.context.new_cdp_session(page).send(
            "Storage.clearDataForOrigin", {"origin": LAB_PORT.origin(), "storageTypes": KEPT_BY_THE_PAGE}
        )
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.errors = errors  # type: ignore[attr-defined]
        try:
            yield page
        finally:
            for opened in context.pages:
                if opened not in before:
                    opened.close()


KEPT_BY_THE_PAGE = "cookies,local_storage,indexeddb,service_workers,cache_storage,file_systems,websql"


@pytest.fixture
def page(lab: JupyterProcess) -> Iterator[Any]:
    with browser_page() as page:
        yield page


def open_new_notebook(page: Any, lab: JupyterProcess | str) -> None:
    """A new notebook in a fresh workspace. `lab` is a server the test started (its token goes in the
    URL) or the base URL of a server the browser is already logged in to (a hub's /user/<name>)."""
    url = f"{lab.url}/lab?reset&token={TOKEN}" if isinstance(lab, JupyterProcess) else f"{lab.rstrip('/')}/lab?reset"
    page.goto(url)
    page.wait_for_selector(".jp-Launcher", timeout=60_000)
    page.locator('.jp-LauncherCard[data-category="Notebook"]').first.click()
    page.wait_for_selector('.jp-Notebook-ExecutionIndicator[data-status="idle"]', timeout=60_000)


def open_panel_from_palette(page: Any) -> None:
    """Run "Open Cellwright" from the command palette. The modal palette closes when focus moves
    (a busy page restoring its layout does that), so the whole sequence is retried."""
    palette = page.locator(".lm-CommandPalette-input")
    item = page.locator('.lm-CommandPalette-item.lm-mod-active[data-command="cellwright:open"]')
    box = page.get_by_role("textbox", name="Message Cellwright")
    for _ in range(5):
        page.locator(".jp-Notebook").first.click()
        page.keyboard.press("Escape")  # command mode: the cell editor would keep the shortcut
        page.keyboard.press("Control+Shift+C")
        try:
            palette.wait_for(state="visible", timeout=3_000)
            page.keyboard.type("Open Cellwright")
            item.wait_for(timeout=3_000)
            page.keyboard.press("Enter")
            box.wait_for(timeout=5_000)
            return
        except Exception:
            page.keyboard.press("Escape")
    raise AssertionError("the command palette did not run Open Cellwright")


def ask_until_card(page: Any, lab: JupyterProcess | str, message: str) -> Any:
    """A new notebook, the panel opened, `message` sent: the approval card of the run's first risky
    call, once shown (a fresh server imports langgraph and openai on its first run)."""
    open_new_notebook(page, lab)
    open_panel_from_palette(page)
    page.get_by_role("textbox", name="Message Cellwright").fill(message)
    page.get_by_role("button", name="Send").click()
    card = page.get_by_role("region", name="Approval required")
    card.wait_for(timeout=60_000)
    return card


def run_cell_from_editor(page: Any, cell: Any) -> None:
    """Run `cell` with Ctrl+Enter from its editor and wait until its prompt shows `[*]`. A key
    press can land while focus is still moving (the panel grabbed it a moment ago), so the
    press is repeated, but only while the prompt shows the cell never started."""
    from playwright.sync_api import expect

    prompt = cell.locator(".jp-InputPrompt")
    for _ in range(5):
        cell.locator(".cm-content").click()
        page.keyboard.press("Control+Enter")
        try:
            expect(prompt).not_to_have_text("[ ]:", timeout=3_000)
            break
        except Exception:
            continue
    else:
        raise AssertionError("Ctrl+Enter did not start the cell")


def pytest_collection_modifyitems(items: list[Any]) -> None:
    if not Path(CHROMIUM).exists():
        skip = pytest.mark.skip(reason=f"{CHROMIUM} is missing: apt-get install chromium (scripts/test.sh does)")
        for item in items:
            if "tests/ui/" in str(item.fspath):
                item.add_marker(skip)
