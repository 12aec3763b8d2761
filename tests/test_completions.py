"""POST completions through a real Jupyter server against the scripted model: the FIM request's
shape, the chat fallback of an endpoint without /v1/completions (and its key kept at home), the
kernel's DataFrame columns in the prompt (never its values), hidden files refused, the cache, the
boundary and the parse check, and a request closed by the client closing the endpoint's at once."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import httpx
import pytest

from devtools.fake_llm import FakeLLM, text
from tests.conftest import NOTEBOOK, Api, execute_reply


def lines(body: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in body.splitlines() if line.strip()]


async def complete(api: Api, **fields: Any) -> list[dict[str, Any]]:
    """The answer's JSON lines (application/x-ndjson: Api.call would read it as one JSON document)."""
    body = json.dumps({"path": "work.py", "suffix": "", **fields})
    response = await api._fetch("cellwright", "api", "completions", method="POST", body=body, raise_error=False)
    assert response.code == 200, response.body
    assert response.headers["Content-Type"] == "application/x-ndjson"
    return lines(response.body.decode())


def settings(jp_serverapp: Any) -> Any:
    return jp_serverapp.web_app.settings["cellwright"].configuration


async def test_fim_request_shape_then_the_cache(api: Api, fake_llm: FakeLLM) -> None:
    fake_llm.script(text("total = price * qty\n"))
    answer = await complete(api, prefix="price = 2\nqty = 3\n", suffix="\nprint(total)\n")
    assert fake_llm.paths == ["/v1/completions"]
    request = fake_llm.requests[0]
    assert request["prompt"].endswith("price = 2\nqty = 3\n") and request["suffix"] == "\nprint(total)\n"
    assert request["stream"] is True and "messages" not in request
    assert fake_llm.request_headers[0]["authorization"] == "Bearer sk-test-secret-key"  # its own endpoint's key
    assert "".join(c["text"] for c in answer if c["type"] == "delta").startswith("total = price * qty")
    assert answer[-1] == {"type": "done", "text": "total = price * qty", "fim": True}

    again = await complete(api, prefix="price = 2\nqty = 3\n", suffix="\nprint(total)\n")
    typed_ahead = await complete(api, prefix="price = 2\nqty = 3\ntotal = pr", suffix="\nprint(total)\n")
    assert again[-1]["text"] == "total = price * qty" and again[-1]["cached"]
    assert typed_ahead[-1]["text"] == "ice * qty" and typed_ahead[-1]["cached"]
    assert len(fake_llm.requests) == 1
    _, usage = await api.call("GET", "completions/usage", expect=200)
    assert usage["requests"] == 1 and usage["cached"] == 2 and usage["completion_tokens"] > 0


async def test_chat_fallback_where_the_endpoint_has_no_fim(api: Api, fake_llm: FakeLLM, jp_serverapp: Any) -> None:
    with FakeLLM(completions=False) as chat_only:
        settings(jp_serverapp).completion_base_url = chat_only.base_url  # another endpoint: no key of its own
        settings(jp_serverapp).completion_model = "coder"
        chat_only.script(text("```python\nsum(values)\n```"), text("len(values)"))
        first = await complete(api, prefix="values = [1, 2]\ntotal = ", suffix="\n")
        second = await complete(api, prefix="values = [1, 2]\ncount = ", suffix="\n")
    assert first[-1]["text"] == "sum(values)" and first[-1]["fim"] is False
    assert second[-1]["text"] == "len(values)"
    assert chat_only.refused_completions == 1  # detected once, remembered
    assert chat_only.paths == ["/v1/chat/completions"] * 2 and not fake_llm.requests
    request = chat_only.requests[0]
    assert request["model"] == "coder"
    assert "values = [1, 2]\ntotal = <CURSOR>\n" in request["messages"][-1]["content"]
    assert all("authorization" not in headers for headers in chat_only.request_headers)  # keys stay home


async def test_the_kernels_columns_reach_the_prompt_never_its_values(
    api: Api, fake_llm: FakeLLM, notebook_kernel: str, jp_serverapp: Any
) -> None:
    code = (
        "import pandas as pd\n"
        "df = pd.DataFrame({'price': [1.5], 'city': ['Lyon-hunter2']})\n"
        "api_token = 'sk-value-never-sent'"
    )
    assert (await execute_reply(jp_serverapp, notebook_kernel, code))["content"]["status"] == "ok"
    fake_llm.script(text("groupby('city').price.mean()"))
    answer = await complete(
        api,
        path=NOTEBOOK,
        kernel_id=notebook_kernel,
        execution_count=3,
        prefix="df.",
        cells_above=["x = 1", "import pandas as pd"],
    )
    assert answer[-1]["text"] == "groupby('city').price.mean()"
    prompt = fake_llm.requests[0]["prompt"]
    assert "df: pandas.DataFrame (1 x 2), columns: 'price' float64, 'city' " in prompt  # object, or str (pandas 3)
    assert "api_token: str" in prompt and "pd: module" in prompt
    assert "hunter2" not in prompt and "sk-value-never-sent" not in prompt
    assert prompt.index("import pandas as pd") < prompt.index("x = 1") < prompt.index("df.")  # notebook order

    # The names are read again when a cell ran (the panel sends the notebook's execution count), not on every key.
    assert (await execute_reply(jp_serverapp, notebook_kernel, "later = [1, 2]"))["content"]["status"] == "ok"
    fake_llm.script(text("append(3)"), text("append(4)"))
    same = {"path": NOTEBOOK, "kernel_id": notebook_kernel, "execution_count": 3}
    await complete(api, **same, prefix="x.")
    await complete(api, **{**same, "execution_count": 4}, prefix="later.")
    assert "later: list" not in fake_llm.requests[1]["prompt"] and "later: list (2)" in fake_llm.requests[2]["prompt"]


async def test_hidden_files_and_paths_outside_the_root_never_reach_the_model(
    api: Api, fake_llm: FakeLLM, jp_root_dir: Any
) -> None:
    (jp_root_dir / ".private").mkdir()
    (jp_root_dir / ".private" / "keys.py").write_text("TOKEN = 'hidden-content'\n")
    code, body = await api.call("POST", "completions", {"path": ".private/keys.py", "prefix": "TOKEN = 'hid"})
    assert code == 400 and body["error"] == "hidden_path"
    code, body = await api.call("POST", "completions", {"path": "../elsewhere.py", "prefix": "x"})
    assert code == 400 and body["error"] == "path_outside_root"
    code, body = await api.call("POST", "completions", {"path": "work.py"})
    assert code == 400 and body["error"] == "missing_fields"
    assert not fake_llm.requests


async def test_the_servers_data_policy_holds_for_completions(api: Api, fake_llm: FakeLLM, jp_serverapp: Any) -> None:
    settings(jp_serverapp).data_policy = "redact"
    fake_llm.script(text("send(to)"))
    answer = await complete(
        api,
        prefix="to = 'ada.lovelace@example.com'\ncard = '4111 1111 1111 1111'\nmail.",
        suffix="\n",
        cells_above=["backup = 'grace.hopper@example.org'"],
    )
    assert answer[-1]["text"] == "send(to)"
    (raw,) = fake_llm.raw_requests
    sent = raw.decode()
    for value in ("ada.lovelace@example.com", "4111 1111 1111 1111", "grace.hopper@example.org"):
        assert value not in sent, value
    assert "[REDACTED:" in sent and "mail." in sent  # the code around them still goes


async def test_a_boundary_ends_it_and_what_does_not_parse_is_dropped(api: Api, fake_llm: FakeLLM) -> None:
    fake_llm.script(text("return x + 1\n\ndef other():\n    pass\n"), text("groupby('city'"))
    block = await complete(api, prefix="def f(x):\n    ", suffix="")
    broken = await complete(api, prefix="df.", suffix="\n")
    assert block[-1]["text"] == "return x + 1"
    assert broken[-1]["text"] == "" and "does not parse" in broken[-1]["dropped"]


async def test_no_token_no_completion(api: Api, fake_llm: FakeLLM, jp_http_port: int, jp_base_url: str) -> None:
    """(`api` starts the server listening on jp_http_port.)"""
    base = f"http://127.0.0.1:{jp_http_port}{jp_base_url}cellwright/api/"
    async with httpx.AsyncClient(base_url=base) as stranger:
        refused = await stranger.post("completions", json={"path": "work.py", "prefix": "x = "})
        usage = await stranger.get("completions/usage")
    assert refused.status_code == 403 and usage.status_code == 403
    assert not fake_llm.requests


async def test_an_unreachable_endpoint_and_no_model_are_said_plainly(
    api: Api, fake_llm: FakeLLM, jp_serverapp: Any
) -> None:
    from devtools.jupyter_process import free_port

    settings(jp_serverapp).completion_base_url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens
    answer = await complete(api, prefix="x = ")
    assert answer == [answer[-1]] and answer[-1]["type"] == "error" and answer[-1]["kind"] == "llm_unreachable"
    assert "Cannot reach" in answer[-1]["message"]
    settings(jp_serverapp).model = ""
    code, body = await api.call("POST", "completions", {"path": "work.py", "prefix": "x = "})
    assert code == 409 and body["error"] == "llm_not_configured"


async def test_turned_off_it_says_so(api: Api, fake_llm: FakeLLM, jp_serverapp: Any) -> None:
    settings(jp_serverapp).inline_completion = False
    code, body = await api.call("POST", "completions", {"path": "work.py", "prefix": "x = "})
    assert code == 409 and body["error"] == "completion_off" and "inline_completion" in body["message"]
    assert not fake_llm.requests


async def test_a_closed_request_closes_the_endpoints_stream_at_once(
    fake_llm: FakeLLM, jp_serverapp: Any, jp_http_port: int, jp_base_url: str, api: Api
) -> None:
    fake_llm.script(text(["value", " = compute(", "1"], hang=True))
    body = json.dumps({"path": "work.py", "prefix": "", "suffix": ""}).encode()
    token = jp_serverapp.identity_provider.token
    reader, writer = await asyncio.open_connection("127.0.0.1", jp_http_port)
    writer.write(
        f"POST {jp_base_url}cellwright/api/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: token {token}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    await writer.drain()
    received = b""
    while b'"delta"' not in received:
        received += await asyncio.wait_for(reader.read(4096), 10)
    assert received.startswith(b"HTTP/1.1 200")
    writer.transport.abort()  # the panel's AbortController on the next keystroke
    gone = time.monotonic()
    closed = await asyncio.to_thread(fake_llm.wait_for_close, 1, 5)
    assert closed[0] - gone < 0.1, f"the endpoint's stream was closed {closed[0] - gone:.3f} s after the client's"
    _, usage = await api.call("GET", "completions/usage", expect=200)
    assert usage["requests"] == 1 and usage["cancelled"] == 1


@pytest.fixture
def cellwright_config(cellwright_config: dict[str, Any]) -> dict[str, Any]:
    return {**cellwright_config, "request_timeout": 5.0}
