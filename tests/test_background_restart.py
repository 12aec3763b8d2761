"""A server killed (kill -9) while a cell runs in the background (issue 38): a local kernel stops with
its server, so the next server's start resumes the run saying the kernel died while the cell ran, and
the thread is not left running or waiting."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

from devtools.fake_llm import FakeLLM, text, tool_call
from devtools.jupyter_process import JupyterProcess
from tests.conftest import of_type
from tests.test_crash import read_until

LONG = "import time\nprint('started', flush=True)\nfor _ in range(1200):\n    time.sleep(0.05)\n"


def test_a_restart_resumes_the_waiting_run_saying_the_kernel_died(
    tmp_path: Path, fake_llm: FakeLLM, servers: list
) -> None:
    fake_llm.script(tool_call("run_cell", {"code": LONG}, id="c1"), text("The kernel died; I will run it again."))
    env = {"OPENAI_BASE_URL": fake_llm.base_url, "OPENAI_API_KEY": "sk-secret", "CELLWRIGHT_MODEL": "fake-model"}
    args = ["--Cellwright.background_after=1"]
    first = JupyterProcess(tmp_path, env, extra_args=args).start()
    servers.append(first)
    kernel = first.open_notebook("work.ipynb")
    thread = first.request("POST", "cellwright/api/threads", {"notebook_path": "work.ipynb"}).json()["thread_id"]
    assert first.request("POST", f"cellwright/api/threads/{thread}/runs", {"message": "train"}).status_code == 202
    asked = first.events(thread)
    assert asked[-1]["status"] == "awaiting_approval"
    approve = {"decision": "approve", "kernel_id": kernel}
    assert first.request("POST", f"cellwright/api/threads/{thread}/approvals/c1", approve).status_code == 202
    # The stream stays open while the cell runs: read it until the run waits for the cell.
    seen: list[dict[str, Any]] = []
    read_until(first, thread, asked[-1]["seq"], lambda events: bool(of_type(events, "run_finished")), seen)
    assert of_type(seen, "run_finished")[0]["status"] == "waiting_for_cell", seen
    assert first.get(f"cellwright/api/threads/{thread}").json()["status"] == "waiting_for_cell"
    assert first.proc is not None
    os.kill(first.proc.pid, signal.SIGKILL)
    first.proc.wait()

    second = JupyterProcess(tmp_path, env, extra_args=args).start()
    servers.append(second)
    log = second.events(thread)
    while not any(e["type"] == "run_finished" and e["status"] == "completed" for e in log):
        # Recovery runs in the background at start: the stream closes at once until it has begun.
        log = second.events(thread)
    tool_message = [m for m in fake_llm.requests[-1]["messages"] if m["role"] == "tool"][-1]
    assert "kernel died while this cell ran" in tool_message["content"]
    assert len(fake_llm.requests) == 2
    assert of_type(log, "final")[0]["answer"] == "The kernel died; I will run it again."
    assert second.get(f"cellwright/api/threads/{thread}").json()["status"] == "completed"
