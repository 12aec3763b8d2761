"""Hosting an outside ACP agent in a thread (jupyter_ext.acp_host), through the real server: the agent
is a process speaking ACP over stdio, written with the official SDK (tests/acp/sdk_agent.py): its
permission requests and file writes are our approval cards, and what a hostile one does is contained."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from agent_core.storage.thread_store import ThreadStore
from tests.conftest import NOTEBOOK, Api, of_type
from tests.test_mcp_endpoint import connected

ROOT = str(Path(__file__).resolve().parent.parent)
AGENT = {"command": sys.executable, "args": ["-m", "tests.acp.sdk_agent"], "env": {"PYTHONPATH": ROOT}}
AGENT_ENV = ("PYTHONPATH", "SDK_AGENT_REPORT", "SDK_AGENT_STATE")  # the sdk agent's, as the fixture gives them


@pytest.fixture
def cellwright_config(cellwright_config: dict[str, Any], tmp_path: Path) -> dict[str, Any]:
    missing = {"command": "codex-acp-not-installed-here"}
    (tmp_path / "agent-state").mkdir()
    env = {
        **AGENT["env"],
        "SDK_AGENT_REPORT": str(tmp_path / "mcp.json"),
        "SDK_AGENT_STATE": str(tmp_path / "agent-state"),
    }
    sdk = {**AGENT, "env": env}
    loads = {**AGENT, "env": {**env, "SDK_AGENT_LOAD": "1"}}  # advertises loadSession
    # a hung agent is given up on after 3 s here (the default is minutes)
    return {
        **cellwright_config,
        "acp_agents": {"sdk": sdk, "sdk-load": loads, "Codex": missing},
        "command_timeout": 2.0,
        "acp_idle_timeout": 3.0,
    }


@pytest.fixture
def hosted(jp_serverapp: Any) -> Any:
    return jp_serverapp.web_app.settings["cellwright"]


async def agent_thread(api: Api, agent: str = "sdk") -> str:
    _, thread = await api.call("POST", "threads", {"notebook_path": "", "agent": agent}, expect=201)
    assert thread["agent"] == agent
    return str(thread["thread_id"])


async def ask(api: Api, thread: str, message: str, after: int = 0) -> list[dict[str, Any]]:
    """Send a message; the run's events up to the end of its segment: its first card (a segment that
    pauses for approval ends with run_finished "awaiting_approval", which may come in a later batch
    than the card: the next `until(..., ("run_finished",))` must not stop at it) or the run's end."""
    await api.call("POST", f"threads/{thread}/runs", {"message": message, "notebook_path": ""}, expect=202)
    return await until(api, thread, after, ("run_finished",))


async def until(api: Api, thread: str, after: int, kinds: tuple[str, ...]) -> list[dict[str, Any]]:
    collected: list[dict[str, Any]] = []
    while not any(e["type"] in kinds for e in collected):
        batch = await api.events(thread, after)  # open while the run is active
        collected += batch
        after = collected[-1]["seq"] if collected else after
    return collected


def answer(events: list[dict[str, Any]]) -> str:
    return "".join(e["text"] for e in of_type(events, "token"))


async def test_agents_are_listed_and_a_thread_names_its_agent(api: Api, hosted: Any) -> None:
    _, listed = await api.call("GET", "agents", expect=200)
    agents = {a["name"]: a for a in listed["agents"]}
    assert listed["agents"][0] == {"name": "cellwright", "kind": "cellwright", "available": True}
    assert agents["sdk"]["available"] and agents["sdk"]["kind"] == "acp"
    assert not agents["Codex"]["available"] and "not found" in agents["Codex"]["reason"]
    assert "PYTHONPATH" not in str(listed)  # an agent's env never leaves the server
    code, _ = await api.call("POST", "threads", {"agent": "nobody"})
    assert code == 400
    thread = await agent_thread(api)
    _, detail = await api.call("GET", f"threads/{thread}", expect=200)
    assert detail["agent"] == "sdk"
    _, threads = await api.call("GET", "threads", expect=200)
    assert threads["threads"][0]["agent"] == "sdk"
    events = await ask(api, thread, "hello there")
    assert answer(events) == "echo: hello there" and events[-1]["status"] == "completed"
    _, detail = await api.call("GET", f"threads/{thread}", expect=200)
    assert [(m["role"], m["content"]) for m in detail["messages"]] == [
        ("user", "hello there"),
        ("assistant", "echo: hello there"),
    ]
    assert events[0]["type"] == "run_started" and events[0]["agent"] == "sdk"
    # A reconnect replays the outside agent's thread as our own: every event after the last seen, once.
    replayed = await api.events(thread, headers={"Last-Event-ID": str(events[1]["seq"])})
    assert [e["seq"] for e in replayed] == [e["seq"] for e in events[2:]]


async def test_a_write_waits_for_both_cards_and_a_rejection_leaves_nothing(
    api: Api, hosted: Any, jp_root_dir: Path
) -> None:
    thread = await agent_thread(api)
    events = await ask(api, thread, "write notes.txt hello from the agent")
    assert of_type(events, "todos")[-1]["todos"] == [{"content": "write the file", "status": "in_progress"}]
    permission = of_type(events, "approval_required")[-1]
    assert permission["description"] == "Write notes.txt" and permission["args"]["options"] == ["Allow", "Reject"]
    _, detail = await api.call("GET", f"threads/{thread}", expect=200)
    assert detail["pending_approval"]["id"] == permission["id"] and detail["status"] == "awaiting_approval"
    assert not (jp_root_dir / "notes.txt").exists()
    code, _ = await api.approve(thread, "acp_perm_not_this_one")
    assert code == 409
    # The turn holds the thread's lease, its cards included, as our own runs do: a kernel's %agent on the
    # same database (a second store of the owner) cannot take the thread meanwhile.
    kernel = ThreadStore(hosted.threads._path, owner=hosted.threads.owner, holder="a %agent call in kernel 1234")
    await kernel.open()
    assert not await kernel.take_lease(thread)
    await api.approve(thread, permission["id"])
    events = await until(api, thread, events[-1]["seq"], ("approval_required",))
    write = of_type(events, "approval_required")[-1]
    assert write["name"] == "write_file" and "+hello from the agent" in write["diff"]
    assert not (jp_root_dir / "notes.txt").exists()  # approved to ask, not yet to write
    await api.approve(thread, write["id"])
    events = await until(api, thread, events[-1]["seq"], ("run_finished",))
    assert (jp_root_dir / "notes.txt").read_text() == "hello from the agent"
    assert "write: written" in answer(events) and events[-1]["status"] == "completed"
    try:  # released at the end of the turn; and a thread the kernel holds refuses the agent's next message
        assert await kernel.take_lease(thread)
        code, error = await api.call("POST", f"threads/{thread}/runs", {"message": "write x.txt no"})
        assert (code, error["error"]) == (409, "run_active") and "kernel 1234" in error["message"]
        await kernel.release_lease(thread)
    finally:
        await kernel.close()

    events = await ask(api, thread, "write other.txt never", events[-1]["seq"])
    card = of_type(events, "approval_required")[-1]
    await api.approve(thread, card["id"], "reject", reason="not now")
    events = await until(api, thread, events[-1]["seq"], ("run_finished",))
    assert "permission: no" in answer(events) and not (jp_root_dir / "other.txt").exists()

    # Undone as our own steps are, also after the server's restart (the copy from before the write is kept
    # in the data folder): the file the write made goes; the permission card has nothing to undo.
    await hosted.acp_host.shutdown()  # as CellwrightApp.stop_extension; the next server's host is new
    hosted.acp_host = None
    code, _ = await api.call("POST", f"threads/{thread}/undo/{permission['id']}", {})
    assert code == 409
    _, undone = await api.call("POST", f"threads/{thread}/undo/{write['id']}", {}, expect=200)
    assert undone["removed"] == ["notes.txt"] and not (jp_root_dir / "notes.txt").exists()
    assert of_type(await api.events(thread, events[-1]["seq"]), "step_undone")[0]["id"] == write["id"]
    code, _ = await api.call("POST", f"threads/{thread}/undo/{write['id']}", {})  # once
    assert code == 409


async def test_a_hostile_agent_is_contained(api: Api, hosted: Any, jp_root_dir: Path) -> None:
    thread = await agent_thread(api)
    seq = 0
    for path in ("../outside.txt", ".hidden", "/etc/cellwright-test"):
        events = await ask(api, thread, f"write {path} pwned", seq)
        await api.approve(thread, of_type(events, "approval_required")[-1]["id"])  # the agent's own permission
        events = await until(api, thread, events[-1]["seq"], ("run_finished",))
        assert "refused" in answer(events) and not of_type(events, "approval_required"), path  # no write card
        seq = events[-1]["seq"]
    assert not (jp_root_dir.parent / "outside.txt").exists() and not (jp_root_dir / ".hidden").exists()
    events = await ask(api, thread, "read .hidden", seq)
    assert "read refused" in answer(events)

    events = await ask(api, thread, "flood", events[-1]["seq"])  # 1.2 MB in 2000 chunks: bounded, stored coalesced
    assert events[-1]["status"] == "completed" and len(answer(events)) <= 1_000_000
    assert (
        len(of_type(events, "tool_call")) < 5000 and "more than 5000 updates" in of_type(events, "error")[0]["message"]
    )
    code, _ = await api.call("GET", "health")
    assert code == 200

    events = await ask(api, thread, "spam", events[-1]["seq"])  # 1000 requests: one card at a time
    assert len(of_type(events, "approval_required")) == 1
    await api.call("POST", f"threads/{thread}/cancel", {}, expect=202)
    events = await until(api, thread, events[-1]["seq"], ("run_finished",))
    assert events[-1]["status"] == "cancelled" and not of_type(events, "approval_required")

    for message, why in (("hang", "sent nothing"), ("die", "exited"), ("garbage", "")):
        events = await ask(api, thread, message, events[-1]["seq"])
        if why:
            assert events[-1]["status"] == "failed" and why in of_type(events, "error")[-1]["message"], events
        if message != "hang":  # a new process after the last one was stopped: the thread says so
            assert "started afresh" in of_type(events, "error")[0]["message"]
    assert events[-1]["status"] == "completed" and answer(events) == "still here"  # lines not JSON-RPC: skipped
    # After all that, the next message starts the agent afresh and is answered.
    events = await ask(api, thread, "still alive?", events[-1]["seq"])
    assert answer(events) == "echo: still alive?"


async def test_a_terminal_command_asks_and_runs_with_our_timeout(api: Api, hosted: Any, jp_root_dir: Path) -> None:
    thread = await agent_thread(api)
    events = await ask(api, thread, "run echo out; echo err >&2")
    card = of_type(events, "approval_required")[-1]
    assert card["name"] == "execute_command" and card["command"] == "bash -c 'echo out; echo err >&2'"
    await api.approve(thread, card["id"])
    events = await until(api, thread, events[-1]["seq"], ("run_finished",))
    assert "output: out\nerr exit: 0" in answer(events)

    events = await ask(api, thread, "run sleep 60", events[-1]["seq"])
    await api.approve(thread, of_type(events, "approval_required")[-1]["id"])
    events = await until(api, thread, events[-1]["seq"], ("run_finished",))
    assert "exit: None SIGKILL" in answer(events)  # stopped by c.Cellwright.command_timeout (2 s here)

    events = await ask(api, thread, "run touch made.txt", events[-1]["seq"])
    await api.approve(thread, of_type(events, "approval_required")[-1]["id"], "reject", reason="no files")
    events = await until(api, thread, events[-1]["seq"], ("run_finished",))
    assert "terminal refused" in answer(events) and "no files" in answer(events)
    assert not (jp_root_dir / "made.txt").exists()


async def test_the_agent_gets_our_mcp_endpoint_and_its_cell_waits_for_approval(
    api: Api,
    hosted: Any,
    notebook_kernel: str,
    jp_fetch: Any,
    jp_serverapp: Any,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The server's own secrets in its environment (as `JUPYTER_TOKEN=... jupyter lab`, or a hub's spawner sets them)
    monkeypatch.setenv("JUPYTER_TOKEN", str(jp_serverapp.identity_provider.token))
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", "hub-token-of-this-user")
    hosted.configuration.acp_idle_timeout = 1.0  # silent while its MCP call waits for the user: not hung
    thread = await agent_thread(api)
    call = json.dumps({"code": "print(6 * 7)", "notebook_path": NOTEBOOK})
    await api.call("POST", f"threads/{thread}/runs", {"message": f"mcp run_cell {call}"}, expect=202)
    mcp_thread, card = None, None
    while card is None:  # the MCP call's card, on the thread of the agent's MCP client
        _, listed = await api.call("GET", "threads", expect=200)
        mcp_thread = next((t["thread_id"] for t in listed["threads"] if t["title"] == "SDK agent via MCP"), None)
        if mcp_thread is not None:
            _, detail = await api.call("GET", f"threads/{mcp_thread}", expect=200)
            card = detail["pending_approval"]
        if card is None:
            await asyncio.sleep(0.1)  # polled as the panel's list of waiting threads is
    assert card["name"] == "run_cell" and card["args"]["code"] == "print(6 * 7)"
    await asyncio.sleep(1.5)  # the user takes longer than the idle time-out to decide: nothing must end
    await api.approve(str(mcp_thread), card["id"])
    events = await until(api, thread, 0, ("run_finished",))
    assert "mcp cellwright ok" in answer(events) and "42" in answer(events)
    cells = [e for e in of_type(await api.events(str(mcp_thread)), "cell_started") if not e.get("waiting_for_kernel")]
    assert len(cells) == 1  # in the notebook once

    # What the agent was given for our endpoint (as a hostile one would log it): a token for that
    # endpoint alone, never the Jupyter server's own.
    events = await ask(api, thread, "mcpconfig", events[-1]["seq"])
    given = (tmp_path / "mcp.json").read_text()
    server_token = str(jp_serverapp.identity_provider.token)
    assert server_token and server_token not in given  # not in its MCP configuration, nor in its environment
    assert "JUPYTERHUB_API_TOKEN" not in json.loads(given)["env"]
    header = json.loads(given)["servers"][0]["headers"][0]
    token = header["value"].removeprefix("Bearer ")
    assert header["name"] == "Authorization" and token.startswith("cwmcp_")
    scoped = {"Authorization": f"Bearer {token}"}
    async with connected(json.loads(given)["servers"][0]["url"], token) as session:  # the mcp SDK's client, in by it
        assert "run_cell" in {tool.name for tool in (await session.list_tools()).tools}
    for route in (("api", "contents"), ("api", "kernels"), ("cellwright", "api", "threads")):
        assert (await jp_fetch(*route, headers=scoped, raise_error=False)).code == 403, route
    seen = [await api.call("GET", f"threads/{t}") for t in (thread, str(mcp_thread))]
    seen += [await api.events(t) for t in (thread, str(mcp_thread))]
    assert token not in json.dumps(seen) and token not in caplog.text  # in no answer, event, stored thread or log
    assert await mcp_status(jp_fetch, scoped) == 200
    # Revoked with the agent's process (here: the thread deleted); a token never minted is refused too.
    await api.call("DELETE", f"threads/{thread}", expect=204)
    assert await mcp_status(jp_fetch, scoped) == 403
    assert await mcp_status(jp_fetch, {"Authorization": "Bearer cwmcp_" + "x" * 43}) == 403
    assert len(hosted.acp_host.tokens) == 0


async def mcp_status(jp_fetch: Any, headers: dict[str, str]) -> int:
    """The status of an MCP initialize request to cellwright/mcp with `headers`."""
    hello = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "probe", "version": "1"},
        },
    }
    accept = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    response = await jp_fetch(
        "cellwright", "mcp", method="POST", body=json.dumps(hello), headers={**headers, **accept}, raise_error=False
    )
    return int(response.code)


def test_a_scoped_token_is_read_from_its_header_only_and_ends_with_its_process() -> None:
    from jupyter_ext.mcp_tokens import McpTokens, presented

    tokens, alive = McpTokens(), [True]
    token = tokens.mint("alice", lambda: alive[0])
    assert presented(f"Bearer {token}") == token == presented(f"token {token}")
    assert presented("token the-jupyter-token") is None and presented(f"Basic {token}") is None
    assert tokens.owner_of(token) == "alice" and tokens.owner_of(token + "x") is None
    alive[0] = False  # the process died between turns, before anything closed it
    assert tokens.owner_of(token) is None and len(tokens) == 0


async def test_another_owners_hosted_thread_is_not_found(api: Api, hosted: Any) -> None:
    """Another user's hosted thread, with a card waiting, on the same database (their server's store,
    as tests/test_as_cell_routes.py makes one): as one that does not exist, on every route it has."""
    from agent_core.contract import make_event

    other = ThreadStore(hosted.threads._path, owner="someone-else")
    await other.open()
    try:
        theirs = (await other.create("", "theirs", agent="sdk")).thread_id
        card = make_event("approval_required", id="acp_perm_theirs", name="edit", args={}, description="Write x")
        await other.events.append(theirs, {**card, "run_id": "r"})
        await other.update(theirs, status="awaiting_approval")
    finally:
        await other.close()
    nobodys = "0" * 32
    for method, path, body in (
        ("GET", "threads/{}", None),
        ("GET", "threads/{}/events", None),
        ("POST", "threads/{}/approvals/acp_perm_theirs", {"decision": "approve"}),
        ("POST", "threads/{}/runs", {"message": "hello"}),
        ("POST", "threads/{}/cancel", {}),
        ("POST", "threads/{}/undo/acp_perm_theirs", {}),
        ("DELETE", "threads/{}", None),
    ):
        code, error = await api.call(method, path.format(theirs), body)
        _, nobody = await api.call(method, path.format(nobodys), body)
        assert (code, error["error"]) == (404, "thread_not_found"), (method, path, error)
        assert error["message"].replace(theirs, nobodys) == nobody["message"], path
    host = getattr(hosted, "acp_host", None)
    assert host is None or host.pending(theirs) is None and not host.is_running(theirs)  # no agent started for it


async def test_after_a_restart_an_agent_that_can_load_its_session_remembers(api: Api, hosted: Any) -> None:
    threads = [await agent_thread(api, "sdk-load"), await agent_thread(api)]
    remembers = threads[0]
    # The two threads' agents start side by side: each start is seconds of the acp SDK's import.
    said = await asyncio.gather(*(ask(api, thread, "remember the blue door") for thread in threads))
    assert [answer(events) for events in said] == ["noted", "noted"]
    # The server's stop ends every agent process (CellwrightApp.stop_extension); the next server's host is new.
    await hosted.acp_host.shutdown()
    hosted.acp_host = None
    remembered, forgot = await asyncio.gather(
        *(ask(api, t, "recall", e[-1]["seq"]) for t, e in zip(threads, said, strict=True))
    )
    assert answer(remembered) == "I remember: the blue door" and not of_type(remembered, "error")  # session/load
    assert "replayed" not in answer(await api.events(remembers))  # its replay of the conversation is not shown twice
    assert answer(forgot) == "I remember: nothing"  # no loadSession: a new session, and the thread says so
    assert "started afresh" in of_type(forgot, "error")[0]["message"]


async def test_always_allow_holds_for_its_kind_in_its_thread_until_cleared(api: Api, hosted: Any) -> None:
    thread = await agent_thread(api)
    events = await ask(api, thread, "ask execute")
    card = of_type(events, "approval_required")[-1]
    assert card["always"] == "execute" and card["args"]["options"] == ["Allow once", "Always allow", "Reject"]
    code, error = await api.approve(thread, card["id"], "reject", always=True)
    assert (code, error["error"]) == (400, "bad_decision")
    await api.approve(thread, card["id"], always=True)
    events = await until(api, thread, events[-1]["seq"], ("run_finished",))
    assert answer(events) == "permission: always"  # the agent's own allow_always option
    assert "always allowed for execute" in of_type(events, "tool_result")[-1]["summary"]

    events = await ask(api, thread, "ask execute", events[-1]["seq"])  # the same kind: unasked, and said
    assert answer(events) == "permission: always" and not of_type(events, "approval_required")
    assert "allowed unasked" in of_type(events, "tool_result")[-1]["summary"]
    # A server restart (a new host and store, reading the data folder): "always" holds, as the card said.
    await hosted.acp_host.shutdown()
    hosted.acp_host = hosted.acp_always = None
    _, detail = await api.call("GET", f"threads/{thread}", expect=200)
    assert detail["always_allowed"] == ["execute"]  # shown before any agent process started
    events = await ask(api, thread, "ask execute", events[-1]["seq"])
    assert answer(events) == "permission: always" and not of_type(events, "approval_required")
    events = await ask(api, thread, "ask edit", events[-1]["seq"])  # another kind still asks
    await api.approve(thread, of_type(events, "approval_required")[-1]["id"])
    events = await until(api, thread, events[-1]["seq"], ("run_finished",))
    assert answer(events) == "permission: once"

    _, cleared = await api.call("DELETE", f"threads/{thread}/always_allowed", expect=200)
    assert cleared == {"always_allowed": []}
    events = await ask(api, thread, "ask execute", events[-1]["seq"])  # asks again
    card = of_type(events, "approval_required")[-1]
    await api.approve(thread, card["id"], "reject")
    events = await until(api, thread, events[-1]["seq"], ("run_finished",))
    assert answer(events) == "permission: no"
    # Cellwright's own tools are not allowed "always" from a card (auto_approve is their setting).
    ours = await api.new_thread()
    code, error = await api.approve(ours, "call_x", always=True)
    assert (code, error["error"]) == (400, "bad_decision")


def test_always_allow_belongs_to_the_agent_program_it_was_given_to(tmp_path: Path) -> None:
    from agent_core.config.acp_agents import AcpAgentConfig
    from jupyter_ext.acp_always import AlwaysAllowed

    codex = AcpAgentConfig("Codex", "codex-acp", ("-c", "model=a"), {"KEY": "one"})
    AlwaysAllowed(tmp_path / "always.json").add("t1", codex, "execute")
    kept = AlwaysAllowed(tmp_path / "always.json")  # read anew, as after a restart
    assert kept.kinds("t1", codex) == ["execute"] and kept.kinds("t2", codex) == []
    assert kept.kinds("t1", AcpAgentConfig("Codex", "codex-acp", ("-c", "model=a"), {"KEY": "two"})) == ["execute"]
    assert kept.kinds("t1", AcpAgentConfig("Codex", "/bin/sh", ("-c", "model=a"))) == []  # re-pointed: asks again
    assert kept.kinds("t1", AcpAgentConfig("Codex", "codex-acp", ("-c", "model=b"))) == []
    kept.clear("t1")
    assert AlwaysAllowed(tmp_path / "always.json").kinds("t1", codex) == []


async def test_the_settings_form_edits_agents_with_their_secrets_masked(api: Api, hosted: Any) -> None:
    """PUT config's acp_agents, as the settings form sends it: env values come masked and go back masked
    (kept for the same name, command and args); a bad entry is a 400 saying what to write; no response
    ever holds a secret; a stranger changes nothing."""
    from agent_core.config.masked_secrets import MASK

    secret = "acp-secret-value-41"
    answers: list[Any] = []
    _, config = await api.call("GET", "config", expect=200)
    shown = config["acp_agents"]
    assert shown["sdk"] == {"command": AGENT["command"], "args": AGENT["args"], "env": dict.fromkeys(AGENT_ENV, MASK)}
    extra = {"command": sys.executable, "args": ["-m", "tests.acp.sdk_agent"], "env": {"PYTHONPATH": ROOT}}
    code, saved = await api.call("PUT", "config", {"acp_agents": {**shown, "extra": {**extra, "TOKEN": 1}}})
    assert code == 400 and "acp_agents['extra']" in saved["message"]  # an unknown field: nothing changed
    extra["env"]["AGENT_TOKEN"] = secret
    _, saved = await api.call("PUT", "config", {"acp_agents": {**shown, "extra": extra}}, expect=200)
    answers += [config, saved]
    assert saved["acp_agents"]["extra"]["env"] == {"PYTHONPATH": MASK, "AGENT_TOKEN": MASK}
    assert saved["acp_agents"]["sdk"] == shown["sdk"] and saved["sources"]["acp_agents"] == "settings"
    # The masked values were kept, not replaced by the mask: the agent starts (PYTHONPATH) and is listed.
    _, listed = await api.call("GET", "agents", expect=200)
    assert {a["name"]: a["available"] for a in listed["agents"]}["extra"] is True
    events = await ask(api, await agent_thread(api, "extra"), "hello again")
    assert answer(events) == "echo: hello again"
    assert hosted.configuration.acp_agents["sdk"]["env"]["PYTHONPATH"] == ROOT

    refused = [
        ({"renamed": saved["acp_agents"]["extra"]}, "no agent 'renamed' was saved"),
        ({"extra": {**saved["acp_agents"]["extra"], "args": ["-c", "0"]}}, "no longer the program"),
        ({"extra": {**saved["acp_agents"]["extra"], "command": "/bin/sh"}}, "no longer the program"),
        ({"x": {"command": ""}}, "must be the program"),
        ({"x": {"command": "npx @zed-industries/codex-acp"}}, "is one program, not a command line"),
        ({"x": {"command": "age\u0000nt"}}, "must be the program"),
        ({"x": {"command": "npx", "args": "codex"}}, "must be a list of strings"),
        ({"x": {"command": "npx", "env": {"A=B": "v"}}}, "must map variable names"),
        ({"x": {"command": "npx", "env": {"A": "v\u0000"}}}, "must map variable names"),
        ({"cellwright": {"command": "npx"}}, "a name of letters"),
        ({str(n): {"command": "npx"} for n in range(33)}, "at most 32 agents"),
        ("npx", "expected a dict"),
    ]
    for agents, message in refused:
        code, error = await api.call("PUT", "config", {"acp_agents": agents})
        assert code == 400 and message in error["message"], (agents, error)
        answers.append(error)
    renamed = answers[2]["message"]
    assert (
        renamed.startswith("acp_agents['renamed'].env['PYTHONPATH'] is ********") and "type the value again" in renamed
    )
    # Another user (here: a request without this server's token) can neither read nor change them.
    stranger = {"Authorization": "token not-the-servers"}
    for method, body in (("GET", None), ("PUT", {"acp_agents": {}})):
        code, error = await api.call(method, "config", body, headers=stranger)
        assert code == 403, (method, error)
        answers.append(error)
    _, after = await api.call("GET", "config", expect=200)
    assert after["acp_agents"] == saved["acp_agents"]  # nothing refused changed anything
    _, listed = await api.call("GET", "agents", expect=200)
    answers += [after, listed]
    for text in map(json.dumps, answers):
        assert secret not in text and ROOT not in text and "agent-state" not in text
