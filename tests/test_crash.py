"""A kill -9 of the real server mid-answer loses at most the tokens of that answer that were not
yet written (one coalescing batch), never an approval, a tool result or a cell output: what a
reader saw before the crash is exactly what the log has after it."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from devtools import fake_llm as fake_llm_module
from devtools.fake_llm import FakeLLM, text, tool_call
from devtools.jupyter_process import JupyterProcess, kill_9, read_until
from tests.conftest import of_type
from tests.postgres_fixtures import database_env

WORDS = [f" word{i}" for i in range(400)]
PACE = 0.02  # seconds between the model's tokens: the kill lands mid-answer

pytestmark = pytest.mark.also_postgres  # every store in SQLite, then in PostgreSQL


@pytest.fixture
def server_env(fake_llm: FakeLLM, database_url: str) -> dict[str, str]:
    return {
        "OPENAI_BASE_URL": fake_llm.base_url,
        "OPENAI_API_KEY": "k",
        "CELLWRIGHT_MODEL": "fake-model",
        **database_env(database_url),
    }


@pytest.fixture
def words_sent(monkeypatch: pytest.MonkeyPatch) -> list[tuple[float, str]]:
    """The answer's words the scripted model has written to the wire so far, each with when."""
    sent: list[tuple[float, str]] = []
    original = fake_llm_module._Handler._write_chunk

    def write_chunk(self: Any, data: bytes) -> None:
        original(self, data)
        if data.startswith(b"data: {"):
            for choice in json.loads(data[6:])["choices"]:
                content = (choice.get("delta") or {}).get("content")
                if content and content.startswith(" word"):
                    sent.append((time.monotonic(), content))

    monkeypatch.setattr(fake_llm_module._Handler, "_write_chunk", write_chunk)
    return sent


@pytest.mark.runs_long
def test_kill_9_mid_answer_loses_only_the_unwritten_tokens(
    tmp_path: Path, fake_llm: FakeLLM, server_env: dict[str, str], servers: list, words_sent: list[tuple[float, str]]
) -> None:
    fake_llm.script(
        tool_call("run_cell", {"code": "import os\nprint('pid', os.getpid())"}, id="call_crash"),
        text(WORDS, chunk_delay=PACE),
    )
    first = JupyterProcess(tmp_path, server_env).start()
    servers.append(first)
    first.open_notebook("work.ipynb")
    thread = first.request("POST", "cellwright/api/threads", {"notebook_path": "work.ipynb"}).json()["thread_id"]
    assert first.request("POST", f"cellwright/api/threads/{thread}/runs", {"message": "run it"}).status_code == 202
    before = first.events(thread)
    assert before[-1]["status"] == "awaiting_approval"
    kill_9(first)  # with an approval pending

    second = JupyterProcess(tmp_path, server_env).start()
    servers.append(second)
    assert second.get(f"cellwright/api/threads/{thread}").json()["pending_approval"]["id"] == "call_crash"
    assert second.events(thread) == before
    kernel = second.open_notebook("work.ipynb")
    response = second.request(
        "POST", f"cellwright/api/threads/{thread}/approvals/call_crash", {"decision": "approve", "kernel_id": kernel}
    )
    assert response.status_code == 202, response.text

    seen: list[dict[str, Any]] = []
    answer_started = lambda events: sum(len(e.get("text", "")) for e in of_type(events, "token")) > 200  # noqa: E731
    reader = threading.Thread(target=read_until, args=(second, thread, before[-1]["seq"], answer_started, seen))
    reader.start()
    reader.join(60)
    assert answer_started(seen), [e["type"] for e in seen]
    time.sleep(0.3)  # some tokens written, some still in flight
    killed_at = time.monotonic()
    kill_9(second)
    sent = "".join(word for _, word in words_sent)
    # The model writes on until it sees the socket closed, and a dying process on a loaded machine
    # may take a while: what it wrote after the kill was sent is no loss of the server's.
    sent_before_kill = "".join(word for at, word in words_sent if at < killed_at)
    kernel_pid = int(of_type(seen, "cell_output")[0]["output"]["text"].split()[1])
    os.kill(kernel_pid, signal.SIGKILL)  # the dead server's kernel, orphaned

    third = JupyterProcess(tmp_path, server_env).start()
    servers.append(third)
    log = third.events(thread)
    assert log[: len(before)] == before
    by_seq = {e["seq"]: e for e in log}
    assert all(by_seq.get(e["seq"]) == e for e in seen), "every event a reader saw is in the log, unchanged"
    assert [e["seq"] for e in log] == list(range(1, len(log) + 1)), "no gap, no reuse"
    after_approval = log[len(before) :]
    assert [e["type"] for e in after_approval][:2] == ["run_started", "cell_started"]
    assert "pid" in of_type(after_approval, "cell_output")[0]["output"]["text"]
    assert of_type(after_approval, "cell_finished")[0]["status"] == "ok"
    assert of_type(after_approval, "tool_result")[0]["id"] == "call_crash"
    stored = "".join(e["text"] for e in of_type(after_approval, "token"))
    assert sent.startswith(stored), "tokens stored in order, once"
    lost = sent_before_kill[len(stored) :]
    # At most what arrived during the last coalescing window (50 ms, ~3 tokens at this pace) plus
    # the few in flight between the model's socket and the pump: far less than the answer.
    assert len(lost) <= len(WORDS[0]) * 10, f"lost {len(lost)} chars: {lost!r}"
    assert len(stored) < len("".join(WORDS)), "the kill landed mid-answer"
