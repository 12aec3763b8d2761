"""What the explore tests share (issue 37): one real Jupyter server process with Cellwright per test
module, one real ipykernel behind its notebook, the scripted fake LLM that makes the agent call
`explore` or `execute_command`, a test-side kernel client to read the kernel's state, and TCP
listeners that record whoever reaches them."""

from __future__ import annotations

import json
import socket
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from jupyter_client.blocking import BlockingKernelClient

from devtools.fake_llm import FakeLLM, text, tool_call
from devtools.jupyter_process import JupyterProcess

NOTEBOOK = "explore.ipynb"
SECRET = "s3cr3t-do-not-leak"
SETUP_CELL = f"""
import pandas as pd
df = pd.DataFrame({{"a": range(10), "b": list("xyxyxyxyxy")}})
kept = [1, 2, 3]
secret_value = {SECRET!r}
"""
STATE = (
    "__import__('json').dumps({'names': sorted(k for k in globals() if not k.startswith('_')), "
    "'kept': repr(globals().get('kept')), 'df': globals()['df'].to_json(), "
    "'count': get_ipython().execution_count, "
    "'history': len(get_ipython().history_manager.input_hist_raw)})"
)


class Listener:
    """A TCP server on `host` (any 127.x address is this machine) that records every connection."""

    def __init__(self, host: str) -> None:
        self.host = host
        self.sock = socket.create_server((host, 0))
        self.port = self.sock.getsockname()[1]
        self.connections: list[tuple[str, int]] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, peer = self.sock.accept()
            except OSError:
                return
            self.connections.append(peer)
            conn.close()

    def close(self) -> None:
        self.sock.close()


@dataclass
class Lab:
    server: JupyterProcess
    llm: FakeLLM
    kernel_id: str
    client: BlockingKernelClient
    home: Path
    listeners: list[Listener] = field(default_factory=list)

    @property
    def root(self) -> Path:
        return self.server.root

    def kernel_state(self) -> dict[str, Any]:
        """The user's kernel as the user would see it: names, values, execution count, history
        length. Read silently (no history, no count) on the test's own client."""
        reply = self.client.execute_interactive(
            "", silent=True, store_history=False, user_expressions={"s": STATE}, timeout=30
        )
        value = reply["content"]["user_expressions"]["s"]
        assert value["status"] == "ok", value
        state: dict[str, Any] = json.loads(eval(value["data"]["text/plain"]))  # a str's repr
        return state

    def run_agent(self, *replies: Any, autonomy: str = "agent", timeout: float = 90) -> list[dict[str, Any]]:
        """One agent run on a new thread with the model's replies scripted; its events."""
        self.llm.clear()
        self.llm.script(*replies)
        response = self.server.request("POST", "cellwright/api/threads", {"notebook_path": NOTEBOOK})
        assert response.status_code == 201, response.text
        thread_id = response.json()["thread_id"]
        body = {"message": "look at the data", "notebook_path": NOTEBOOK, "kernel_id": self.kernel_id}
        body["autonomy"] = autonomy
        response = self.server.request("POST", f"cellwright/api/threads/{thread_id}/runs", body)
        assert response.status_code == 202, response.text
        events = self.server.events(thread_id)
        assert any(e["type"] == "run_finished" for e in events), events
        return events

    def call(self, name: str, args: dict[str, Any], autonomy: str = "agent") -> dict[str, Any]:
        """The agent calls one tool, then answers: the call's tool_result, with the run's events under "_events"."""
        call_id = f"call_{uuid.uuid4().hex[:12]}"
        events = self.run_agent(tool_call(name, args, id=call_id), text("done"), autonomy=autonomy)
        results = [e for e in events if e["type"] == "tool_result" and e["id"] == call_id]
        assert results, [e for e in events if e["type"] in ("error", "approval_required", "run_finished")]
        return {**results[0], "_events": events}

    def explore(self, code: str) -> dict[str, Any]:
        """explore(code) through the agent; asserts it ran unasked and added no cell."""
        result = self.call("explore", {"code": code})
        kinds = {e["type"] for e in result["_events"]}
        assert "approval_required" not in kinds and "cell_started" not in kinds, kinds
        assert result["sandboxed"] is True
        return result


def output_text(result: dict[str, Any]) -> str:
    parts = []
    for output in result.get("outputs") or []:
        parts.append(output.get("text") or "")
        parts.append(output.get("evalue") or "")
        parts.append(str((output.get("data") or {}).get("text/plain", "")))
    return "\n".join(parts)


LIMITS = {"cpu_s": 1, "wall_s": 5, "memory_mb": 512, "processes": 16}  # small: the limit tests end soon


def start_lab(base: Path, llm: FakeLLM, servers: list[Any], limits: dict[str, int] | None = None) -> Lab:
    (base / "config").mkdir(parents=True)
    config = {"Cellwright": {"sandbox_limits": limits or {}}}
    (base / "config" / "jupyter_server_config.json").write_text(json.dumps(config))
    home = base / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(f"PRIVATE KEY {SECRET}\n")
    (home / ".netrc").write_text(f"machine example.com password {SECRET}\n")
    env = {
        "HOME": str(home),
        "CELLWRIGHT_MODEL": "fake-model",
        "OPENAI_BASE_URL": llm.base_url,
        "OPENAI_API_KEY": "sk-test-secret-key",
    }
    server = JupyterProcess(
        base,
        env,
        extra_args=["--Cellwright.max_model_calls=200", "--Cellwright.knowledge_index=False"],
    )
    servers.append(server)
    server.start()
    root = server.root
    (root / "data").mkdir()
    (root / "data" / "sales.csv").write_text("region,amount\nnorth,10\nsouth,20\n")
    (root / ".env").write_text(f"OPENAI_API_KEY={SECRET}\n")
    (root / "data" / ".hidden.csv").write_text(f"token\n{SECRET}\n")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text(f"[remote]\n url = https://user:{SECRET}@example.com\n")
    kernel_id = server.open_notebook(NOTEBOOK)
    connection = base / "runtime" / f"kernel-{kernel_id}.json"
    client = BlockingKernelClient(connection_file=str(connection))
    client.load_connection_file()
    client.start_channels(hb=False)  # no heartbeat: a client without a manager reads a late one as a dead kernel
    msg_id = client.kernel_info()
    while client.get_shell_msg(timeout=60)["parent_header"].get("msg_id") != msg_id:
        pass
    reply = client.execute_interactive(SETUP_CELL, store_history=True, timeout=60)
    assert reply["content"]["status"] == "ok", reply["content"]
    # the saved API key file: PUT config keeps the key in <data dir>/cellwright/settings.json
    response = server.request("PUT", "cellwright/api/config", {"api_key": f"sk-{SECRET}"})
    assert response.status_code == 200, response.text
    return Lab(server, llm, kernel_id, client, home)


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLM]:
    with FakeLLM() as fake:
        yield fake


@pytest.fixture(scope="module")
def lab(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, llm: FakeLLM, module_servers: list[Any]
) -> Iterator[Lab]:
    # the escape tests hit the limits: small ones end them soon; the other tests keep the defaults
    small = "escapes" in request.module.__name__
    lab = start_lab(tmp_path_factory.mktemp("explore"), llm, module_servers, LIMITS if small else None)
    yield lab
    lab.client.stop_channels()


@pytest.fixture(scope="module")
def listeners() -> Iterator[list[Listener]]:
    found = [Listener("127.0.0.1"), Listener("127.0.0.2")]
    yield found
    for listener in found:
        listener.close()
