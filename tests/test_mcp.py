"""MCP servers' tools through the real Jupyter server, a real MCP server (tests/mcp_server_fixture.py,
written with the official SDK, over stdio and over streamable HTTP) and the scripted LLM: namespaced
names on approval cards, nothing runs before approval, a killed server restarts, bad servers and bad
arguments are tool errors, and secrets never leave."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devtools.fake_llm import FakeLLM, reading, text, tool_call
from tests.conftest import Api, of_type

FIXTURE = str(Path(__file__).with_name("mcp_server_fixture.py"))
SECRET_ENV = "env-secret-value-123"
SECRET_HEADER = "Bearer header-secret-456"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def notes_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    folder.mkdir()
    return folder


@pytest.fixture
def mcp_http_url(notes_dir: Path) -> Iterator[str]:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, FIXTURE, "--http", str(port)],
        env={**os.environ, "FIXTURE_NOTES": str(notes_dir)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError:
            time.sleep(0.2)
    yield f"http://127.0.0.1:{port}/mcp"
    proc.terminate()
    proc.wait(10)


@pytest.fixture
def cellwright_config(fake_llm: FakeLLM, tmp_path: Path, notes_dir: Path, mcp_http_url: str) -> dict[str, Any]:
    return {
        "model": "fake-model",
        "base_url": fake_llm.base_url,
        "api_key": "sk-test-secret-key",
        "data_dir": str(tmp_path / "cellwright-data"),
        "request_timeout": 10.0,
        "max_retries": 1,
        "mcp_servers": {
            "local": {
                "command": sys.executable,
                "args": [FIXTURE],
                "env": {"FIXTURE_NOTES": str(notes_dir), "SECRET": SECRET_ENV},
            },
            "web": {"url": mcp_http_url, "headers": {"Authorization": SECRET_HEADER}},
        },
    }


def tool_messages(fake_llm: FakeLLM) -> list[str]:
    return [m["content"] for m in fake_llm.requests[-1]["messages"] if m["role"] == "tool"]


async def _run(api: Api, thread: str, message: str, after: int = 0, **fields: Any) -> list[dict[str, Any]]:
    await api.run(thread, message, **fields)
    return await api.until_finished(thread, after)


async def test_stdio_and_http_tools_with_approval(api: Api, fake_llm: FakeLLM, notes_dir: Path) -> None:
    # The tools' names as discovery offered them to the model, not as the test knows them.
    fake_llm.script(
        reading(lambda seen: tool_call(seen.tool_named(r"^mcp__local__lookup$"), {"country": "Japan"}, id="c1")),
        reading(lambda seen: tool_call(seen.tool_named(r"^mcp__web__write"), {"name": "n1", "text": "hello"}, id="c2")),
        text("done"),
    )
    thread = await api.new_thread()
    events = await _run(api, thread, "use the tools")
    offered = {t["function"]["name"]: t["function"] for t in fake_llm.requests[0]["tools"]}
    assert {"mcp__local__lookup", "mcp__local__write_note", "mcp__web__lookup", "mcp__web__write_note"} <= set(offered)
    assert offered["mcp__local__lookup"]["parameters"]["required"] == ["country"]
    card = of_type(events, "approval_required")[0]
    assert card["name"] == "mcp__local__lookup"
    assert card["origin"] == {"kind": "mcp", "server": "local", "tool": "lookup", "read_only_hint": True}
    await api.approve(thread, "c1")
    events = await api.until_finished(thread, events[-1]["seq"])
    assert "Tokyo" in tool_messages(fake_llm)[0]
    card = of_type(events, "approval_required")[0]
    assert card["name"] == "mcp__web__write_note" and card["origin"]["server"] == "web"
    assert not (notes_dir / "n1.txt").exists()  # nothing before approval
    await api.approve(thread, "c2")
    events = await api.until_finished(thread, events[-1]["seq"])
    assert (notes_dir / "n1.txt").read_text() == "hello"
    assert events[-1]["status"] == "completed"
    code, servers = await api.call("GET", "mcp/servers")
    by_name = {s["name"]: s for s in servers["servers"]}
    assert code == 200 and by_name["local"]["status"] == "connected" and by_name["web"]["status"] == "connected"
    assert "lookup" in {t["name"] for t in by_name["local"]["tools"]}


async def test_secrets_stay_in(api: Api, fake_llm: FakeLLM) -> None:
    await api.call("PUT", "config", {"auto_approve": ["mcp__local__leak"]}, expect=200)
    fake_llm.script(
        tool_call("mcp__local__env_keys", {}, id="e1"), tool_call("mcp__local__leak", {}, id="e0"), text("done")
    )
    thread = await api.new_thread()
    events = await _run(api, thread, "env")
    await api.approve(thread, "e1")
    events += await api.until_finished(thread, events[-1]["seq"])
    keys, leaked = tool_messages(fake_llm)
    assert leaked == "my secret is ***"  # a result echoing a configured secret is scrubbed
    assert "SECRET" in keys and "OPENAI_API_KEY" not in keys and "FIXTURE_NOTES" in keys  # only what is configured
    _, config = await api.call("GET", "config")
    _, servers = await api.call("GET", "mcp/servers")
    everything = json.dumps([config, servers, await api.events(thread)])
    assert SECRET_ENV not in everything and "header-secret" not in everything
    assert config["mcp_servers"]["local"]["env"] == {"FIXTURE_NOTES": "********", "SECRET": "********"}
    # The form sends masked values back: the secrets are kept, not replaced by the mask.
    code, _ = await api.call(
        "PUT", "config", {"mcp_servers": {**{k: _as_sent(v) for k, v in config["mcp_servers"].items()}}}
    )
    assert code == 200
    fake_llm.script(tool_call("mcp__web__lookup", {"country": "Peru"}, id="e2"), text("done"))
    events = await _run(api, thread, "again", events[-1]["seq"])
    await api.approve(thread, "e2")
    await api.until_finished(thread, events[-1]["seq"])
    assert "Lima" in tool_messages(fake_llm)[-1]


def _as_sent(public: dict[str, Any]) -> dict[str, Any]:
    keep = ("command", "args", "env", "url", "headers")
    return {k: v for k, v in public.items() if k in keep and v is not None}


async def test_killed_server_errors_then_restarts(api: Api, fake_llm: FakeLLM) -> None:
    fake_llm.script(tool_call("mcp__local__pid", {}, id="p1"), text("ok"))
    thread = await api.new_thread()
    await api.call("PUT", "config", {"auto_approve": ["mcp__local__pid", "mcp__local__lookup"]}, expect=200)
    events = await _run(api, thread, "pid")
    pid = int(tool_messages(fake_llm)[0])
    os.kill(pid, signal.SIGKILL)
    fake_llm.script(
        tool_call("mcp__local__lookup", {"country": "France"}, id="p2"),
        tool_call("mcp__local__lookup", {"country": "Peru"}, id="p3"),
        text("ok"),
    )
    events = await _run(api, thread, "again", events[-1]["seq"])
    assert events[-1]["status"] == "completed"
    results = {r["id"]: r for r in of_type(events, "tool_result")}
    messages = tool_messages(fake_llm)
    # Either the death was seen before the call (restarted at once) or during it (an error, then a restart).
    if results["p2"]["status"] == "error":
        assert "restart" in messages[-2]
    assert results["p3"]["status"] == "ok" and "Lima" in messages[-1]


async def test_bad_servers_and_bad_arguments(api: Api, fake_llm: FakeLLM, notes_dir: Path) -> None:
    servers = {
        "missing": {"command": "/no/such/program-xyz"},
        "hangs": {"command": sys.executable, "args": [FIXTURE, "--hang"], "start_timeout": 2},
        "local": {
            "command": sys.executable,
            "args": [FIXTURE],
            "env": {"FIXTURE_NOTES": str(notes_dir)},
            "call_timeout": 3,
        },
    }
    await api.call("PUT", "config", {"mcp_servers": servers, "auto_approve": ["mcp__local__huge"]}, expect=200)
    fake_llm.script(
        tool_call("mcp__local__lookup", {"country": 3}, id="b1"),
        tool_call("mcp__missing__anything", {}, id="b2"),
        tool_call("mcp__local__huge", {}, id="b3"),  # 50 MB through stdio: the call time-out bounds it
        text("done"),
    )
    thread = await api.new_thread()
    events = await _run(api, thread, "try")
    assert events[-1]["status"] == "completed"
    first = fake_llm.requests[0]
    context = " ".join(m["content"] for m in first["messages"] if m["role"] == "user")
    assert "'missing' is not available: the command was not found" in context
    assert "'hangs' is not available: did not start within 2 s" in context
    messages = tool_messages(fake_llm)
    assert "Invalid call to mcp__local__lookup" in messages[0] and "country: 3 is not of type 'string'" in messages[0]
    assert "There is no tool named 'mcp__missing__anything'" in messages[1]
    assert "did not answer 'huge' within 3 s" in messages[2]
    _, listed = await api.call("GET", "mcp/servers")
    status = {s["name"]: (s["status"], s["error"]) for s in listed["servers"]}
    assert status["missing"][0] == "failed" and "not found" in status["missing"][1]
    assert status["hangs"] == ("failed", "did not start within 2 s")
    code, data = await api.call("PUT", "config", {"mcp_servers": {"a__b": {"command": "x"}}})
    assert code == 400 and "server name" in data["message"]
    code, data = await api.call("PUT", "config", {"mcp_servers": {"x": {"command": "x", "url": "http://h"}}})
    assert code == 400 and "either" in data["message"]


async def test_hostile_model_and_server(api: Api, fake_llm: FakeLLM, notes_dir: Path) -> None:
    fake_llm.script(
        tool_call("mcp__local__sneaky_write", {"text": "pwned"}, id="h1"),  # annotated read-only: still asks
    )
    thread = await api.new_thread()
    events = await _run(api, thread, "x")
    card = of_type(events, "approval_required")[0]
    assert card["origin"]["read_only_hint"] is True and of_type(events, "tool_call")[0]["needs_approval"] is True
    assert not (notes_dir / "sneaky.txt").exists()
    await api.approve(thread, "h1", "reject", reason="no")
    events = await api.until_finished(thread, events[-1]["seq"])
    fake_llm.script(
        tool_call("mcp__local__../../etc", {}, id="h2"),
        tool_call("mcp__local__lookup/../write_note", {"name": "x", "text": "y"}, id="h3"),
        tool_call("mcp__web__huge", {}, id="h4"),
        tool_call("mcp__web__big", {}, id="h5"),
        text("done"),
    )
    await api.call("PUT", "config", {"auto_approve": ["mcp__web__huge", "mcp__web__big"]}, expect=200)
    events = await _run(api, thread, "y", events[-1]["seq"])
    messages = tool_messages(fake_llm)
    assert "There is no tool named 'mcp__local__../../etc'" in messages[-4] and "There is no tool named" in messages[-3]
    assert "byte limit" in messages[-2] and len(messages[-2]) < 2000  # 50 MB: refused by the SDK's 1 MB event limit
    assert len(messages[-1]) < 20_000 and "characters cut" in messages[-1]  # 300 KB: bounded
    assert not (notes_dir / "x.txt").exists() and not (notes_dir / "sneaky.txt").exists()
    # Ask mode offers no MCP tool: none counts as read-only.
    fake_llm.script(text("fine"))
    await _run(api, thread, "explain", events[-1]["seq"], autonomy="ask")
    assert not any(t["function"]["name"].startswith("mcp__") for t in fake_llm.requests[-1].get("tools", []))


async def test_a_server_disabled_for_a_thread(api: Api, fake_llm: FakeLLM) -> None:
    fake_llm.script(text("one"), text("two"))
    thread = await api.new_thread()
    events = await _run(api, thread, "x", disabled_mcp_servers=["web"])
    names = {t["function"]["name"] for t in fake_llm.requests[-1]["tools"]}
    assert "mcp__local__lookup" in names and not any(n.startswith("mcp__web__") for n in names)
    await _run(api, thread, "y", events[-1]["seq"])  # kept with the thread
    names = {t["function"]["name"] for t in fake_llm.requests[-1]["tools"]}
    assert not any(n.startswith("mcp__web__") for n in names)
