"""Cost of an undo snapshot in a real kernel: a 100 MB pandas DataFrame snapshotted by the probe the
server sends before an approved cell (agent_core.kernel_probes.snapshots, through kernel_probe's
expression), against a plain `df.copy()` measured in the same kernel in the same run. Prints the
in-kernel time (median of the rounds), the round trip, and the memory the snapshot keeps (the
kernel's resident set before and after, and what the store counts).

    python bench/undo_snapshot.py [rounds]
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from jupyter_client.manager import start_new_kernel  # noqa: E402

from agent_core.kernel_probes.probe import probe_expression  # noqa: E402
from agent_core.kernel_probes.snapshots import SOURCE  # noqa: E402

MB = 1024 * 1024
SETUP = """
import numpy as np, pandas as pd
df = pd.DataFrame(np.random.rand(100 * 1024 * 1024 // 8 // 10, 10), columns=[f"c{i}" for i in range(10)])
"""
RSS = "int(open('/proc/self/statm').read().split()[1]) * __import__('os').sysconf('SC_PAGE_SIZE')"


def _run(client, code: str) -> None:
    reply = client.execute_interactive(code, silent=True, store_history=False, timeout=300, output_hook=lambda m: None)
    assert reply["content"]["status"] == "ok", reply["content"]


def _evaluate(client, expression: str) -> tuple[object, float, float]:
    """(value, in-kernel seconds, round-trip seconds) of one silent evaluation."""
    timed = (
        f"(lambda t, s: ({expression}, t() - s))(__import__('time').perf_counter, __import__('time').perf_counter())"
    )
    started = time.perf_counter()
    reply = client.execute_interactive(
        "", silent=True, store_history=False, user_expressions={"v": timed}, timeout=300, output_hook=lambda m: None
    )
    trip = time.perf_counter() - started
    value = reply["content"]["user_expressions"]["v"]
    assert value["status"] == "ok", value
    answer, seconds = eval(value["data"]["text/plain"])  # noqa: S307 (a tuple's repr from our own kernel)
    return answer, seconds, trip


def _take(call_id: str) -> str:
    payload = {
        "thread_id": "bench",
        "call_id": call_id,
        "token": "t",
        "names": ["df"],
        "cap": 1024 * MB,
        "total_cap": 1024 * MB,
    }
    return probe_expression(SOURCE, "take", payload)


def _drop() -> str:
    return probe_expression(SOURCE, "drop", {"thread_id": "bench"})


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    manager, client = start_new_kernel()
    try:
        _run(client, SETUP)
        size = _evaluate(client, "int(df.memory_usage(deep=True).sum())")[0]
        copies, snapshots, trips = [], [], []
        for i in range(rounds):
            copies.append(_evaluate(client, "df.copy() is None")[1])
            answer, seconds, trip = _evaluate(client, _take(f"step{i}"))
            assert json.loads(answer)["ok"], answer
            snapshots.append(seconds)
            trips.append(trip)
            _evaluate(client, _drop())
        _run(client, "import gc; gc.collect()")
        before = _evaluate(client, RSS)[0]
        answer = json.loads(_evaluate(client, _take("kept"))[0])
        after = _evaluate(client, RSS)[0]
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    copy, snap, trip = statistics.median(copies), statistics.median(snapshots), statistics.median(trips)
    print(f"DataFrame: {size / MB:.0f} MB ({rounds} rounds, medians)")
    print(f"plain df.copy():      {copy * 1000:.1f} ms in the kernel")
    print(
        f"undo snapshot (take): {snap * 1000:.1f} ms in the kernel, {trip * 1000:.1f} ms round trip; {snap / copy:.2f}x df.copy()"
    )
    print(
        f"memory kept: {answer['bytes'] / MB:.0f} MB counted by the store; kernel RSS +{(after - before) / MB:.0f} MB"
    )


if __name__ == "__main__":
    main()
