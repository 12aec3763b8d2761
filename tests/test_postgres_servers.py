"""Two real Jupyter servers on one real PostgreSQL (database_url): threads, approvals, live events,
a kill -9 and a database restart. Skipped, with the reason, where PostgreSQL is not installed."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from devtools.fake_llm import FakeLLM, text, tool_call
from devtools.jupyter_process import JupyterProcess, kill_9, read_until
from devtools.polling import wait_for
from devtools.postgres_cluster import PASSWORD, PostgresCluster
from tests.conftest import of_type
from tests.postgres_fixtures import database_env

pytestmark = pytest.mark.postgres
APPEND_ONCE = "open('runs.txt', 'a').write('ran\\n')"  # the cell whose runs the tests count


def postgres_server_env(llm: FakeLLM, url: str, **extra: str) -> dict[str, str]:
    """A server's environment: the scripted model, the database `url`, and `extra` (an owner...)."""
    return {
        "OPENAI_BASE_URL": llm.base_url,
        "OPENAI_API_KEY": "sk-secret",
        "CELLWRIGHT_MODEL": "fake-model",
        **database_env(url),
        **extra,
    }


@pytest.fixture
def server_env(fake_llm: FakeLLM, postgres_url: str) -> dict[str, str]:
    return postgres_server_env(fake_llm, postgres_url)


def start(tmp_path: Path, name: str, env: dict[str, str], servers: list, root: Path | None = None) -> JupyterProcess:
    """A server with its own config, data and runtime folders; `root` to share another's notebooks."""
    server = JupyterProcess(tmp_path / name, env)
    if root is not None:
        server.root = root
    servers.append(server.start())
    return server


def follow(
    server: JupyterProcess, thread: str, seen: list[dict[str, Any]], arrived: dict[int, float]
) -> threading.Thread:
    """Read the thread's SSE stream on `server` in the background, noting when each event arrived."""

    def note(events: list[dict[str, Any]]) -> bool:
        arrived[events[-1]["seq"]] = time.monotonic()
        return events[-1]["type"] == "run_finished"

    reader = threading.Thread(target=read_until, args=(server, thread, 0, note, seen), daemon=True)
    reader.start()
    return reader


async def test_servers_starting_together_create_the_schema_once(tmp_path: Path, postgres_url: str) -> None:
    import asyncio

    import psycopg

    from agent_core.storage.checkpoint import open_store
    from agent_core.storage.postgres_database import VERSIONS
    from agent_core.storage.thread_store import ThreadStore

    stores = [ThreadStore(tmp_path / "unused.sqlite", owner="alice", database_url=postgres_url) for _ in range(4)]
    await asyncio.gather(*(store.open() for store in stores))
    try:
        agents = await asyncio.gather(
            *(open_store(postgres_url, tmp_path / "unused", store.database) for store in stores[:2])
        )
        for agent in agents:
            await agent.aclose()
        with psycopg.connect(postgres_url) as conn:
            versions = conn.execute("SELECT version FROM cellwright.schema_version ORDER BY version").fetchall()
            assert versions == [(v,) for v in sorted(VERSIONS)]
            tables = {
                row[0]
                for row in conn.execute(
                    "SELECT table_name FROM information_schema.tables WHERE table_schema = 'cellwright'"
                )
            }
        assert {"threads", "events", "leases", "tool_runs", "checkpoints", "model_requests"} <= tables
    finally:
        await asyncio.gather(*(store.close() for store in stores))


def assert_no_password(*servers: JupyterProcess) -> None:
    for server in servers:
        assert PASSWORD not in server.log_path.read_text(errors="replace")


def test_a_thread_of_server_a_is_on_server_b_and_b_streams_its_events_live(
    tmp_path: Path, fake_llm: FakeLLM, server_env: dict[str, str], servers: list
) -> None:
    fake_llm.script(text([f" word{i}" for i in range(80)], chunk_delay=0.05))  # a 4 s answer
    a = start(tmp_path, "a", server_env, servers)
    b = start(tmp_path, "b", server_env, servers)
    thread = a.request("POST", "cellwright/api/threads", {"notebook_path": "work.ipynb"}).json()["thread_id"]
    assert thread in [t["thread_id"] for t in b.get("cellwright/api/threads").json()["threads"]]
    assert b.get("cellwright/api/health").json()["checkpointer"] == "postgres"
    assert PASSWORD not in b.get("cellwright/api/config").text + b.get("cellwright/api/health").text

    assert a.request("POST", f"cellwright/api/threads/{thread}/runs", {"message": "talk"}).status_code == 202
    wait_for(lambda: b.get(f"cellwright/api/threads/{thread}").json()["status"] == "running", "B to see the run")
    seen_a: list[dict[str, Any]] = []
    seen_b: list[dict[str, Any]] = []
    arrived_a: dict[int, float] = {}
    arrived_b: dict[int, float] = {}
    connected = time.monotonic()
    readers = [follow(a, thread, seen_a, arrived_a), follow(b, thread, seen_b, arrived_b)]
    for reader in readers:
        reader.join(60)
    assert not any(reader.is_alive() for reader in readers), "both streams end with the run"
    assert seen_b == seen_a and seen_b[-1]["type"] == "run_finished"
    # The events A stored once both readers were connected: B got each of them while A's run went
    # on (woken by NOTIFY), not at its next 15 s poll.
    live = [seq for seq, at in arrived_a.items() if at > connected + 0.5]
    assert len(live) >= 10, "the answer was still streaming when the readers connected"
    delays = [arrived_b[seq] - arrived_a[seq] for seq in live]
    assert max(delays) < 1.0, f"B's events lagged A's by up to {max(delays):.2f} s"
    assert b.get(f"cellwright/api/threads/{thread}").json()["status"] == "completed"
    assert_no_password(a, b)


def test_an_approval_pending_on_a_runs_once_when_both_servers_approve_it(
    tmp_path: Path, fake_llm: FakeLLM, server_env: dict[str, str], servers: list
) -> None:
    fake_llm.script(
        tool_call("run_cell", {"code": APPEND_ONCE}, id="call_once"), tool_call("final_answer", {"answer": "done"})
    )
    a = start(tmp_path, "a", server_env, servers)
    b = start(tmp_path, "b", server_env, servers, root=a.root)  # one home directory, two servers
    kernel_a = a.open_notebook("work.ipynb")
    kernel_b = b.open_notebook("work.ipynb")
    thread = a.request("POST", "cellwright/api/threads", {"notebook_path": "work.ipynb"}).json()["thread_id"]
    body = {"message": "count", "kernel_id": kernel_a}
    assert a.request("POST", f"cellwright/api/threads/{thread}/runs", body).status_code == 202
    assert a.events(thread)[-1]["status"] == "awaiting_approval"
    assert b.get(f"cellwright/api/threads/{thread}").json()["pending_approval"]["id"] == "call_once"

    # B cannot reach A's kernel: without a kernel of its own it refuses, and the call stays pending.
    refused = b.request("POST", f"cellwright/api/threads/{thread}/approvals/call_once", {"decision": "approve"})
    assert refused.status_code == 409 and refused.json()["error"] == "kernel_elsewhere", refused.text
    assert a.get(f"cellwright/api/threads/{thread}").json()["pending_approval"]["id"] == "call_once"

    # Both approve at once (A in its kernel, B in its own): the call runs once, in one of them.
    answers: dict[str, int] = {}
    approvals = [
        threading.Thread(
            target=lambda s=s, k=k, n=n: answers.__setitem__(
                n,
                s.request(
                    "POST",
                    f"cellwright/api/threads/{thread}/approvals/call_once",
                    {"decision": "approve", "kernel_id": k},
                ).status_code,
            )
        )
        for s, k, n in ((a, kernel_a, "a"), (b, kernel_b, "b"))
    ]
    for approval in approvals:
        approval.start()
    for approval in approvals:
        approval.join(60)
    assert 202 in answers.values() and set(answers.values()) <= {202, 409}, answers
    wait_for(lambda: a.get(f"cellwright/api/threads/{thread}").json()["status"] == "completed", "the run to finish")
    time.sleep(1)  # a second run, if any, would have started by now
    assert (a.root / "runs.txt").read_text() == "ran\n", "the approved cell ran exactly once"
    log = a.events(thread)
    assert len(of_type(log, "cell_started")) == 1 and of_type(log, "cell_started")[0]["kernel_id"] in (
        kernel_a,
        kernel_b,
    )
    assert [e["seq"] for e in log] == list(range(1, len(log) + 1)), "one gap-free log, whoever wrote"
    assert b.events(thread) == log
    assert_no_password(a, b)


def _approved_cell_started(a: JupyterProcess, call_id: str) -> tuple[str, str]:
    """On server `a`: a thread whose run asks for the scripted cell `call_id`, approved, and running
    (it wrote runs.txt). Returns the kernel and the thread."""
    kernel = a.open_notebook("work.ipynb")
    thread = a.request("POST", "cellwright/api/threads", {"notebook_path": "work.ipynb"}).json()["thread_id"]
    assert (
        a.request("POST", f"cellwright/api/threads/{thread}/runs", {"message": "go", "kernel_id": kernel}).status_code
        == 202
    )
    assert a.events(thread)[-1]["status"] == "awaiting_approval"
    approve = {"decision": "approve", "kernel_id": kernel}
    assert a.request("POST", f"cellwright/api/threads/{thread}/approvals/{call_id}", approve).status_code == 202
    wait_for(lambda: (a.root / "runs.txt").exists(), "the cell to start")
    return kernel, thread


def test_kill_9_mid_cell_on_postgres_never_runs_the_call_twice(
    tmp_path: Path, fake_llm: FakeLLM, server_env: dict[str, str], servers: list
) -> None:
    """The ledger is in PostgreSQL: the server that re-drives the thread after a kill -9 finds the
    call started and not finished, and answers it as interrupted instead of running it again."""
    code = f"import os, time\nopen('pid.txt', 'w').write(str(os.getpid()))\n{APPEND_ONCE}\ntime.sleep(60)"
    fake_llm.script(tool_call("run_cell", {"code": code}, id="call_killed"), text("noted"))
    a = start(tmp_path, "a", server_env, servers)
    kernel, thread = _approved_cell_started(a, "call_killed")
    kill_9(a)
    os.kill(int((a.root / "pid.txt").read_text()), signal.SIGKILL)  # the dead server's kernel, orphaned

    b = start(tmp_path, "b", server_env, servers, root=a.root)
    kernel_b = b.open_notebook("work.ipynb")
    # The dead server's lease is still in the database, but its holder has ended (a process of this
    # machine): b takes the thread over at once. The approval is still the thread's last saved state
    # (the step that ran it never finished): approving again re-drives the step, and the ledger
    # in PostgreSQL answers the call as interrupted instead of running it a second time.
    again = {"decision": "approve", "kernel_id": kernel_b}
    answer = b.request("POST", f"cellwright/api/threads/{thread}/approvals/call_killed", again).json()
    assert "run_id" in answer, answer
    wait_for(lambda: b.get(f"cellwright/api/threads/{thread}").json()["status"] != "running", "the re-drive")
    log = b.events(thread)
    result = [e for e in of_type(log, "tool_result") if e["id"] == "call_killed"]
    assert result and "interrupted" in str(result[-1]).lower(), result
    assert (a.root / "runs.txt").read_text() == "ran\n", "not run again"
    assert [e["seq"] for e in log] == list(range(1, len(log) + 1))


def test_a_database_restart_while_idle_needs_no_jupyter_restart(
    tmp_path: Path, fake_llm: FakeLLM, server_env: dict[str, str], servers: list, postgres_server: PostgresCluster
) -> None:
    fake_llm.script(text("before"), text("after"))
    a = start(tmp_path, "a", server_env, servers)
    thread = a.request("POST", "cellwright/api/threads", {"notebook_path": "work.ipynb"}).json()["thread_id"]
    assert a.request("POST", f"cellwright/api/threads/{thread}/runs", {"message": "one"}).status_code == 202
    assert a.events(thread)[-1]["status"] == "completed"

    postgres_server.restart()  # every pooled connection is now dead
    response = a.request("POST", f"cellwright/api/threads/{thread}/runs", {"message": "two"})
    assert response.status_code == 202, response.text
    wait_for(lambda: a.get(f"cellwright/api/threads/{thread}").json()["status"] == "completed", "the second run")
    log = a.events(thread)
    assert len(of_type(log, "run_finished")) == 2 and of_type(log, "run_finished")[-1]["status"] == "completed"
    assert [e["seq"] for e in log] == list(range(1, len(log) + 1))
    assert_no_password(a)


def test_a_run_in_flight_when_the_database_goes_down_stops_cleanly_and_runs_its_call_once(
    tmp_path: Path, fake_llm: FakeLLM, server_env: dict[str, str], servers: list, postgres_server: PostgresCluster
) -> None:
    fake_llm.script(
        tool_call("run_cell", {"code": f"import time\n{APPEND_ONCE}\ntime.sleep(4)"}, id="call_down"), text("noted")
    )
    # The operator's setting: a call gives up on the stopped database after 2 s, not the default 10.
    a = start(tmp_path, "a", {**server_env, "CELLWRIGHT_DATABASE_TIMEOUT": "2"}, servers)
    kernel, thread = _approved_cell_started(a, "call_down")
    postgres_server.pause()
    try:
        wait_for(
            lambda: "stopped: The database postgresql://***@" in a.log_path.read_text(errors="replace"),
            "the run to stop",
        )
        asked = time.monotonic()
        down = a.get(f"cellwright/api/threads/{thread}")
        assert time.monotonic() - asked < 8, "the setting's 2 s, not the default 10"
        assert down.status_code == 503 and down.json()["error"] == "database_unavailable", down.text
    finally:
        postgres_server.resume()
    # Nothing half-written: the approval is still the saved state, the ledger knows the call started.
    detail = a.get(f"cellwright/api/threads/{thread}").json()
    assert detail["pending_approval"]["id"] == "call_down"
    assert (
        a.request(
            "POST", f"cellwright/api/threads/{thread}/approvals/call_down", {"decision": "approve", "kernel_id": kernel}
        ).status_code
        == 202
    )
    wait_for(lambda: a.get(f"cellwright/api/threads/{thread}").json()["status"] == "completed", "the re-driven run")
    log = a.events(thread)
    assert "interrupted" in str([e for e in of_type(log, "tool_result") if e["id"] == "call_down"]).lower()
    assert (a.root / "runs.txt").read_text() == "ran\n", "the call ran once"
    assert [e["seq"] for e in log] == list(range(1, len(log) + 1))
    assert_no_password(a)
