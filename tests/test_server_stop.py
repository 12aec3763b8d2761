"""A Jupyter server with Cellwright stops when it is told to. A SIGINT without a terminal (how
JupyterHub's default spawner, LocalProcessSpawner, stops a user's server) is, with Cellwright
loaded, Jupyter's own clean stop (as SIGTERM): Jupyter alone leaves it to Python's KeyboardInterrupt,
which once landed in a callback that dropped it, so the server ran on. Nothing Cellwright opened
may keep the process alive."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

from devtools.fake_llm import FakeLLM
from devtools.jupyter_process import JupyterProcess


def test_sigint_without_a_terminal_ends_the_server(tmp_path: Path, fake_llm: FakeLLM) -> None:
    env = {"OPENAI_BASE_URL": fake_llm.base_url, "OPENAI_API_KEY": "sk-secret", "CELLWRIGHT_MODEL": "fake-model"}
    server = JupyterProcess(tmp_path, env).start()
    try:
        created = server.request("POST", "cellwright/api/threads", {"notebook_path": "a.ipynb"})
        assert created.status_code == 201, created.text
        # A thread's detail reads its checkpoints: the agent's store (SQLite) is open from here on.
        thread_id = created.json()["thread_id"]
        assert server.get(f"cellwright/api/threads/{thread_id}").status_code == 200
        assert server.proc is not None
        server.proc.send_signal(signal.SIGINT)
        started = time.monotonic()
        try:
            server.proc.wait(15)  # ~1 s here; before the fix it never exited on its own
        except subprocess.TimeoutExpired:
            raise AssertionError(
                "the server was still running 15 s after SIGINT: a non-daemon thread blocks its exit\n"
                + server.log_path.read_text()[-2000:]
            ) from None
        log = server.log_path.read_text()
        assert f"received signal {int(signal.SIGINT)}, stopping" in log, "the SIGINT was Jupyter's clean stop"
        assert "Shutting down" in log and "extensions" in log, "the extensions' stop hooks ran"
        print(f"exited {time.monotonic() - started:.1f} s after SIGINT")
    finally:
        server.stop()
