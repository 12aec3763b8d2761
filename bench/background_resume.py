"""Cell end -> the agent's next model request, for a cell that went on in the background (issue 38):
the run ended as waiting_for_cell, and the server drives it on by itself when the cell ends. The
cell prints time.time() as its last act; the scripted model notes time.time() when the request
arrives. Prints p50/p95 over the rounds, from one run (goal: under 50 ms). Then the store's cost of
progress: a tqdm-style bar redrawn 100 times a second for PROGRESS_SECONDS, its stored cell_progress
rows and bytes, and the same per hour (the first minute coalesces to two a second, the rest to one
per 5 s: an hour stores what its first minute does plus one row per 5 s).

    python bench/background_resume.py [rounds]
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from devtools.fake_llm import FakeLLM, text, tool_call  # noqa: E402
from devtools.fake_llm_script import Reply  # noqa: E402
from devtools.jupyter_process import JupyterProcess  # noqa: E402

CELL = "import time\ntime.sleep(0.8)\nprint('ended at', time.time())"
PROGRESS_SECONDS = 10
BAR = (
    "import sys, time\n"
    f"n = {PROGRESS_SECONDS * 100}\n"
    "for i in range(n + 1):\n"
    "    sys.stderr.write(f'\\r{100 * i // n:3d}%|{\"#\" * (10 * i // n):<10}| {i}/{n} [00:00<00:10, 100.0it/s]')\n"
    "    time.sleep(0.01)\n"
)


def main(rounds: int) -> None:
    arrivals: list[float] = []

    def arrived(_body: dict) -> Reply:
        arrivals.append(time.time())
        return text("done")

    with FakeLLM() as llm, tempfile.TemporaryDirectory() as tmp:
        env = {"OPENAI_BASE_URL": llm.base_url, "OPENAI_API_KEY": "sk-bench", "CELLWRIGHT_MODEL": "fake-model"}
        server = JupyterProcess(Path(tmp), env, extra_args=["--Cellwright.background_after=0.3"]).start()
        try:
            kernel = server.open_notebook("bench.ipynb")
            gaps: list[float] = []
            for i in range(rounds):
                llm.script(tool_call("run_cell", {"code": CELL}, id=f"c{i}"), arrived)
                thread = server.request("POST", "cellwright/api/threads", {"notebook_path": "bench.ipynb"}).json()
                thread_id = thread["thread_id"]
                server.request("POST", f"cellwright/api/threads/{thread_id}/runs", {"message": "go"})
                asked = server.events(thread_id)
                approve = {"decision": "approve", "kernel_id": kernel}
                server.request("POST", f"cellwright/api/threads/{thread_id}/approvals/c{i}", approve)
                events = server.events(thread_id, asked[-1]["seq"])  # open until the resumed run ends
                statuses = [e["status"] for e in events if e["type"] == "run_finished"]
                assert statuses == ["waiting_for_cell", "completed"], statuses
                printed = "".join(e["output"].get("text", "") for e in events if e["type"] == "cell_output").split()
                ended = float(printed[printed.index("at") + 1])
                gaps.append((arrivals[-1] - ended) * 1000)
            rows, size = progress_cost(server, llm, kernel)
        finally:
            server.stop()
    gaps.sort()
    p95 = gaps[min(len(gaps) - 1, round(0.95 * (len(gaps) - 1)))]
    print(f"cell end -> next model request, {rounds} rounds: p50 {statistics.median(gaps):.1f} ms, p95 {p95:.1f} ms")
    print(f"  all (ms): {', '.join(f'{g:.1f}' for g in gaps)}")
    per_row = size / max(rows, 1)
    hourly = rows + (3600 - PROGRESS_SECONDS) / 5 if PROGRESS_SECONDS < 60 else rows
    print(
        f"progress of a bar redrawn 100/s for {PROGRESS_SECONDS} s: {rows} cell_progress rows, {size} bytes stored; "
        f"per hour about {hourly:.0f} rows, {hourly * per_row / 1024:.0f} KiB"
    )


def progress_cost(server: JupyterProcess, llm: FakeLLM, kernel: str) -> tuple[int, int]:
    """The stored cell_progress rows and their bytes for BAR, run through the agent."""
    llm.script(tool_call("run_cell", {"code": BAR}, id="bar"), text("done"))
    thread_id = server.request("POST", "cellwright/api/threads", {"notebook_path": "bench.ipynb"}).json()["thread_id"]
    server.request("POST", f"cellwright/api/threads/{thread_id}/runs", {"message": "go"})
    asked = server.events(thread_id)
    server.request(
        "POST", f"cellwright/api/threads/{thread_id}/approvals/bar", {"decision": "approve", "kernel_id": kernel}
    )
    server.events(thread_id, asked[-1]["seq"])
    stored = [e for e in server.events(thread_id) if e["type"] == "cell_progress"]
    return len(stored), sum(len(json.dumps(e)) for e in stored)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10)
