"""Cell end -> the agent's next model request, for a cell that went on in the background (issue 38):
the run ended as waiting_for_cell, and the server drives it on by itself when the cell ends. The
cell prints time.time() as its last act; the scripted model notes time.time() when the request
arrives. Prints p50/p95 over the rounds (goal: under 50 ms):

- a local kernel, no restart;
- a Kernel Gateway kernel, no restart, then with a server restart in between: the server is killed
  (kill -9) while the cell runs, started again, finds the gateway kernel and follows the cell again
  (its output reaches the log), and the cell is let end (a file it waits for) RUNS_ON_SECONDS later. A local
  kernel stops with its server, so the restart variant needs a kernel that outlives it.

Then the store's cost of progress: a tqdm-style bar redrawn 100 times a second for PROGRESS_SECONDS,
its stored cell_progress rows and bytes, and the same per hour (the first minute coalesces to two a
second, the rest to one per 5 s: an hour stores what its first minute does plus one row per 5 s).

    python bench/background_resume.py [rounds] [restart_rounds]
"""

from __future__ import annotations

import json
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from devtools.fake_llm import FakeLLM, text, tool_call  # noqa: E402
from devtools.fake_llm_script import Reply  # noqa: E402
from devtools.jupyter_process import JupyterProcess, KernelGatewayProcess, kill_9, read_until  # noqa: E402

CELL = "import time\ntime.sleep(0.8)\nprint('ended at', time.time())"
# The restart variant's cell: it prints until the bench lets it end, so the new server's following is seen.
TICKING = (
    "import pathlib, time\nwhile not pathlib.Path({release!r}).exists():\n    print('tick', time.time(), flush=True)\n"
    "    time.sleep(0.2)\nprint('ended at', time.time())"
)
PROGRESS_SECONDS = 10
BAR = (
    "import sys, time\n"
    f"n = {PROGRESS_SECONDS * 100}\n"
    "for i in range(n + 1):\n"
    "    sys.stderr.write(f'\\r{100 * i // n:3d}%|{\"#\" * (10 * i // n):<10}| {i}/{n} [00:00<00:10, 100.0it/s]')\n"
    "    time.sleep(0.01)\n"
)
# A cell of real length runs on for minutes after the server came back; here it runs this long after the
# new server follows it, so what the server starts at its start (the model SDK's import) is done, as it would be.
RUNS_ON_SECONDS = 5.0
ARGS = ["--Cellwright.background_after=0.3"]
Events = list[dict[str, Any]]


class Arrivals:
    """The scripted model's reply after the cell: it notes when each request arrived."""

    def __init__(self) -> None:
        self.times: list[float] = []

    def __call__(self, _body: dict) -> Reply:
        self.times.append(time.time())
        return text("done")


def approved(server: JupyterProcess, llm: FakeLLM, kernel: str, code: str, call_id: str, reply: Any) -> tuple[str, int]:
    """A thread whose run asked to run `code` and was approved: the thread and the seq before the approval."""
    llm.script(tool_call("run_cell", {"code": code}, id=call_id), reply)
    thread_id = server.request("POST", "cellwright/api/threads", {"notebook_path": "bench.ipynb"}).json()["thread_id"]
    server.request("POST", f"cellwright/api/threads/{thread_id}/runs", {"message": "go"})
    asked = server.events(thread_id)
    approve = {"decision": "approve", "kernel_id": kernel}
    server.request("POST", f"cellwright/api/threads/{thread_id}/approvals/{call_id}", approve)
    return thread_id, asked[-1]["seq"]


def gap_ms(events: Events, arrived: float) -> float:
    """From the cell's printed end to the model request's arrival."""
    printed = "".join(e["output"].get("text", "") for e in events if e["type"] == "cell_output").split()
    return (arrived - float(printed[printed.index("at") + 1])) * 1000


def without_restart(server: JupyterProcess, llm: FakeLLM, kernel: str, rounds: int) -> list[float]:
    arrivals, gaps = Arrivals(), []
    for i in range(rounds):
        thread_id, seq = approved(server, llm, kernel, CELL, f"c{i}", arrivals)
        events = server.events(thread_id, seq)  # open until the resumed run ends
        statuses = [e["status"] for e in events if e["type"] == "run_finished"]
        assert statuses == ["waiting_for_cell", "completed"], statuses
        gaps.append(gap_ms(events, arrivals.times[-1]))
    return gaps


def until(server: JupyterProcess, thread_id: str, after: int, stop: Callable[[Events], bool]) -> Events:
    """The thread's events after `after` until `stop`; the stream closes at once while a restarted
    server has not yet taken the thread up again, so it is read again (for at most a minute)."""
    seen: Events = []
    deadline = time.monotonic() + 60
    while not stop(seen):
        assert time.monotonic() < deadline, f"never came: {seen[-3:]}"
        read_until(server, thread_id, seen[-1]["seq"] if seen else after, stop, seen)
    return seen


def ended(event: dict[str, Any]) -> bool:
    return bool(event["type"] == "run_finished")


def ticked_after(events: Events, moment: float) -> bool:
    text = "".join(e["output"].get("text", "") for e in events if e["type"] == "cell_output")
    return any(float(t) > moment for t in re.findall(r"tick ([\d.]+)", text))


def with_restart(
    current: list[JupyterProcess], env: dict[str, str], llm: FakeLLM, kernel: str, rounds: int, release: Path
) -> list[float]:
    """Each round: the cell in the background, the server killed and started again, the cell
    followed again, then let end. `current` holds the running server at every moment, so the caller
    stops the last one even when a round fails (a restarted server was left running before)."""
    arrivals, gaps = Arrivals(), []
    for i in range(rounds):
        server = current[0]
        release.unlink(missing_ok=True)
        thread_id, seq = approved(server, llm, kernel, TICKING.format(release=str(release)), f"r{i}", arrivals)
        waiting = until(server, thread_id, seq, lambda seen: any(ended(e) for e in seen))
        kill_9(server)
        killed_at = time.time()
        server = JupyterProcess(server.base, env, extra_args=server.extra_args)
        current[0] = server
        server.start()
        # The first server logged ticks until it died: only a tick printed after the kill shows the cell followed again.
        followed = until(server, thread_id, waiting[-1]["seq"], partial(ticked_after, moment=killed_at))
        time.sleep(RUNS_ON_SECONDS)
        release.write_text("")
        events = until(server, thread_id, followed[-1]["seq"], lambda seen: seen[-1:] != [] and ended(seen[-1]))
        assert events[-1]["status"] == "completed", events[-3:]
        gaps.append(gap_ms(events, arrivals.times[-1]))
    return gaps


def report(label: str, gaps: list[float]) -> None:
    gaps = sorted(gaps)
    p95 = gaps[min(len(gaps) - 1, round(0.95 * (len(gaps) - 1)))]
    print(
        f"cell end -> next model request, {label}, {len(gaps)} rounds: p50 {statistics.median(gaps):.1f} ms, p95 {p95:.1f} ms"
    )
    print(f"  all (ms): {', '.join(f'{g:.1f}' for g in gaps)}")


def main(rounds: int, restart_rounds: int) -> None:
    with FakeLLM() as llm, tempfile.TemporaryDirectory() as tmp:
        env = {"OPENAI_BASE_URL": llm.base_url, "OPENAI_API_KEY": "sk-bench", "CELLWRIGHT_MODEL": "fake-model"}
        server = JupyterProcess(Path(tmp) / "local", env, extra_args=ARGS).start()
        try:
            kernel = server.open_notebook("bench.ipynb")
            local = without_restart(server, llm, kernel, rounds)
            rows, size = progress_cost(server, llm, kernel)
        finally:
            server.stop()
        gateway = KernelGatewayProcess(Path(tmp) / "gateway").start()
        current = [JupyterProcess(Path(tmp) / "remote", env, extra_args=[*ARGS, f"--gateway-url={gateway.url}"])]
        try:
            kernel = current[0].start().open_notebook("bench.ipynb")
            remote = without_restart(current[0], llm, kernel, rounds)
            restarted = with_restart(current, env, llm, kernel, restart_rounds, Path(tmp) / "release")
        finally:
            current[0].stop()
            gateway.stop()
    report("local kernel", local)
    report("gateway kernel", remote)
    report("gateway kernel, server killed and restarted while the cell ran", restarted)
    per_row = size / max(rows, 1)
    hourly = rows + (3600 - PROGRESS_SECONDS) / 5 if PROGRESS_SECONDS < 60 else rows
    print(
        f"progress of a bar redrawn 100/s for {PROGRESS_SECONDS} s: {rows} cell_progress rows, {size} bytes stored; "
        f"per hour about {hourly:.0f} rows, {hourly * per_row / 1024:.0f} KiB"
    )


def progress_cost(server: JupyterProcess, llm: FakeLLM, kernel: str) -> tuple[int, int]:
    """The stored cell_progress rows and their bytes for BAR, run through the agent."""
    thread_id, seq = approved(server, llm, kernel, BAR, "bar", text("done"))
    server.events(thread_id, seq)
    stored = [e for e in server.events(thread_id) if e["type"] == "cell_progress"]
    return len(stored), sum(len(json.dumps(e)) for e in stored)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10, int(sys.argv[2]) if len(sys.argv) > 2 else 5)
