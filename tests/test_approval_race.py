"""A client that acts the moment an event arrives is served correctly: an approval sent as soon as
`run_finished(awaiting_approval)` reaches the stream is accepted, every time; and a reader that asked
to follow a waiting thread (`waiting=1`, the panel) hears a decision made by another client."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from devtools.fake_llm import FakeLLM, text, tool_call
from tests.conftest import Api, of_type

pytestmark = pytest.mark.also_postgres

ROUNDS = 20


async def _approve_on_arrival(client: httpx.AsyncClient, base: str, thread: str) -> tuple[int, int]:
    """Follow the thread's events; the moment the segment reports that it waits, approve its call."""
    call_id = None
    async with client.stream("GET", f"{base}/threads/{thread}/events") as response:
        assert response.status_code == 200
        data: dict[str, Any] | None = None
        seen: list[str] = []
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                data = json.loads(line[len("data: ") :])
            if line or data is None:
                continue
            event, data = data, None
            seen.append(event["type"])
            if event["type"] == "approval_required":
                call_id = event["id"]
            if event["type"] == "run_finished":
                assert event["status"] == "awaiting_approval", (thread, event)
                approval = await client.post(
                    f"{base}/threads/{thread}/approvals/{call_id}", json={"decision": "approve"}
                )
                return approval.status_code, event["seq"]
    raise AssertionError(f"the stream ended without run_finished: {seen}")


async def test_an_approval_sent_as_the_card_arrives_is_accepted(
    api: Api,
    fake_llm: FakeLLM,
    notebook_kernel: str,
    jp_http_port: int,
    jp_base_url: str,
    jp_auth_header: dict[str, str],
) -> None:
    script = []
    for i in range(ROUNDS):
        script += [tool_call("run_cell", {"code": f"race_{i} = {i}"}, id=f"call_{i}"), text(f"done {i}")]
    fake_llm.script(*script)
    base = f"http://127.0.0.1:{jp_http_port}{jp_base_url.rstrip('/')}/cellwright/api"
    codes = []
    async with httpx.AsyncClient(headers=jp_auth_header, timeout=60) as client:
        for i in range(ROUNDS):
            thread = await api.new_thread()
            await api.run(thread, f"set race_{i}")
            code, seq = await _approve_on_arrival(client, base, thread)
            codes.append(code)
            if code != 202:
                continue
            resumed = await api.until_finished(thread, after=seq)
            assert [e["status"] for e in resumed if e["type"] == "cell_finished"] == ["ok"], resumed
            assert resumed[-1]["status"] == "completed"
    assert codes == [202] * ROUNDS


async def test_a_stream_that_follows_a_waiting_thread_hears_the_decision_made_elsewhere(
    api: Api,
    fake_llm: FakeLLM,
    notebook_kernel: str,
    jp_serverapp: Any,
    jp_http_port: int,
    jp_base_url: str,
    jp_auth_header: dict[str, str],
) -> None:
    """With `waiting=1` the stream of a thread whose card waits stays open (it pings) and carries the
    run that another client's approval resumes, then closes when that run ends. Without it the stream
    closes at once, as every other reader expects."""
    fake_llm.script(tool_call("run_cell", {"code": "waited = 41 + 1"}, id="call_w"), text("done"))
    # A ping shows the stream is waiting (not closed) before the decision is sent: no race to win.
    jp_serverapp.web_app.settings["cellwright"].run_manager.ping_interval = 0.2
    thread = await api.new_thread()
    await api.run(thread, "set waited")
    first = await api.until_finished(thread)
    assert first[-1]["status"] == "awaiting_approval", first
    card, seq = of_type(first, "approval_required")[0], first[-1]["seq"]
    assert await api.events(thread, after=seq, timeout=10) == []  # the default: closed, nothing more

    base = f"http://127.0.0.1:{jp_http_port}{jp_base_url.rstrip('/')}/cellwright/api"
    events: list[dict[str, Any]] = []
    decided = None
    async with httpx.AsyncClient(headers=jp_auth_header, timeout=30) as client:
        url = f"{base}/threads/{thread}/events"
        async with client.stream("GET", url, params={"after": seq, "waiting": 1}) as response:
            assert response.status_code == 200
            data = None
            async for line in response.aiter_lines():
                if line.startswith(": ping") and decided is None:
                    decided = await client.post(
                        f"{base}/threads/{thread}/approvals/{card['id']}", json={"decision": "approve"}
                    )
                elif line.startswith("data: "):
                    data = json.loads(line[len("data: ") :])
                elif not line and data is not None:
                    events.append(data)
                    data = None
    # The loop ended: the server closed the stream once the resumed run had finished.
    assert decided is not None and decided.status_code == 202, (decided, events)
    types = [e["type"] for e in events]
    assert types[0] == "caught_up" and "run_started" in types, types
    assert [e["status"] for e in events if e["type"] == "cell_finished"] == ["ok"], events
    assert events[-1]["type"] == "run_finished" and events[-1]["status"] == "completed", events
