"""Explore (issue 37) in a real kernel: the fork's start time and the whole exploration's latency
by kernel size (100 MB and 2 GB of DataFrames), against the same code run as a plain cell, and the
kernel's resident memory before and after (copy-on-write: it should not grow with the explores).
Goals: the fork starts within 50 ms; the kernel grows by no more than a few MB.

    python bench/explore_fork.py [rounds]
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psutil  # noqa: E402
from jupyter_client.manager import start_new_kernel  # noqa: E402

from agent_core.kernel_probes.sandbox import explore_expression  # noqa: E402

CODE = "df.head()"  # describe() of 2 GB outlasts the wall time on a busy machine: the fork is what is measured
LIMITS = {"cpu_s": 30.0, "wall_s": 25.0, "memory_mb": 2048.0, "processes": 32.0}
SIZES_MB = (100, 2048)


def _setup(size_mb: int) -> str:
    rows = size_mb * 1024 * 1024 // (4 * 8)  # four float64 columns
    return f"import numpy as np, pandas as pd\ndf = pd.DataFrame(np.random.rand({rows}, 4), columns=list('abcd'))\n"


def _quiet(client, code: str, **kw) -> dict:
    reply = client.execute_interactive(code, timeout=300, output_hook=lambda m: None, **kw)
    assert reply["content"]["status"] == "ok", reply["content"]
    return reply


def _explore(client, root: str) -> tuple[float, float, float]:
    """(fork ms, in-kernel ms, round-trip ms) of one sandboxed exploration."""
    started = time.perf_counter()
    reply = _quiet(
        client,
        "",
        silent=True,
        store_history=False,
        user_expressions={"v": explore_expression(CODE, LIMITS, root, [], True)},
    )
    trip = (time.perf_counter() - started) * 1000
    found = json.loads(eval(reply["content"]["user_expressions"]["v"]["data"]["text/plain"]))
    assert found["status"] == "ok", found
    return found["fork_ms"], found["duration_ms"], trip


def _cell(client) -> float:
    started = time.perf_counter()
    _quiet(client, CODE, store_history=False)
    return (time.perf_counter() - started) * 1000


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main(rounds: int) -> None:
    root = str(Path.cwd())
    print(
        f"{'kernel':>8} {'fork p50':>9} {'fork p95':>9} {'explore p50':>12} {'explore p95':>12} {'cell p50':>9} {'RSS growth':>11}"
    )
    for size in SIZES_MB:
        manager, client = start_new_kernel(kernel_name="python3")
        try:
            _quiet(client, _setup(size))
            _explore(client, root)  # the first one checks the namespaces once
            process = psutil.Process(manager.provisioner.process.pid)
            rss_before = process.memory_info().rss
            samples = [_explore(client, root) for _ in range(rounds)]
            growth = (process.memory_info().rss - rss_before) / 1024 / 1024
            cells = [_cell(client) for _ in range(rounds)]
            forks, trips = [s[0] for s in samples], [s[2] for s in samples]
            print(
                f"{size:>6}MB {_p(forks, 0.5):>8.1f}ms {_p(forks, 0.95):>8.1f}ms {_p(trips, 0.5):>11.1f}ms "
                f"{_p(trips, 0.95):>11.1f}ms {statistics.median(cells):>8.1f}ms {growth:>9.1f}MB"
            )
        finally:
            client.stop_channels()
            manager.shutdown_kernel(now=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10)
