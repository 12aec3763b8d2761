"""The user story under a real JupyterHub, in Debian's chromium: alice signs in through the hub's
login form (from then on the hub's cookies authenticate her, not a server token), opens JupyterLab
at /user/alice/lab, asks the Cellwright panel, approves the cell the scripted model proposes, and
sees its output and the answer. Every request the panel makes must work under the /user/alice/
prefix: REST calls, the POSTs (XSRF) and the event stream."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from devtools.fake_llm import FakeLLM, tool_call
from devtools.jupyter_process import REPO
from tests.hub_fixture import PASSWORD, Hub, hub_llm, hub_server_env, running_hub  # noqa: F401 (hub_llm: a fixture)
from tests.ui.conftest import SHOTS, browser_page, open_new_notebook, open_panel_from_palette


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory, hub_llm: FakeLLM) -> Iterator[Hub]:
    yield from running_hub(tmp_path_factory.mktemp("hub"), hub_server_env(hub_llm), servers=("alice",))


@pytest.fixture
def page(hub: Hub) -> Iterator[Any]:
    with browser_page() as page:
        yield page


def sign_in(page: Any, hub: Hub, user: str) -> None:
    """The hub's login form, as a person fills it in."""
    page.goto(f"{hub.url}/hub/login")
    page.locator("#username_input").fill(user)
    page.locator("#password_input").fill(PASSWORD)
    page.locator("#login_submit").click()
    # Signed in, the hub sends her on: to her running server's default page (/user/<name>/lab).
    page.wait_for_url(lambda url: "/hub/login" not in url, timeout=30_000)
    assert "jupyterhub-session-id" in {cookie["name"] for cookie in page.context.cookies()}


def built_panel_entry() -> str:
    """The remoteEntry file of the panel built in this working tree (npm run build)."""
    built = json.loads((REPO / "jupyter_ext" / "labextension" / "package.json").read_text())
    return str(built["jupyterlab"]["_build"]["load"])


def test_signed_in_through_the_hub_alice_asks_approves_and_sees_the_output(
    page: Any, hub: Hub, hub_llm: FakeLLM
) -> None:
    from playwright.sync_api import expect

    hub_llm.script(
        tool_call("run_cell", {"code": "print('hub', 6 * 7)", "description": "Multiply"}, id="call_hub"),
        tool_call("final_answer", {"answer": "The product is **42**."}),
    )
    # Every Cellwright request the page makes, with the answer it got (or its failure).
    calls: list[tuple[str, str, int | str]] = []
    page.on(
        "requestfinished",
        lambda request: (
            calls.append((request.method, request.url, request.response().status))
            if "/cellwright/api/" in request.url
            else None
        ),
    )
    page.on(
        "requestfailed",
        lambda request: (
            calls.append((request.method, request.url, request.failure or "failed"))
            if "/cellwright/api/" in request.url
            else None
        ),
    )

    # JupyterLab sends the token the hub put in its page config with each request, as well as the
    # hub's cookies. The panel's calls go without it: her session cookie (and, on a POST, the XSRF
    # token) alone must do.
    sent_token: list[str] = []

    def cookies_only(route: Any) -> None:
        headers = dict(route.request.headers)
        if headers.pop("authorization", None):
            sent_token.append(route.request.url)
        route.continue_(headers=headers)

    page.route(lambda url: "/cellwright/api/" in url, cookies_only)

    sign_in(page, hub, "alice")
    open_new_notebook(page, hub.user_url("alice"))  # the hub's OAuth hands alice's server her identity
    assert page.url.startswith(f"{hub.user_url('alice')}/lab"), page.url
    loaded = page.evaluate(
        "JSON.parse(document.getElementById('jupyter-config-data').textContent).federated_extensions"
        ".find(e => e.name === 'cellwright')"
    )
    assert loaded and loaded["load"] == built_panel_entry(), f"not this working tree's panel: {loaded}"

    open_panel_from_palette(page)
    page.get_by_role("textbox", name="Message Cellwright").fill("multiply 6 by 7")
    page.get_by_role("button", name="Send").click()
    card = page.get_by_role("region", name="Approval required")
    card.wait_for(timeout=60_000)  # a fresh server imports langgraph and openai on its first run
    expect(card).to_contain_text("print('hub', 6 * 7)")
    page.screenshot(path=str(SHOTS / "hub-1-approval-card.png"))

    card.get_by_role("button", name="Approve", exact=True).click()
    expect(page.get_by_test_id("cw-final")).to_contain_text("The product is 42", timeout=30_000)
    output = page.locator(".jp-Notebook .jp-OutputArea-output").filter(has_text="hub 42")
    expect(output).to_have_count(1, timeout=10_000)
    page.screenshot(path=str(SHOTS / "hub-2-final-answer.png"))

    prefix = f"{hub.user_url('alice')}/cellwright/api/"
    methods = {method for method, _, _ in calls}
    assert {"GET", "POST"} <= methods, calls  # the panel read and wrote (thread, run, approval)
    assert any(url.startswith(f"{prefix}threads/") and "/events" in url for _, url, _ in calls), calls
    wrong = [call for call in calls if not call[1].startswith(prefix) or not isinstance(call[2], int) or call[2] >= 400]
    # An event stream the panel closes itself shows as failed (net::ERR_ABORTED): not an error.
    wrong = [call for call in wrong if not ("/events" in call[1] and call[2] == "net::ERR_ABORTED")]
    assert not wrong, wrong
    assert sent_token, "the panel sent JupyterLab's token: the requests above went without it"
    assert "sk-hub-secret" not in page.content()
    assert not page.errors, page.errors  # type: ignore[attr-defined]
