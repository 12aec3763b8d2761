"""A client that acts the moment an event arrives is served correctly: an approval sent as soon as
`run_finished(awaiting_approval)` reaches the stream is accepted, every time."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from devtools.fake_llm import FakeLLM, text, tool_call
from tests.conftest import Api

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
