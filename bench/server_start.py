"""Server start time with and without Cellwright enabled: the extension must not make Jupyter
start slower (langgraph and openai are imported on first use). Prints medians and the ratio.

    python bench/server_start.py [rounds]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from devtools.jupyter_process import JupyterProcess  # noqa: E402


def start_seconds(enabled: bool) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        server = JupyterProcess(Path(tmp), {}, cellwright=enabled)
        started = time.perf_counter()
        server.start()
        elapsed = time.perf_counter() - started
        server.stop()
        return elapsed


def main(rounds: int) -> None:
    start_seconds(True)  # warm the file cache
    without: list[float] = []
    with_cw: list[float] = []
    for _ in range(rounds):  # alternating, so a load change on the machine hits both sides alike
        without.append(start_seconds(False))
        with_cw.append(start_seconds(True))
    print(f"rounds: {rounds}")
    print(f"jupyter server without cellwright: median {statistics.median(without):.2f} s")
    print(f"jupyter server with cellwright:    median {statistics.median(with_cw):.2f} s")
    added = (statistics.median(with_cw) - statistics.median(without)) * 1000
    print(f"ratio with / without: {statistics.median(with_cw) / statistics.median(without):.2f}x (+{added:.0f} ms)")
    import subprocess

    probe = (
        "import time, sys, jupyter_server.serverapp; t = time.perf_counter(); import jupyter_ext; "
        "print(f'{(time.perf_counter() - t) * 1000:.0f} ms', 'langgraph' in sys.modules, 'openai' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=Path(__file__).resolve().parent.parent
    )
    print(
        f"import jupyter_ext after jupyter_server: {out.stdout.strip()}  (time, langgraph imported?, openai imported?)"
    )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
