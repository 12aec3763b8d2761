"""Rewind through the real server (issue 25): a thread whose 10 approved cells each change a 100 MB
DataFrame in place, then POST rewind back over all 10 (to the state after loading the frame), against
re-running the notebook from the top in a fresh kernel to reach the same state (the load cell), and
also over the last step only, against re-running the load and the first 9 steps. Prints the times,
their ratios and the kernel's peak resident memory (VmHWM, reset before each measure: for a rewind,
above what the kernel held before it), from one run.
The snapshot budget is raised so that all 10 steps keep theirs (the default, 256 MB, keeps the last 2).

    python bench/rewind.py [steps] [long thread steps]
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psutil  # noqa: E402
from jupyter_client.manager import start_new_kernel  # noqa: E402

from devtools.fake_llm import FakeLLM, text, tool_call  # noqa: E402
from devtools.jupyter_process import JupyterProcess  # noqa: E402

MB = 1024 * 1024
LOAD = (
    "import numpy as np, pandas as pd\n"
    "df = pd.DataFrame(np.random.rand(100 * 1024 * 1024 // 8 // 10, 10), columns=[f'c{i}' for i in range(10)])"
)
STEP = "df['c{n}'] = df['c{n}'] * 2 + {n}"
NOTEBOOK = "bench.ipynb"
LONG = int(sys.argv[2]) if len(sys.argv) > 2 else 150  # steps of the thread whose history a preview reads


def _kernel_process(server: JupyterProcess) -> psutil.Process:
    kernels = [
        p for p in psutil.Process(server.proc.pid).children(recursive=True) if "ipykernel" in " ".join(p.cmdline())
    ]
    assert len(kernels) == 1, kernels
    return kernels[0]


def _reset_peak(pid: int) -> None:
    Path(f"/proc/{pid}/clear_refs").write_text("5")  # VmHWM := the current resident set


def _peak(pid: int) -> int:
    line = next(x for x in Path(f"/proc/{pid}/status").read_text().splitlines() if x.startswith("VmHWM:"))
    return int(line.split()[1]) * 1024


def _rss(pid: int) -> int:
    return psutil.Process(pid).memory_info().rss


def rerun(cells: list[str]) -> tuple[float, int]:
    """Seconds and peak memory to run `cells` from the top in a fresh kernel."""
    manager, client = start_new_kernel()
    try:
        pid = int(manager.provisioner.process.pid)  # type: ignore[union-attr]
        _reset_peak(pid)
        started = time.perf_counter()
        for code in cells:
            reply = client.execute_interactive(code, store_history=False, timeout=600, output_hook=lambda m: None)
            assert reply["content"]["status"] == "ok", reply["content"]
        return time.perf_counter() - started, _peak(pid)
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def _thread(server: JupyterProcess, llm: FakeLLM, steps: int) -> str:
    llm.script(
        tool_call("run_cell", {"code": LOAD}, id="load"),
        *(tool_call("run_cell", {"code": STEP.format(n=n % 10)}, id=f"s{n}") for n in range(1, steps + 1)),
        text("done"),
    )
    thread = server.request("POST", "cellwright/api/threads", {"notebook_path": NOTEBOOK}).json()["thread_id"]
    assert server.request("POST", f"cellwright/api/threads/{thread}/runs", {"message": "go"}).status_code == 202
    events = server.events(thread)
    assert events[-1]["status"] == "completed", events[-3:]
    return thread


def rewind(server: JupyterProcess, thread: str, pid: int, to: str) -> tuple[float, int, dict]:
    """Seconds, and the kernel's peak resident memory above what it held before (the snapshots)."""
    before = _rss(pid)
    _reset_peak(pid)
    started = time.perf_counter()
    answer = server.request("POST", f"cellwright/api/threads/{thread}/rewind", {"to": to}, timeout=600)
    seconds = time.perf_counter() - started
    assert answer.status_code == 200, answer.text
    return seconds, max(0, _peak(pid) - before), answer.json()


def long_thread(server: JupyterProcess, llm: FakeLLM, steps: int) -> tuple[float, float]:
    """Milliseconds of a rewind's preview back to the first of `steps` Markdown steps, and of GET
    branches: both read the thread's whole checkpoint history."""
    llm.script(*(tool_call("add_markdown", {"content": f"note {n}"}, id=f"m{n}") for n in range(steps)), text("ok"))
    thread = server.request("POST", "cellwright/api/threads", {"notebook_path": NOTEBOOK}).json()["thread_id"]
    server.request("POST", f"cellwright/api/threads/{thread}/runs", {"message": "notes"})
    assert server.events(thread)[-1]["status"] == "completed"
    started = time.perf_counter()
    answer = server.request("POST", f"cellwright/api/threads/{thread}/rewind", {"to": "m0", "dry_run": True})
    preview = time.perf_counter() - started
    assert answer.status_code == 200 and len(answer.json()["steps"]) == steps, answer.text
    started = time.perf_counter()
    assert server.get(f"cellwright/api/threads/{thread}/branches").status_code == 200
    return preview * 1000, (time.perf_counter() - started) * 1000


def main() -> None:
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    cap = (steps + 2) * 110  # MB: every step's 100 MB snapshot kept
    with tempfile.TemporaryDirectory() as tmp, FakeLLM() as llm:
        env = {"OPENAI_BASE_URL": llm.base_url, "OPENAI_API_KEY": "", "CELLWRIGHT_MODEL": "fake-model"}
        args = [
            "--Cellwright.auto_approve=run_cell",
            f"--Cellwright.undo_snapshot_limit_mb={cap}",
            f"--Cellwright.max_model_calls={LONG + 10}",
        ]
        server = JupyterProcess(Path(tmp), env, extra_args=args).start()
        try:
            server.open_notebook(NOTEBOOK)
            thread = _thread(server, llm, steps)
            pid = _kernel_process(server).pid
            held = _rss(pid)
            one, one_peak, one_answer = rewind(server, thread, pid, f"s{steps}")
            all_, all_peak, all_answer = rewind(server, thread, pid, "s1")
            after = _rss(pid)
            preview_ms, branches_ms = long_thread(server, llm, LONG)
        finally:
            server.stop()
    gone = [a for a in (one_answer, all_answer) if a["not_reversible"]]
    assert not gone, gone
    top_one, top_one_peak = rerun([LOAD, *(STEP.format(n=n % 10) for n in range(1, steps))])
    top_all, top_all_peak = rerun([LOAD])
    print(
        f"{steps} steps, each changing a 100 MB DataFrame in place; kernel RSS with their snapshots: {held / MB:.0f} MB"
    )
    print(
        f"back over the last step: rewind {one * 1000:.0f} ms, peak +{one_peak / MB:.0f} MB | re-run the load and "
        f"{steps - 1} steps: {top_one * 1000:.0f} ms, peak {top_one_peak / MB:.0f} MB | time ratio {one / top_one:.2f}"
    )
    print(
        f"back over the other {steps - 1} steps: rewind {all_ * 1000:.0f} ms, peak +{all_peak / MB:.0f} MB | re-run "
        f"the load: {top_all * 1000:.0f} ms, peak {top_all_peak / MB:.0f} MB | time ratio {all_ / top_all:.2f}"
    )
    print(f"kernel RSS after the rewinds: {after / MB:.0f} MB (snapshots used up are released)")
    print(f"a thread of {LONG} steps: rewind preview {preview_ms:.0f} ms, GET branches {branches_ms:.0f} ms")


if __name__ == "__main__":
    main()
