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

import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from devtools.fake_llm import FakeLLM, Reply, text, tool_call  # noqa: E402
from devtools.jupyter_process import TOKEN, JupyterProcess  # noqa: E402

PATTERN = "(a|aa)+$"  # on "aaa...ab" every split of the a's is tried before the b fails it
POLL_SECONDS = 0.05


def searching_model(tool_args: dict[str, Any]) -> FakeLLM:
    """A model that asks for the search, then answers once it has the result, however many runs."""

    def reply(body: dict[str, Any]) -> Reply:
        if any(m.get("role") == "tool" for m in body.get("messages", [])):
            return text("Done.")
        return tool_call("search_notebooks", tool_args)

    model = FakeLLM().start()
    model.script(*[reply] * 1000)
    return model


class Server(JupyterProcess):
    def __init__(self, base: Path, model: FakeLLM) -> None:
        env = {"OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": "bench", "CELLWRIGHT_MODEL": "bench"}
        super().__init__(base, env)
        self.start()
        self.client = httpx.Client(base_url=self.url, headers={"Authorization": f"token {TOKEN}"}, timeout=120)

    def run_search(self) -> tuple[float, str]:
        """Start a run (the model asks for the search) and read its events until it ends."""
        thread = self.client.post("cellwright/api/threads", json={"notebook_path": ""}).json()["thread_id"]
        started = time.monotonic()
        response = self.client.post(f"cellwright/api/threads/{thread}/runs", json={"message": "search"})
        assert response.status_code == 202, response.text
        results = [e for e in self.events(thread) if e["type"] == "tool_result"]
        summary = f"{results[-1]['status']}: {results[-1]['summary'][:90]}" if results else ""
        return time.monotonic() - started, summary

    def stop_timed(self) -> float:
        started = time.monotonic()
        self.stop()
        return time.monotonic() - started


def sample_status(server: Server, until: threading.Event) -> list[float]:
    """GET /api/status latencies (seconds), one every POLL_SECONDS, until `until` is set."""
    latencies: list[float] = []
    with httpx.Client(
        base_url=server.client.base_url, headers={"Authorization": f"token {TOKEN}"}, timeout=120
    ) as client:
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
    return (
        f"median {statistics.median(values) * 1000:7.1f} ms, max {max(values) * 1000:7.1f} ms ({len(values)} requests)"
    )


def scenario(name: str, tool_args: dict[str, Any], cells: list[str], runs: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        model = searching_model(tool_args)
        server = Server(Path(tmp), model)
        try:
            nb = nbformat.v4.new_notebook()
            nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
            nbformat.write(nb, str(server.root / "slow.ipynb"))
            server.run_search()  # warm up: the first run imports langgraph and openai
            busy, durations, summary = while_searching(server, runs)
            quiet = idle(server, sum(durations))
            print(f"\n[{name}] {tool_args} on {len(cells)} cells, {runs} run(s)")
            print(
                f"  each run (model call + search + answer): median {statistics.median(durations):.2f} s; tool result: {summary}"
            )
            print(f"  GET /api/status idle:            {ms(quiet)}")
            print(f"  GET /api/status during search:   {ms(busy)}")
            print(
                f"  ratio during / idle: median {statistics.median(busy) / statistics.median(quiet):.2f}x, "
                f"max {max(busy) / max(quiet):.2f}x"
            )
        finally:
            server.stop()
            model.stop()


def exit_while_searching(cells: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        model = searching_model({"pattern": PATTERN})
        server = Server(Path(tmp), model)
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
        nbformat.write(nb, str(server.root / "slow.ipynb"))
        search = threading.Thread(target=lambda: _ignore_errors(server.run_search), daemon=True)
        search.start()
        time.sleep(1.0)  # the search is matching now
        took = server.stop_timed()
        model.stop()
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
