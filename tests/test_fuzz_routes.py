"""Fuzzing every route of API.md through a real Jupyter server process: generated bodies of every
JSON type, wrong types per field, huge and deeply nested values, unicode, unknown ids. No answer
may be a 5xx, and every 4xx is JSON with `error` and `message`. Bounded, so CI stays fast."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from devtools.fake_llm import FakeLLM
from devtools.jupyter_process import JupyterProcess

EXAMPLES = 60  # per route test; the whole module takes well under a minute

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=50),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)
awkward_strings = st.sampled_from(
    [
        "",
        " ",
        "../../etc/passwd",
        "/etc/passwd",
        ".hidden/x",
        "a" * 100_000,
        "\x00",
        "\ud800",
        "名前.ipynb",
        "%00",
        "\u202e",
    ]
)
ids = st.text(alphabet="abcdef0123456789-_", min_size=1, max_size=40)

ROUTE_FIELDS: dict[str, list[str]] = {
    "threads": ["notebook_path", "title"],
    "runs": ["message", "notebook_path", "kernel_id", "mode"],
    "approvals": ["decision", "args", "reason", "kernel_id"],
    "config": ["model", "base_url", "api_key", "tool_calling", "auto_approve"],
    "diagnostics": ["code", "path", "kernel_id"],
    "resources": ["files", "dataframes", "kernel_id", "notebook_path"],
}


def bodies(route: str) -> st.SearchStrategy[Any]:
    fields = ROUTE_FIELDS[route]
    shaped = st.fixed_dictionaries({}, optional={name: json_values | awkward_strings for name in fields})
    deep = st.integers(min_value=10, max_value=5000).map(lambda n: "[" * n + "]" * n)
    return st.one_of(shaped, json_values.map(json.dumps), deep, st.binary(max_size=64), st.just("{"))


@pytest.fixture(scope="module")
def server(tmp_path_factory: Any) -> Iterator[JupyterProcess]:
    with FakeLLM() as llm:
        env = {"CELLWRIGHT_MODEL": "fake", "OPENAI_BASE_URL": llm.base_url, "OPENAI_API_KEY": "sk-fuzz"}
        process = JupyterProcess(Path(tmp_path_factory.mktemp("fuzz")), env).start()
        try:
            yield process
        finally:
            process.stop()


@pytest.fixture(scope="module")
def thread_id(server: JupyterProcess) -> str:
    response = server.request("POST", "cellwright/api/threads", {"notebook_path": "n.ipynb"})
    assert response.status_code == 201
    return response.json()["thread_id"]


def send(server: JupyterProcess, method: str, path: str, body: Any = None) -> httpx.Response:
    if isinstance(body, (dict, list)):
        content: bytes | None = json.dumps(body).encode()
    elif isinstance(body, str):
        content = body.encode("utf-8", "surrogatepass")
    else:
        content = body
    headers = {"Authorization": "token cellwright-test-token", "Content-Type": "application/json"}
    response = httpx.request(
        method, f"{server.url}/cellwright/api/{path}", content=content, headers=headers, timeout=60
    )
    assert response.status_code < 500, f"{method} {path} {body!r:.300} -> {response.status_code} {response.text[:500]}"
    if response.status_code >= 400:
        data = response.json()
        assert isinstance(data.get("error"), str) and isinstance(data.get("message"), str) and data["message"], data
    return response


FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)


@FUZZ
@given(body=bodies("threads"))
def test_fuzz_create_thread(server: JupyterProcess, body: Any) -> None:
    send(server, "POST", "threads", body)


@FUZZ
@given(body=bodies("runs"), known=st.booleans(), other=ids)
def test_fuzz_start_run(server: JupyterProcess, thread_id: str, body: Any, known: bool, other: str) -> None:
    response = send(server, "POST", f"threads/{thread_id if known else other}/runs", body)
    if response.status_code == 202:
        send(server, "POST", f"threads/{thread_id}/cancel", {})


@FUZZ
@given(body=bodies("approvals"), call=ids, known=st.booleans(), other=ids)
def test_fuzz_approval(server: JupyterProcess, thread_id: str, body: Any, call: str, known: bool, other: str) -> None:
    send(server, "POST", f"threads/{thread_id if known else other}/approvals/{call}", body)


@FUZZ
@given(body=bodies("config"))
def test_fuzz_config(server: JupyterProcess, body: Any) -> None:
    send(server, "PUT", "config", body)
    send(server, "PUT", "config", {"model": "fake"})  # keep the server usable for the next example


@FUZZ
@given(route=st.sampled_from(["diagnostics", "resources"]), data=st.data())
def test_fuzz_tool_routes(server: JupyterProcess, route: str, data: Any) -> None:
    send(server, "POST", route, data.draw(bodies(route)))


@FUZZ
@given(
    method=st.sampled_from(["GET", "DELETE", "POST"]),
    tail=st.sampled_from(["", "/events", "/cancel"]),
    other=ids,
    after=st.one_of(st.integers(min_value=-(2**80), max_value=2**80).map(str), st.text(max_size=30)),
)
def test_fuzz_thread_routes(server: JupyterProcess, method: str, tail: str, other: str, after: str) -> None:
    if (
        tail == "/events"
        and method != "GET"
        or tail == "/cancel"
        and method != "POST"
        or tail == ""
        and method == "POST"
    ):
        return
    path = f"threads/{other}{tail}"
    if tail == "/events":
        path += "?" + httpx.QueryParams({"after": after}).__str__()
    send(server, method, path, {} if method == "POST" else None)


def test_reads_answer(server: JupyterProcess, thread_id: str) -> None:
    for path in ("health", "config", "threads", f"threads/{thread_id}"):
        assert send(server, "GET", path).status_code == 200
