"""Approve -> `cell_finished` for a cell of `pass` through Cellwright's server, versus a raw
jupyter-client execute of `pass` on the same kernel (a client connected once, as a notebook's is).
Prints both medians and the difference, from one run.

    python bench/cell_roundtrip.py [rounds]
"""

from __future__ import annotations

import json
import queue
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
from jupyter_client import BlockingKernelClient

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from devtools.fake_llm import FakeLLM, tool_call  # noqa: E402
from devtools.jupyter_process import TOKEN, JupyterProcess  # noqa: E402


def raw(client: BlockingKernelClient, code: str = "pass") -> float:
    """A notebook's execute: every iopub message read, until the kernel is idle and the reply is in.
    A flood of output can overflow iopub and drop the "idle" (as the server sees too): then the
    cell ended with its last message, once the reply is in and iopub has been quiet for a second."""
    started = time.perf_counter()
    msg_id = client.execute(code, store_history=True)
    ended, reply = started, None
    while True:
        try:
            msg = client.get_iopub_msg(timeout=1)
        except queue.Empty:
            reply = reply or _reply(client, msg_id, timeout=0.01)
            if reply is not None:
                return ended - started
            continue
        if msg["parent_header"].get("msg_id") == msg_id:
            ended = time.perf_counter()
            if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                break
    reply or _reply(client, msg_id, timeout=10)
    return time.perf_counter() - started


def _reply(client: BlockingKernelClient, msg_id: str, timeout: float) -> dict | None:
    try:
        while (msg := client.get_shell_msg(timeout=timeout))["parent_header"].get("msg_id") != msg_id:
            pass
    except queue.Empty:
        return None
    return msg


def through_server(llm: FakeLLM, client: httpx.Client, kernel: str, n: int, code: str = "pass") -> float:
    """A thread whose model asks to run `code`; the clock runs from POST approve to cell_finished,
    read on the thread's event stream (every event before it read too, as the panel does)."""
    llm.script(tool_call("run_cell", {"code": code}, id=f"c{n}"), tool_call("final_answer", {"answer": "ok"}))
    thread = client.post("cellwright/api/threads", json={"notebook_path": "b.ipynb"}).json()["thread_id"]
    client.post(f"cellwright/api/threads/{thread}/runs", json={"message": "run the cell", "kernel_id": kernel})
    seq = 0
    with client.stream("GET", f"cellwright/api/threads/{thread}/events") as response:
        for line in response.iter_lines():
            if line.startswith("data: "):
                seq = json.loads(line[6:]).get("seq", seq)
    started = time.perf_counter()
    client.post(f"cellwright/api/threads/{thread}/approvals/c{n}", json={"decision": "approve", "kernel_id": kernel})
    with client.stream(
        "GET", f"cellwright/api/threads/{thread}/events", headers={"Last-Event-ID": str(seq)}
    ) as response:
        for line in response.iter_lines():
            if line == "event: cell_finished":
                return time.perf_counter() - started
    raise RuntimeError("no cell_finished event")


@contextmanager
def served_kernel() -> Iterator[tuple[FakeLLM, httpx.Client, str, BlockingKernelClient]]:
    """A server with Cellwright, a notebook's kernel in it, and a raw client of that same kernel."""
    with FakeLLM() as llm, tempfile.TemporaryDirectory() as tmp:
        env = {"OPENAI_BASE_URL": llm.base_url, "OPENAI_API_KEY": "k", "CELLWRIGHT_MODEL": "fake-model"}
        server = JupyterProcess(Path(tmp), env).start()
        http = httpx.Client(base_url=server.url, headers={"Authorization": f"token {TOKEN}"}, timeout=600)
        kernel = server.open_notebook("b.ipynb")
        kc = BlockingKernelClient(connection_file=str(Path(tmp) / "runtime" / f"kernel-{kernel}.json"))
        kc.load_connection_file()
        kc.start_channels(hb=False)
        # A kernel_info reply, not wait_for_ready: that one also wants the heartbeat, which a loaded
        # machine misses for a second at times ("Kernel died before replying to kernel_info").
        kc.kernel_info(reply=True, timeout=30)
        try:
            yield llm, http, kernel, kc
        finally:
            kc.stop_channels()
            http.close()
            server.stop()


def main(rounds: int) -> None:
    with served_kernel() as (llm, http, kernel, kc):
        through_server(llm, http, kernel, 0)  # warm: first use opens the checkpointer and imports langgraph
        raw(kc)
        served, direct = [], []
        for n in range(1, rounds + 1):  # interleaved, so both see the same load on the machine
            direct.append(raw(kc))
            served.append(through_server(llm, http, kernel, n))
    ms = 1000
    print(f"rounds: {rounds}")
    print(f"raw jupyter-client execute of `pass`:      median {statistics.median(direct) * ms:7.1f} ms")
    print(f"through Cellwright (approve -> finished):  median {statistics.median(served) * ms:7.1f} ms")
    print(
        f"difference {(statistics.median(served) - statistics.median(direct)) * ms:.1f} ms, "
        f"ratio {statistics.median(served) / statistics.median(direct):.1f}x"
    )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10)
