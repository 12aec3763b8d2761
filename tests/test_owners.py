"""Threads belong to the user a server runs for (JUPYTERHUB_USER, else the OS user): servers of
several users on one real PostgreSQL, each seeing only its owner's threads on every thread route;
threads stored before owners existed; `%agent` in a user's kernel; the NOTIFY channel; and the
connections one server holds. Skipped, with the reason, where PostgreSQL is not installed."""

from __future__ import annotations

import asyncio
import re
import sqlite3
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from agent_core.contract.routes import ROUTES, Route
from agent_core.storage import postgres_database
from agent_core.storage.thread_store import ThreadStore
from devtools.fake_llm import FakeLLM, text, tool_call
from devtools.jupyter_process import TOKEN, JupyterProcess
from tests.test_magic import Kernel, llm, magic_env, magic_kernel, places  # noqa: F401 (the magic's fixtures)
from tests.test_postgres_servers import follow, postgres_server_env, start

pytestmark = pytest.mark.postgres
DEPLOYING = Path(__file__).resolve().parent.parent / "docs" / "deploying" / "index.md"  # "Deploying for a team"
PENDING_CALL = "call_alice"  # the call alice's thread waits to have approved
BOBS_POOL = 3  # bob's server's database_pool_size (the others keep the default, 2)


@dataclass
class Team:
    alice: JupyterProcess
    alice_again: JupyterProcess  # alice's second server (another node, another session)
    bob: JupyterProcess
    url: str


@pytest.fixture(scope="module")
def team(
    tmp_path_factory: pytest.TempPathFactory, llm: FakeLLM, module_postgres_url: str, module_servers: list[Any]
) -> Team:  # noqa: F811
    base = tmp_path_factory.mktemp("owners")

    def server(name: str, user: str, **extra: str) -> JupyterProcess:
        env = postgres_server_env(llm, module_postgres_url, JUPYTERHUB_USER=user, **extra)
        return start(base, name, env, module_servers)

    with ThreadPoolExecutor(3) as starting:  # each takes seconds to start, mostly waiting
        alice = starting.submit(server, "alice", "alice")
        alice_again = starting.submit(server, "alice-again", "alice")
        bob = starting.submit(server, "bob", "bob", CELLWRIGHT_DATABASE_POOL_SIZE=str(BOBS_POOL))
    return Team(alice.result(), alice_again.result(), bob.result(), module_postgres_url)


@pytest.fixture(scope="module")
def alices_thread(team: Team, llm: FakeLLM) -> str:  # noqa: F811
    """A thread of alice's, with events, waiting for her approval of a cell."""
    llm.script(tool_call("run_cell", {"code": "x = 1"}, id=PENDING_CALL))
    thread = new_thread(team.alice)
    assert team.alice.request("POST", f"cellwright/api/threads/{thread}/runs", {"message": "go"}).status_code == 202
    assert team.alice.events(thread)[-1]["status"] == "awaiting_approval"
    return thread


def new_thread(server: JupyterProcess) -> str:
    response = server.request("POST", "cellwright/api/threads", {"notebook_path": "work.ipynb"})
    assert response.status_code == 201, response.text
    return str(response.json()["thread_id"])


def listed(server: JupyterProcess) -> list[str]:
    return [t["thread_id"] for t in server.get("cellwright/api/threads").json()["threads"]]


# A valid body for each route body model: a route is refused for its thread, not for its body. A new
# route with a body fails here until its body is added.
VALID_BODIES: dict[str, dict[str, Any]] = {
    "StartRun": {"message": "hi"},
    "Decision": {"decision": "approve"},
    "RewindRequest": {"to": PENDING_CALL},
    "ForkRequest": {"from": PENDING_CALL},
    "StepAsCell": {},
}


def thread_routes() -> list[Route]:
    """Every route of the contract that names a thread, the delete last (it would end the others)."""
    found = [route for route in ROUTES if "{thread_id}" in route.path]
    return sorted(found, key=lambda route: route.method == "delete")


def ask(server: JupyterProcess, route: Route, thread_id: str) -> tuple[int, Any]:
    body = None
    if route.body is not None:
        assert route.body.__name__ in VALID_BODIES, f"add a valid {route.body.__name__} to VALID_BODIES"
        body = VALID_BODIES[route.body.__name__]
    path = route.path.format(thread_id=thread_id, tool_call_id=PENDING_CALL, branch="b" * 32)
    response = server.request(route.method.upper(), f"cellwright/api/{path}", body, timeout=30)
    is_json = "json" in response.headers.get("Content-Type", "")
    return response.status_code, response.json() if is_json else response.text[:200]


def test_another_owners_thread_is_not_found_on_every_thread_route(team: Team, alices_thread: str) -> None:
    bobs = new_thread(team.bob)
    assert alices_thread not in listed(team.bob) and bobs in listed(team.bob)
    assert bobs not in listed(team.alice)
    before = team.alice.events(alices_thread)
    routes = thread_routes()
    assert {"threads/{thread_id}/events", "threads/{thread_id}/approvals/{tool_call_id}"} <= {r.path for r in routes}
    for route in routes:
        nobodys = uuid.uuid4().hex
        answer = ask(team.bob, route, alices_thread)
        # The same answer as for a thread that does not exist: nothing says alice's exists.
        assert answer[0] == 404 and answer[1]["error"] == "thread_not_found", (route.method, route.path, answer)
        assert str(answer).replace(alices_thread, nobodys) == str(ask(team.bob, route, nobodys)), route.path
    # Nothing bob asked changed alice's thread: still hers, waiting for her approval, no new event.
    detail = team.alice.get(f"cellwright/api/threads/{alices_thread}").json()
    assert detail["pending_approval"]["id"] == PENDING_CALL
    assert team.alice.events(alices_thread) == before


def test_the_owners_other_server_sees_and_follows_her_threads(team: Team, alices_thread: str, llm: FakeLLM) -> None:  # noqa: F811
    bobs = new_thread(team.bob)
    # alice's two servers show the same threads: hers, and only hers.
    assert alices_thread in listed(team.alice_again) and bobs not in listed(team.alice_again)
    assert listed(team.alice_again) == listed(team.alice)
    assert team.alice_again.events(alices_thread) == team.alice.events(alices_thread)
    pending = team.alice_again.get(f"cellwright/api/threads/{alices_thread}").json()["pending_approval"]
    assert pending["id"] == PENDING_CALL

    # A run on one of alice's servers, followed live on the other.
    llm.script(text([f" word{i}" for i in range(30)], chunk_delay=0.02))
    thread = new_thread(team.alice)
    assert team.alice.request("POST", f"cellwright/api/threads/{thread}/runs", {"message": "talk"}).status_code == 202
    seen: list[dict[str, Any]] = []
    reader = follow(team.alice_again, thread, seen, {})
    reader.join(60)
    assert not reader.is_alive() and seen[-1]["type"] == "run_finished"
    assert seen == team.alice.events(thread)


def test_a_users_magic_thread_is_theirs(
    team: Team,
    llm: FakeLLM,
    places: dict[str, Path],  # noqa: F811
) -> None:
    """`%agent` in a kernel of alice's (JUPYTERHUB_USER=alice, as the hub starts it) on the shared database."""
    env = magic_env(llm, places, JUPYTERHUB_USER="alice", CELLWRIGHT_DATABASE_URL=team.url)
    kernel = magic_kernel(env, places["work"])
    try:
        llm.script(text("Hello from the kernel."))
        assert "Hello from the kernel." in kernel.run("%agent --new hello").stdout
    finally:
        kernel.stop()
    titles = {t["title"]: t["thread_id"] for t in team.alice.get("cellwright/api/threads").json()["threads"]}
    assert "%agent: hello" in titles
    assert titles["%agent: hello"] not in listed(team.bob)
    with psycopg.connect(team.url) as conn:
        owner = conn.execute("SELECT owner FROM cellwright.threads WHERE thread_id = %s", (titles["%agent: hello"],))
        assert owner.fetchone() == ("alice",)


def connections(url: str, owner: str) -> Counter[str]:
    """The connections `owner`'s servers hold, by pool ("threads", "checkpoints", "listen")."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT application_name FROM pg_stat_activity WHERE datname = current_database()"
            " AND application_name LIKE %s",
            (f"cellwright % {owner}",),
        ).fetchall()
    return Counter(name.split()[1] for (name,) in rows)


def test_a_server_holds_at_most_two_pools_and_one_listener(team: Team, llm: FakeLLM) -> None:  # noqa: F811
    """The arithmetic of the docs' "Deploying for a team": per server, database_pool_size connections
    for threads and events, one for the agent's checkpoints (LangGraph's saver uses one at a time)
    and one LISTEN connection. Under load each pool fills to its size and no further."""
    llm.script(text("ready"))
    thread = new_thread(team.bob)
    assert team.bob.request("POST", f"cellwright/api/threads/{thread}/runs", {"message": "hi"}).status_code == 202
    assert team.bob.events(thread)[-1]["status"] == "completed"

    stop = threading.Event()

    def load() -> None:  # thread details read both pools: the record, then the checkpoint
        with httpx.Client(headers={"Authorization": "token cellwright-test-token"}, timeout=30) as client:
            while not stop.is_set():
                client.get(f"{team.bob.url}/cellwright/api/threads/{thread}")

    workers = [threading.Thread(target=load, daemon=True) for _ in range(12)]
    for worker in workers:
        worker.start()
    most: Counter[str] = Counter()
    full = {"threads": BOBS_POOL, "checkpoints": 1, "listen": 1}
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and most != full:
            now = connections(team.url, "bob")
            assert now["listen"] == 1, now  # exactly one listener, all along
            most = most | now
            assert set(most) <= set(full) and all(most[pool] <= full[pool] for pool in full), most
    finally:
        stop.set()
        for worker in workers:
            worker.join(30)
    assert most == full, f"the pools did not fill under load: {most}"
    assert sum(most.values()) == BOBS_POOL + 2


# -- below the servers: the store and its database


async def test_another_owners_writes_never_wake_this_owners_readers(postgres_url: str, tmp_path: Path) -> None:
    """Notifications go on a channel per owner: bob's server is never told of alice's threads (only
    his own servers' writes wake his readers)."""
    alice, alice_again = (ThreadStore(tmp_path / "unused", owner="alice", database_url=postgres_url) for _ in range(2))
    bob, bob_again = (ThreadStore(tmp_path / "unused", owner="bob", database_url=postgres_url) for _ in range(2))
    told: list[str | None] = []
    bob.events.notified = told.append  # type: ignore[method-assign]  # what bob's listener passes on
    alice_told: list[str | None] = []
    alice_again.events.notified = alice_told.append  # type: ignore[method-assign]
    stores = (alice, alice_again, bob, bob_again)
    for store in stores:
        await store.open()
    try:
        # Each owner has a second server listening, so both notify (alone, a server sends none).
        await asyncio.wait_for(_until(lambda: all(s.database.peers_listening for s in (alice, bob_again))), 10)  # type: ignore[attr-defined]
        alices = (await alice.create("a.ipynb", "a")).thread_id
        bobs = (await bob_again.create("b.ipynb", "b")).thread_id
        await alice.events.append(alices, {"type": "token", "text": "secret"})
        await bob_again.events.append(bobs, {"type": "token", "text": "mine"})  # committed after alice's
        await asyncio.wait_for(_until(lambda: bobs in told and alices in alice_told), 10)
        # Notifications come in commit order: had alice's reached bob's listener, it would be here.
        assert alices not in told and set(told) <= {bobs, None}
    finally:
        for store in stores:
            await store.close()


async def test_a_server_alone_with_its_owner_sends_no_notifications(
    postgres_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PostgreSQL wakes every listening session of the database at each NOTIFY, whatever its
    channel: a server that is its owner's only listener sends none; another of the owner's servers
    joining is heard at once (its readers are woken), leaving is noticed, and a listener that never
    says hello is found (issue 41)."""
    monkeypatch.setattr(postgres_database, "PEERS_RECHECK", 0.2)
    alices_channel = postgres_database.channel("alice")
    with psycopg.connect(postgres_url, autocommit=True, application_name="an observer") as observer:
        observer.execute(f"LISTEN {alices_channel}")

        async def heard(until: str = "observer:marker") -> list[str]:
            """What the channel carried before `until`; by default up to now (the observer's own marker)."""
            if until == "observer:marker":
                observer.execute("SELECT pg_notify(%s, 'observer:marker')", (alices_channel,))

            def read() -> list[str]:
                notes: list[str] = []
                for note in observer.notifies(timeout=10):
                    if note.payload == until:
                        return notes
                    notes.append(note.payload)
                raise AssertionError(f"{until!r} never came; heard {notes}")

            return await asyncio.to_thread(read)

        alice = ThreadStore(tmp_path / "unused", owner="alice", database_url=postgres_url)
        await alice.open()
        alone = alice.database
        assert isinstance(alone, postgres_database.PostgresDatabase)
        try:
            # The listener looks for its owner's other listeners before it says hello.
            await heard(until=f"{alice.process}:")
            assert not alone.peers_listening
            thread = (await alice.create("a.ipynb", "a")).thread_id
            await alice.events.append(thread, {"type": "token", "text": "one"})
            assert not [note for note in await heard() if thread in note], "alone, alice's server notified"

            again = ThreadStore(tmp_path / "unused", owner="alice", database_url=postgres_url)
            told: list[str | None] = []
            again.events.notified = told.append  # type: ignore[method-assign]
            await again.open()
            try:
                await asyncio.wait_for(_until(lambda: alone.peers_listening), 10)
                await alice.events.append(thread, {"type": "token", "text": "two"})
                await asyncio.wait_for(_until(lambda: thread in told), 10)
            finally:
                await again.close()
            await asyncio.wait_for(_until(lambda: not alone.peers_listening), 10)
            await heard()  # what was sent while both listened
            await alice.events.append(thread, {"type": "token", "text": "three"})
            assert not [note for note in await heard() if thread in note], "alone again, alice's server notified"

            # A listener that never says hello (a server of an earlier release) is found by looking.
            with psycopg.connect(
                postgres_url, autocommit=True, application_name=postgres_database.application_name("listen", "alice")
            ) as older:
                older.execute(f"LISTEN {alices_channel}")
                await asyncio.wait_for(_until(lambda: alone.peers_listening), 10)
                await alice.events.append(thread, {"type": "token", "text": "four"})
                notes = await asyncio.to_thread(lambda: [n.payload for n in older.notifies(timeout=10, stop_after=1)])
                assert notes == [f"{alice.process}:{thread}"]
        finally:
            await alice.close()


async def _until(check: Any) -> None:
    while not check():
        await asyncio.sleep(0.02)


OLD_THREAD = ("old-thread", "from before owners", "old.ipynb", 1.0, 2.0, "completed", "", "")


def assign_command() -> str:
    """The SQL of the docs' one-line command that gives the threads without an owner to alice."""
    found = re.search(
        r"""-c "(UPDATE cellwright\.threads SET owner = 'alice' WHERE owner IS NULL)\"""", DEPLOYING.read_text()
    )
    assert found, "docs/deploying documents the command that assigns threads stored before owners existed"
    return found[1]


async def test_a_thread_from_before_owners_stays_hidden_in_postgres_until_assigned(
    postgres_url: str, tmp_path: Path
) -> None:
    from agent_core.storage import postgres_database

    with psycopg.connect(postgres_url, autocommit=True) as conn:  # the schema of the release before owners
        conn.execute("CREATE SCHEMA cellwright")
        conn.execute("SET search_path TO cellwright")
        for statement in postgres_database.VERSIONS[1]:
            conn.execute(statement)
        conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        conn.execute("INSERT INTO schema_version VALUES (1)")
        conn.execute("INSERT INTO threads VALUES (%s, %s, %s, %s, %s, %s, %s, %s)", OLD_THREAD)
    stores = [ThreadStore(tmp_path / "unused", owner=user, database_url=postgres_url) for user in ("alice", "bob")]
    for store in stores:  # alice's server starts first, and migrates: it must not take the thread
        await store.open()
    try:
        for store in stores:
            assert await store.list() == [] and await store.get(OLD_THREAD[0]) is None
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute(assign_command())
        alice, bob = stores
        assert [r.thread_id for r in await alice.list()] == [OLD_THREAD[0]]
        assert await bob.list() == [] and await bob.get(OLD_THREAD[0]) is None
    finally:
        for store in stores:
            await store.close()


async def test_a_sqlite_file_from_before_owners_is_its_users(tmp_path: Path) -> None:
    from agent_core.storage.database import LEASE_HOLDER, SCHEMA

    path = tmp_path / "threads.sqlite"
    with sqlite3.connect(path) as conn:  # the file as the release before owners left it
        for statement in (*SCHEMA, *LEASE_HOLDER):
            conn.execute(statement)
        conn.execute("INSERT INTO threads VALUES (?, ?, ?, ?, ?, ?, ?, ?)", OLD_THREAD)
    for user, expected in (("alice", [OLD_THREAD[0]]), ("alice", [OLD_THREAD[0]]), ("bob", [])):
        store = ThreadStore(path, owner=user)  # the file's user first (their server), then someone else
        await store.open()
        try:
            assert [r.thread_id for r in await store.list()] == expected, user
        finally:
            await store.close()


async def test_recovery_at_start_touches_only_the_owners_threads(tmp_path: Path, llm: FakeLLM) -> None:  # noqa: F811
    """run_manager.recover re-drives the threads a crash left running: the server's owner's only,
    also when another user's threads share the database (here one file, as a shared PostgreSQL)."""
    from tests.test_run_manager import run_manager  # its threads are the user "tester"'s

    async with run_manager(tmp_path, llm) as manager:
        alice = ThreadStore(manager.threads._path, owner="alice")
        await alice.open()
        try:
            alices = (await alice.create("a.ipynb", "a")).thread_id
            await alice.update(alices, status="running")  # as a crash left it
            mine = (await manager.threads.create("t.ipynb", "t")).thread_id
            await manager.threads.update(mine, status="running")
            runner = await manager.runner()
            recovered: list[str] = []

            async def note(record: Any, *_: Any) -> None:
                recovered.append(record.thread_id)

            runner.recovered = note  # type: ignore[method-assign]
            await manager.recover()
            assert recovered == [mine]
        finally:
            await alice.close()


def test_an_outside_agent_works_in_its_owners_threads_only(team: Team) -> None:
    """The same MCP client on alice's and on bob's server, the same notebook path: two threads, each
    listed by its owner's servers only."""
    from tests.test_mcp_endpoint import connected, text_of

    async def read(server: JupyterProcess) -> None:
        async with connected(f"{server.url}/cellwright/mcp", TOKEN) as session:
            result = await session.call_tool("read_notebook", {"notebook_path": "mcp-owners.ipynb"})
            assert "mcp-owners.ipynb" in text_of(result) or result.is_error  # no such file: said, not crashed

    for server in (team.alice, team.bob):
        asyncio.run(read(server))

    def mcp_threads(server: JupyterProcess) -> list[str]:
        threads = server.get("cellwright/api/threads").json()["threads"]
        return [t["thread_id"] for t in threads if t["title"] == "Claude Code via MCP"]

    alices, bobs = mcp_threads(team.alice), mcp_threads(team.bob)
    assert len(alices) == 1 and len(bobs) == 1 and alices != bobs
    assert mcp_threads(team.alice_again) == alices  # her other server shares hers
    assert team.bob.get(f"cellwright/api/threads/{alices[0]}").status_code == 404
