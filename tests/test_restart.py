"""Threads and pending approvals survive a restart of the real Jupyter server."""

from __future__ import annotations

from pathlib import Path

import pytest

from devtools.fake_llm import FakeLLM, tool_call
from devtools.jupyter_process import JupyterProcess
from tests.conftest import of_type
from tests.postgres_fixtures import database_env

pytestmark = pytest.mark.also_postgres  # every store in SQLite, then in PostgreSQL


@pytest.fixture
def server_env(fake_llm: FakeLLM, database_url: str) -> dict[str, str]:
    return {
        "OPENAI_BASE_URL": fake_llm.base_url,
        "OPENAI_API_KEY": "sk-secret",
        "CELLWRIGHT_MODEL": "fake-model",
        **database_env(database_url),
    }


def test_pending_approval_survives_restart(
    tmp_path: Path, fake_llm: FakeLLM, server_env: dict[str, str], servers: list
) -> None:
    fake_llm.script(
        tool_call("run_cell", {"code": "import os\nprint('pid', os.getpid())"}, id="call_after_restart"),
        tool_call("final_answer", {"answer": "ran after the restart"}),
    )
    first = JupyterProcess(tmp_path, server_env).start()
    servers.append(first)
    first.open_notebook("work.ipynb")
    thread = first.request("POST", "cellwright/api/threads", {"notebook_path": "work.ipynb"}).json()["thread_id"]
    assert (
        first.request("POST", f"cellwright/api/threads/{thread}/runs", {"message": "show the pid"}).status_code == 202
    )
    before = first.events(thread)
    assert before[-1]["status"] == "awaiting_approval"
    first.stop()

    second = JupyterProcess(tmp_path, server_env).start()
    servers.append(second)
    detail = second.get(f"cellwright/api/threads/{thread}").json()
    assert detail["status"] == "awaiting_approval"
    assert detail["pending_approval"]["id"] == "call_after_restart"
    assert second.get("cellwright/api/threads").json()["threads"][0]["thread_id"] == thread
    assert second.events(thread) == before  # the log survived, seqs included

    second.open_notebook("work.ipynb")  # the notebook's new kernel, found through its session
    response = second.request(
        "POST", f"cellwright/api/threads/{thread}/approvals/call_after_restart", {"decision": "approve"}
    )
    assert response.status_code == 202, response.text
    after = second.events(thread, before[-1]["seq"])
    assert after[0]["seq"] == before[-1]["seq"] + 1
    assert len(of_type(after, "cell_started")) == 1
    assert "pid" in of_type(after, "cell_output")[0]["output"]["text"]
    assert of_type(after, "final")[0]["answer"] == "ran after the restart"
    again = second.request(
        "POST", f"cellwright/api/threads/{thread}/approvals/call_after_restart", {"decision": "approve"}
    )
    assert again.status_code == 409
    assert "sk-secret" not in (tmp_path / "server.log").read_text()


def test_usage_totals_survive_a_restart_and_estimates_are_marked(
    tmp_path: Path, server_env: dict[str, str], servers: list
) -> None:
    """Reported usage for the first run, none (an endpoint without usage data) for the second: the
    thread's totals add both, say that part is estimated, and read the same after a restart."""
    with FakeLLM() as reporting, FakeLLM(usage=False) as silent:
        reporting.script(tool_call("final_answer", {"answer": "one"}))
        silent.script(tool_call("final_answer", {"answer": "two"}))
        first = JupyterProcess(tmp_path, {**server_env, "OPENAI_BASE_URL": reporting.base_url}).start()
        servers.append(first)
        thread = first.request("POST", "cellwright/api/threads", {}).json()["thread_id"]
        first.request("POST", f"cellwright/api/threads/{thread}/runs", {"message": "first"})
        run1 = of_type(first.events(thread), "usage")[-1]
        assert run1["call"]["estimated"] is False and run1["call"]["prompt_tokens"] > 0
        first.request("PUT", "cellwright/api/config", {"base_url": silent.base_url})
        first.request("POST", f"cellwright/api/threads/{thread}/runs", {"message": "second"})
        events = first.events(thread)
        run2 = of_type(events, "usage")[-1]
        assert run2["call"]["estimated"] is True and run2["run"] == run2["call"]
        totals = first.get(f"cellwright/api/threads/{thread}").json()["usage"]
        assert totals["prompt_tokens"] == run1["call"]["prompt_tokens"] + run2["call"]["prompt_tokens"]
        assert totals["estimated"] is True and totals == run2["thread"]
        first.stop()

        second = JupyterProcess(tmp_path, server_env).start()
        servers.append(second)
        assert second.get(f"cellwright/api/threads/{thread}").json()["usage"] == totals
