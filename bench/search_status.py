"""Does a hostile regex still freeze Jupyter? (issue "Trust", finding 6)

Starts a real `jupyter server` with Cellwright, whose agent (driven by a tiny scripted model
endpoint started here) calls `search_notebooks` with a catastrophically backtracking pattern on a
notebook built to trigger it. Meanwhile GET /api/status (Jupyter's own route) is timed every
50 ms; the same is done with the server idle. Prints median and max latency of both and their
ratios, for two searches:

  catastrophic  one line on which the pattern backtracks exponentially: the per-match time
                limit ends the search with an error for the model
  every-line    a pattern that is slow (under the per-match limit) on every one of many lines:
                the search's overall deadline ends it

and, last, how long the server takes to exit on SIGTERM while such a search runs.
Before the fix the first search held the GIL: /api/status did not answer for the whole search.

    python bench/search_status.py [runs]
"""
from __future__ import annotations

import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import nbformat

REPO = Path(__file__).resolve().parent.parent
TOKEN = "search-status-bench"
PATTERN = "(a|aa)+$"  # on "aaa...ab" every split of the a's is tried before the b fails it
POLL_SECONDS = 0.05


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- a model that always asks for the same search, then answers


class ScriptedModel(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, tool_args: dict[str, Any]) -> None:
        self.tool_args = tool_args
        super().__init__(("127.0.0.1", 0), _ModelHandler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _ModelHandler(BaseHTTPRequestHandler):
    server: ScriptedModel

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        searched = any(m.get("role") == "tool" for m in body.get("messages", []))
        if searched:
            delta: dict[str, Any] = {"role": "assistant", "content": "Done."}
            finish = "stop"
        else:
            call = {"index": 0, "id": f"call_{time.monotonic_ns()}", "type": "function",
                    "function": {"name": "search_notebooks", "arguments": json.dumps(self.server.tool_args)}}  # fmt: skip
            delta, finish = {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"
        base = {"id": "bench", "created": int(time.time()), "model": body.get("model", "bench")}
        if not body.get("stream"):
            message = {**delta, "tool_calls": [{k: v for k, v in c.items() if k != "index"} for c in delta.get("tool_calls", [])]}
            if not message["tool_calls"]:
                del message["tool_calls"]
            answer = {**base, "object": "chat.completion",
                      "choices": [{"index": 0, "message": message, "finish_reason": finish}]}  # fmt: skip
            data = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        chunks = [
            {**base, "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
            {**base, "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
        ]
        payload = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


# -- a real jupyter server


class Server:
    def __init__(self, base: Path, model: ScriptedModel) -> None:
        self.root = base / "root"
        self.root.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        env = {
            **os.environ,
            "JUPYTER_CONFIG_DIR": str(base / "config"),
            "JUPYTER_DATA_DIR": str(base / "data"),
            "JUPYTER_RUNTIME_DIR": str(base / "runtime"),
            "JUPYTER_PLATFORM_DIRS": "1",
            "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH", "")])),
            "OPENAI_BASE_URL": model.base_url,
            "OPENAI_API_KEY": "bench",
            "CELLWRIGHT_MODEL": "bench",
        }
        args = [
            sys.executable, "-m", "jupyter", "server", "--no-browser", "--allow-root", f"--port={self.port}",
            "--ServerApp.ip=127.0.0.1", f"--IdentityProvider.token={TOKEN}", f"--ServerApp.root_dir={self.root}",
            "--ServerApp.jpserver_extensions={'cellwright': True}",
        ]  # fmt: skip
        self.log = open(base / "server.log", "ab")
        self.proc = subprocess.Popen(args, env=env, stdout=self.log, stderr=subprocess.STDOUT, cwd=self.root)
        self.client = httpx.Client(base_url=f"http://127.0.0.1:{self.port}", headers={"Authorization": f"token {TOKEN}"}, timeout=120)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"jupyter server exited; see {base / 'server.log'}")
            try:
                if self.client.get("api/status").status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        raise SystemExit(f"jupyter server did not start; see {base / 'server.log'}")

    def run_search(self) -> tuple[float, str]:
        """Start a run (the model asks for the search) and read its events until it ends."""
        thread = self.client.post("cellwright/api/threads", json={"notebook_path": ""}).json()["thread_id"]
        started = time.monotonic()
        response = self.client.post(f"cellwright/api/threads/{thread}/runs", json={"message": "search"})
        assert response.status_code == 202, response.text
        summary = ""
        with self.client.stream("GET", f"cellwright/api/threads/{thread}/events") as stream:
            for line in stream.iter_lines():
                if line.startswith("data: "):
                    event = json.loads(line[6:])
                    if event["type"] == "tool_result":
                        summary = f"{event['status']}: {event['summary'][:90]}"
                    if event["type"] == "run_finished":
                        break
        return time.monotonic() - started, summary

    def stop(self) -> float:
        started = time.monotonic()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        return time.monotonic() - started


def sample_status(server: Server, until: threading.Event) -> list[float]:
    """GET /api/status latencies (seconds), one every POLL_SECONDS, until `until` is set."""
    latencies: list[float] = []
    with httpx.Client(base_url=server.client.base_url, headers={"Authorization": f"token {TOKEN}"}, timeout=120) as client:
        while not until.is_set():
            asked = time.monotonic()
            client.get("api/status").raise_for_status()
            latencies.append(time.monotonic() - asked)
            time.sleep(POLL_SECONDS)
    return latencies


def while_searching(server: Server, runs: int) -> tuple[list[float], list[float], str]:
    done = threading.Event()
    result: list[list[float]] = []
    poller = threading.Thread(target=lambda: result.append(sample_status(server, done)))
    poller.start()
    durations, summary = [], ""
    try:
        for _ in range(runs):
            took, summary = server.run_search()
            durations.append(took)
    finally:
        done.set()
        poller.join()
    return result[0], durations, summary


def idle(server: Server, seconds: float) -> list[float]:
    done = threading.Event()
    timer = threading.Timer(seconds, done.set)
    timer.start()
    return sample_status(server, done)


def ms(values: list[float]) -> str:
    return f"median {statistics.median(values) * 1000:7.1f} ms, max {max(values) * 1000:7.1f} ms ({len(values)} requests)"


def scenario(name: str, tool_args: dict[str, Any], cells: list[str], runs: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        model = ScriptedModel(tool_args)
        server = Server(Path(tmp), model)
        try:
            nb = nbformat.v4.new_notebook()
            nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
            nbformat.write(nb, str(server.root / "slow.ipynb"))
            server.run_search()  # warm up: the first run imports langgraph and openai
            busy, durations, summary = while_searching(server, runs)
            quiet = idle(server, sum(durations))
            print(f"\n[{name}] {tool_args} on {len(cells)} cells, {runs} run(s)")
            print(f"  each run (model call + search + answer): median {statistics.median(durations):.2f} s; tool result: {summary}")
            print(f"  GET /api/status idle:            {ms(quiet)}")
            print(f"  GET /api/status during search:   {ms(busy)}")
            print(
                f"  ratio during / idle: median {statistics.median(busy) / statistics.median(quiet):.2f}x, "
                f"max {max(busy) / max(quiet):.2f}x"
            )
        finally:
            server.stop()
            model.shutdown()


def exit_while_searching(cells: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        model = ScriptedModel({"pattern": PATTERN})
        server = Server(Path(tmp), model)
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
        nbformat.write(nb, str(server.root / "slow.ipynb"))
        search = threading.Thread(target=lambda: _ignore_errors(server.run_search), daemon=True)
        search.start()
        time.sleep(1.0)  # the search is matching now
        took = server.stop()
        model.shutdown()
        print(f"\n[SIGTERM] server exit while an every-line search runs: {took:.2f} s")


def _ignore_errors(fn: Any) -> None:
    try:
        fn()
    except Exception:
        pass


def main(runs: int) -> None:
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs; status polled every {POLL_SECONDS * 1000:.0f} ms")
    scenario("catastrophic", {"pattern": PATTERN}, ["x = 1", f"s = '{'a' * 38}b'"], runs)
    every_line = [f"s = '{'a' * 29}b'" for _ in range(200)]
    scenario("every-line", {"pattern": PATTERN}, every_line, 1)
    exit_while_searching(every_line)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
