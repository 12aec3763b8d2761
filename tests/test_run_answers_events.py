"""A POST that starts a run answers with the run's events when asked (`Accept: text/event-stream`):
the client reads what it started on the answer, with no second request before the first token
(issue 41). The answer is the event stream's (replay after Last-Event-ID, then live, until the run
ends); what the POST refuses is still refused as JSON, before anything starts."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from devtools.fake_llm import FakeLLM, text, tool_call
from devtools.sse import parse_sse
from tests.conftest import NOTEBOOK, Api, of_type

pytestmark = pytest.mark.also_postgres

EVENTS = {"Accept": "text/event-stream"}


@pytest.fixture
def client(
    jp_http_port: int, jp_base_url: str, jp_auth_header: dict[str, str], jp_asyncio_loop: Any
) -> Iterator[httpx.AsyncClient]:
    """A client of its own (the server's test fetch reads an answer whole; these read it as it comes)."""
    base = f"http://127.0.0.1:{jp_http_port}{jp_base_url.rstrip('/')}/cellwright/api"
    http = httpx.AsyncClient(base_url=base, headers=jp_auth_header, timeout=60)
    yield http
    jp_asyncio_loop.run_until_complete(http.aclose())


async def _post_events(
    client: httpx.AsyncClient,
    path: str,
    body: dict[str, Any],
    headers: dict[str, str] | None = None,
    waiting: bool = True,
) -> tuple[httpx.Response, list[dict[str, Any]]]:
    """POST asking for the events as the panel does; the answer read to its end (the run's end; with
    `waiting`, the end of the run a decision resumes)."""
    params = {"previews": "1", "waiting": "1" if waiting else "0"}
    async with client.stream("POST", path, json=body, params=params, headers={**EVENTS, **(headers or {})}) as response:
        raw = (await response.aread()).decode()
    return response, parse_sse(raw) if response.status_code == 200 else []  # the stored events


async def test_a_run_started_with_accept_event_stream_streams_to_its_end(
    api: Api, fake_llm: FakeLLM, client: httpx.AsyncClient
) -> None:
    fake_llm.script(text(["Hello", " there"]), text(["Second"]))
    thread = await api.new_thread()
    response, events = await _post_events(
        client, f"threads/{thread}/runs", {"message": "hi", "notebook_path": NOTEBOOK}
    )
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "text/event-stream"
    kinds = [e["type"] for e in events]
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished", kinds
    assert "".join(e["text"] for e in of_type(events, "token")) == "Hello there"
    assert events == await api.events(thread), "the answer's events are the thread's log"
    assert len(fake_llm.requests) == 1, "one run, the model asked once"

    # A second run, asked after the last event seen: nothing of the first run is replayed.
    last = events[-1]["seq"]
    response, events = await _post_events(
        client, f"threads/{thread}/runs", {"message": "again"}, headers={"Last-Event-ID": str(last)}
    )
    assert response.status_code == 200
    assert events[0]["seq"] == last + 1
    assert of_type(events, "run_started") and of_type(events, "run_finished")


async def test_what_the_post_refuses_is_json_and_starts_nothing(
    api: Api, fake_llm: FakeLLM, client: httpx.AsyncClient
) -> None:
    thread = await api.new_thread()
    for body, headers, status in [
        ({"message": "hi"}, {"Last-Event-ID": "not-a-number"}, 400),
        ({"message": "  "}, {}, 400),
    ]:
        response = await client.post(f"threads/{thread}/runs", json=body, headers={**EVENTS, **headers})
        assert response.status_code == status, response.text
        assert response.headers["Content-Type"].startswith("application/json")
        assert response.json()["message"]
    response = await client.post("threads/no-such-thread/runs", json={"message": "hi"}, headers=EVENTS)
    assert response.status_code == 404 and response.json()["error"]
    assert await api.events(thread) == [], "no run started"
    assert fake_llm.requests == []


async def test_a_decision_streams_the_run_it_resumes(
    api: Api, fake_llm: FakeLLM, notebook_kernel: str, client: httpx.AsyncClient
) -> None:
    fake_llm.script(tool_call("run_cell", {"code": "answered = 6 * 7\nprint(answered)"}, id="c1"), text(["Done."]))
    thread = await api.new_thread()
    body = {"message": "compute", "notebook_path": NOTEBOOK, "kernel_id": notebook_kernel}
    response, events = await _post_events(client, f"threads/{thread}/runs", body, waiting=False)
    assert response.status_code == 200
    card = of_type(events, "approval_required")
    assert card and of_type(events, "run_finished")[-1]["status"] == "awaiting_approval"

    last = events[-1]["seq"]
    path = f"threads/{thread}/approvals/{card[0]['id']}"
    response, resumed = await _post_events(
        client, path, {"decision": "approve", "kernel_id": notebook_kernel}, headers={"Last-Event-ID": str(last)}
    )
    assert response.status_code == 200
    assert resumed[0]["seq"] == last + 1
    assert of_type(resumed, "cell_finished")[0]["status"] == "ok"
    assert "42" in json.dumps(resumed), "the cell's output"
    assert of_type(resumed, "run_finished")[-1]["status"] == "completed"

    again = await client.post(path, json={"decision": "approve"}, headers=EVENTS)
    assert again.status_code == 409 and again.headers["Content-Type"].startswith("application/json")
