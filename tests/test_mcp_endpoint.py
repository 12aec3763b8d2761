"""Cellwright's MCP endpoint (cellwright/mcp) driven by the official mcp SDK's client over Streamable
HTTP, against the real server and kernel: an outside agent's risky calls wait for the user's
decision, made through the same approval route the panel uses."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import httpx
import mcp_types as types
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from agent_core.tools import TOOLS
from jupyter_ext.mcp_endpoint import CATALOG, with_notebook_path
from tests.conftest import NOTEBOOK, Api, of_type

T = TypeVar("T")


@pytest.fixture
def cellwright_config(cellwright_config: dict[str, Any]) -> dict[str, Any]:
    return {**cellwright_config, "mcp_clients": {"Reader": {"autonomy": "ask"}}, "mcp_approval_wait": 30.0}


@pytest.fixture
def mcp_url(jp_serverapp: Any, jp_http_port: int, jp_base_url: str) -> str:
    return f"http://localhost:{jp_http_port}{jp_base_url}cellwright/mcp"


@pytest.fixture
def token(jp_serverapp: Any) -> str:
    return str(jp_serverapp.identity_provider.token)


@asynccontextmanager
async def connected(url: str, token: str, client: str = "Claude Code") -> AsyncIterator[ClientSession]:
    async with create_mcp_http_client(headers={"Authorization": f"token {token}"}) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            info = types.Implementation(name=client, version="1.0")
            async with ClientSession(read, write, client_info=info) as session:
                await session.initialize()
                yield session


def text_of(result: Any) -> str:
    return "".join(part.text for part in result.content if isinstance(part, types.TextContent))


async def client_thread(api: Api, title: str) -> str:
    _, threads = await api.call("GET", "threads", expect=200)
    return next(t["thread_id"] for t in threads["threads"] if t["title"] == title)


async def pending_card(api: Api, thread: str, after: int) -> dict[str, Any]:
    """The approval card of the client's next call, as the panel gets it from the stream."""
    events = await api.until_finished(thread, after)
    assert events[-1]["status"] == "awaiting_approval", events
    return {**of_type(events, "approval_required")[-1], "seq": events[-1]["seq"]}


async def test_an_outside_agent_works_in_the_notebook_through_approvals(
    api: Api, mcp_url: str, token: str, notebook_kernel: str
) -> None:
    async with connected(mcp_url, token) as session:
        listed = {tool.name: tool for tool in (await session.list_tools()).tools}
        assert set(CATALOG) <= set(listed)
        assert listed["run_cell"].input_schema == with_notebook_path(TOOLS["run_cell"].parameters)
        assert not {"final_answer", "write_todos", "task"} & set(listed)

        read = await session.call_tool("read_notebook", {"notebook_path": NOTEBOOK})
        assert not read.is_error, text_of(read)
        thread = await client_thread(api, "Claude Code via MCP")  # made by the client's first call
        seen = (await api.events(thread))[-1]["seq"]

        code = "answer = 6 * 7\nprint(answer)"
        call = asyncio.create_task(session.call_tool("run_cell", {"code": code, "notebook_path": NOTEBOOK}))
        card = await pending_card(api, thread, seen)
        assert card["name"] == "run_cell" and card["args"]["code"] == code
        assert not call.done()  # it waits for the user
        code, _ = await api.approve(thread, card["id"])
        assert code == 202
        result = await asyncio.wait_for(call, 60)
        assert not result.is_error and "42" in text_of(result)
        # An agent's next call, sent the moment it reads the answer, finds the thread free.
        again = await session.call_tool("read_notebook", {"notebook_path": NOTEBOOK})
        assert not again.is_error, text_of(again)

        seen = (await api.events(thread))[-1]["seq"]
        call = asyncio.create_task(session.call_tool("run_cell", {"code": "import os", "notebook_path": NOTEBOOK}))
        card = await pending_card(api, thread, seen)
        code, _ = await api.approve(thread, card["id"], "reject", reason="use pathlib instead")
        assert code == 202
        rejected = await asyncio.wait_for(call, 60)
        assert "use pathlib instead" in text_of(rejected)

    events = await api.events(thread)
    started = [e for e in of_type(events, "cell_started") if not e.get("waiting_for_kernel")]
    assert len(started) == 1 and started[0]["provenance"]["model"] == "Claude Code via MCP"
    assert [e["status"] for e in of_type(events, "tool_result") if e["name"] == "run_cell"] == ["ok", "rejected"]
    # The client's cell is undone as our own agent's are: its variable goes.
    await api.call("POST", f"threads/{thread}/undo/{started[0]['id']}", {}, expect=200)
    _, listed = await api.call("POST", "variables", {"notebook_path": NOTEBOOK}, expect=200)
    assert "answer" not in {v["name"] for v in listed["variables"]}


async def test_without_a_token_nothing_runs(api: Api, mcp_url: str) -> None:
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}},
    }
    async with httpx.AsyncClient() as http:
        response = await http.post(
            mcp_url, content=json.dumps(initialize), headers={"Accept": "application/json, text/event-stream"}
        )
    assert response.status_code in (401, 403)
    _, threads = await api.call("GET", "threads", expect=200)
    assert threads["threads"] == []


async def test_an_ask_mode_client_is_offered_and_runs_only_reads(
    api: Api, mcp_url: str, token: str, notebook_kernel: str
) -> None:
    async with connected(mcp_url, token, client="Reader") as session:
        listed = {tool.name for tool in (await session.list_tools()).tools}
        assert "read_notebook" in listed and not {"run_cell", "write_file", "execute_command"} & listed
        forced = await session.call_tool("run_cell", {"code": "x = 1", "notebook_path": NOTEBOOK})
        assert forced.is_error and "Ask mode" in text_of(forced)
    events = await api.events(await client_thread(api, "Reader via MCP"))
    assert not of_type(events, "approval_required") and not of_type(events, "cell_started")


async def test_a_client_cannot_leave_the_root(api: Api, mcp_url: str, token: str) -> None:
    async with connected(mcp_url, token) as session:
        for path in ("../outside.ipynb", "/etc/passwd.ipynb", ".hidden/n.ipynb"):
            result = await session.call_tool("read_notebook", {"notebook_path": path})
            assert result.is_error, path
        missing = await session.call_tool("read_notebook", {})
        assert missing.is_error and "notebook_path" in text_of(missing)
    _, threads = await api.call("GET", "threads", expect=200)
    assert threads["threads"] == []


async def test_the_stdio_bridge_does_the_same_round_trip(
    api: Api, jp_serverapp: Any, jp_http_port: int, jp_base_url: str, token: str, notebook_kernel: str
) -> None:
    from mcp.client.stdio import StdioServerParameters, stdio_client

    url = f"http://localhost:{jp_http_port}{jp_base_url}"
    env = {**os.environ, "JUPYTER_TOKEN": token, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "jupyter_ext.mcp_stdio_bridge", "mcp", "--url", url], env=env
    )
    async with stdio_client(params) as (read, write):
        info = types.Implementation(name="Codex", version="0.1")
        async with ClientSession(read, write, client_info=info) as session:
            await session.initialize()
            assert "run_cell" in {tool.name for tool in (await session.list_tools()).tools}
            read = await session.call_tool("read_notebook", {"notebook_path": NOTEBOOK})
            assert not read.is_error, text_of(read)
            thread = await client_thread(api, "Codex via MCP")  # named for the stdio client, not the bridge
            seen = (await api.events(thread))[-1]["seq"]
            call = asyncio.create_task(
                session.call_tool("run_cell", {"code": "print(2 ** 5)", "notebook_path": NOTEBOOK})
            )
            card = await pending_card(api, thread, seen)
            await api.approve(thread, card["id"])
            result = await asyncio.wait_for(call, 60)
    assert not result.is_error and "32" in text_of(result)


async def test_a_long_decision_answers_still_waiting_then_the_edited_result(
    api: Api, jp_serverapp: Any, mcp_url: str, token: str, notebook_kernel: str
) -> None:
    jp_serverapp.web_app.settings["cellwright"].configuration.mcp_approval_wait = 0.5
    async with connected(mcp_url, token) as session:
        await session.call_tool("read_notebook", {"notebook_path": NOTEBOOK})
        thread = await client_thread(api, "Claude Code via MCP")
        seen = (await api.events(thread))[-1]["seq"]
        first = await session.call_tool("run_cell", {"code": "print('proposed')", "notebook_path": NOTEBOOK})
        assert not first.is_error and "Still waiting" in text_of(first)
        card = await pending_card(api, thread, seen)
        assert card["id"] in text_of(first)  # the id to wait on again
        code, _ = await api.approve(thread, card["id"], "edit", args={"code": "print('edited by the user')"})
        assert code == 202
        outcome = await session.call_tool("wait_for_decision", {"tool_call_id": card["id"]})
        for _ in range(20):  # the wait is 0.5 s: on a loaded machine the cell can outlast one
            if "Still " not in text_of(outcome):
                break
            outcome = await session.call_tool("wait_for_decision", {"tool_call_id": card["id"]})
        assert not outcome.is_error and "edited by the user" in text_of(outcome)
        unknown = await session.call_tool("wait_for_decision", {"tool_call_id": card["id"]})
        assert unknown.is_error  # answered once


@pytest.mark.parametrize("policy", ["schema_only", "redact"])
async def test_the_data_policy_holds_for_an_outside_agent(
    api: Api, mcp_url: str, token: str, jp_serverapp: Any, jp_root_dir: Path, policy: str
) -> None:
    # An MCP client's answers are read by its own model: they leave as the server's policy says.
    (jp_root_dir / "people.csv").write_text("name,email\nAlice,alice.smith@example.com\n")
    jp_serverapp.web_app.settings["cellwright"].configuration.data_policy = policy
    async with connected(mcp_url, token) as session:
        result = await session.call_tool("read_file", {"path": "people.csv", "notebook_path": NOTEBOOK})
    answer = text_of(result)
    assert not result.is_error and "alice.smith@example.com" not in answer, answer
    if policy == "schema_only":
        assert "name" in answer and "email" in answer and "Alice" not in answer, answer  # its header, no row
    else:
        assert "[REDACTED:email]" in answer and "Alice" in answer, answer


async def waiting_cards(api: Api, title: str, count: int) -> dict[str, dict[str, Any]]:
    """The pending cards of `count` threads of one client, as the panel reads them (by thread)."""
    cards: dict[str, dict[str, Any]] = {}
    while len(cards) < count:
        _, listed = await api.call("GET", "threads", expect=200)
        for thread in (t for t in listed["threads"] if t["title"] == title and t["thread_id"] not in cards):
            _, detail = await api.call("GET", f"threads/{thread['thread_id']}", expect=200)
            if detail["pending_approval"] is not None:
                cards[thread["thread_id"]] = detail["pending_approval"]
        if len(cards) < count:
            await asyncio.sleep(0.1)  # polled as the panel's list is: until every card is there
    return cards


async def test_two_sessions_and_parallel_calls_each_wait_for_their_own_card(
    api: Api, mcp_url: str, token: str, notebook_kernel: str
) -> None:
    """Two windows of one agent, and two calls at once in one of them: no call is refused because
    another waits for approval; each gets its card, each is approved and answered."""
    async with connected(mcp_url, token) as first, connected(mcp_url, token) as second:
        codes = {"print('one' * 2)": "oneone", "print('two' * 2)": "twotwo", "print('three' * 2)": "threethree"}
        sessions = [first, second, second]  # the second session makes two calls at once
        calls = [
            asyncio.create_task(session.call_tool("run_cell", {"code": code, "notebook_path": NOTEBOOK}))
            for session, code in zip(sessions, codes, strict=True)
        ]
        cards = await asyncio.wait_for(waiting_cards(api, "Claude Code via MCP", len(codes)), 60)
        assert sorted(card["args"]["code"] for card in cards.values()) == sorted(codes)
        assert not any(call.done() for call in calls)  # all three wait for the user, none refused
        for thread, card in cards.items():
            code, _ = await api.approve(thread, card["id"])
            assert code == 202
        results = await asyncio.wait_for(asyncio.gather(*calls), 60)
    for result, expected in zip(results, codes.values(), strict=True):
        assert not result.is_error and expected in text_of(result), text_of(result)


async def within(awaitable: Awaitable[T], what: str, seconds: float = 10) -> T:
    """`awaitable`'s result; the test fails naming `what` if it takes over `seconds`."""
    try:
        return await asyncio.wait_for(awaitable, seconds)
    except asyncio.TimeoutError:
        pytest.fail(f"no {what} within {seconds} s")


class _Logged(logging.Handler):
    """Sets `seen` when the server logs a message containing `text`."""

    def __init__(self, text: str) -> None:
        super().__init__(logging.DEBUG)
        self.text = text
        self.seen = asyncio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if self.text in record.getMessage():
            self.seen.set()


@pytest.mark.postgres
@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
async def test_a_call_is_answered_before_its_run_has_saved_and_the_next_call_waits_for_that_end(
    api: Api, jp_serverapp: Any, mcp_url: str, token: str, database_url: str, notebook_kernel: str
) -> None:
    """An outside call's answer leaves when its tools node has the result, not after its step's save
    and its run's end; the agent's next call, sent meanwhile, waits for that end in the same thread
    (neither refused as busy nor sent to a new thread). The save is held by a lock on LangGraph's
    checkpoint tables, taken from a connection of the test's own."""
    import psycopg

    async with connected(mcp_url, token, client="Burst") as session:
        first = await session.call_tool("read_notebook", {"notebook_path": NOTEBOOK})
        assert not first.is_error, text_of(first)
        thread = await client_thread(api, "Burst via MCP")
        await api.until_finished(thread)  # that run has saved (it may still have been saving when answered)
        with psycopg.connect(database_url) as saves:  # one transaction: the lock holds until it ends
            saves.execute(
                "LOCK TABLE cellwright.checkpoints, cellwright.checkpoint_blobs, cellwright.checkpoint_writes"
                " IN EXCLUSIVE MODE"
            )
            answered = await within(session.call_tool("read_notebook", {"notebook_path": NOTEBOOK}), "its answer")
            assert not answered.is_error and NOTEBOOK in text_of(answered), text_of(answered)
            _, listed = await api.call("GET", "threads", expect=200)  # the thread store's, not the checkpoints'
            assert [t["status"] for t in listed["threads"]] == ["running"], "its save waits for the lock"
            log = jp_serverapp.web_app.settings["cellwright"].run_manager.log
            waits = _Logged(f"thread {thread} waits for its last run to finish")
            log.addHandler(waits)
            try:
                following = asyncio.create_task(session.call_tool("read_notebook", {"notebook_path": NOTEBOOK}))
                await within(waits.seen.wait(), "the next call waiting for that run in the same thread")
            finally:
                log.removeHandler(waits)
            saves.commit()
        again = await asyncio.wait_for(following, 30)
        assert not again.is_error, text_of(again)
    _, threads = await api.call("GET", "threads", expect=200)
    assert [t["title"] for t in threads["threads"]] == ["Burst via MCP"]
    events = await api.until_finished(thread, 0)
    assert [e["status"] for e in of_type(events, "run_finished")] == ["completed"] * 3
    assert [e["type"] for e in events if e["type"] in ("run_started", "run_finished")] == [
        "run_started",
        "run_finished",
    ] * 3
