"""Time to build the namespace snapshot in a real kernel: 200 user variables including 5 pandas
DataFrames of 1 M rows, against an empty namespace measured in the same run. Prints the in-kernel
time (median of the rounds) and the round trip of the silent user_expressions request.
Goal: < 100 ms in the kernel, not proportional to the data's size.

    python bench/kernel_snapshot.py [rounds]
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from jupyter_client.manager import start_new_kernel  # noqa: E402

from agent_core.kernel_probes.introspection import snapshot_expression  # noqa: E402

SETUP = """
import numpy as np, pandas as pd
for _k in range(5):
    globals()[f"frame_{_k}"] = pd.DataFrame({"a": np.arange(1_000_000), "b": np.random.rand(1_000_000),
                                             "c": np.arange(1_000_000) % 7})
for _k in range(195):
    globals()[f"value_{_k}"] = [_k] * (_k % 17) if _k % 3 else {"k": _k}
"""


def _run(client, code: str) -> None:
    reply = client.execute_interactive(code, silent=True, store_history=False, timeout=120, output_hook=lambda m: None)
    assert reply["content"]["status"] == "ok", reply["content"]


def _evaluate(client, expression: str) -> tuple[float, float]:
    """(in-kernel seconds, round-trip seconds) of one silent evaluation."""
    timed = (
        f"(lambda t, s: ({expression}, t() - s))(__import__('time').perf_counter, __import__('time').perf_counter())"
    )
    started = time.perf_counter()
    reply = client.execute_interactive(
        "", silent=True, store_history=False, user_expressions={"v": timed}, timeout=60, output_hook=lambda m: None
    )
    trip = time.perf_counter() - started
    value = reply["content"]["user_expressions"]["v"]
    assert value["status"] == "ok", value
    answer, seconds = eval(value["data"]["text/plain"])  # a (str, float) tuple's repr
    assert json.loads(answer)["variables"] is not None
    return seconds, trip


def _median(client, rounds: int) -> tuple[float, float, int]:
    samples = [_evaluate(client, snapshot_expression()) for _ in range(rounds)]
    reply = client.execute_interactive(
        "", silent=True, user_expressions={"v": snapshot_expression()}, output_hook=lambda m: None
    )
    count = json.loads(eval(reply["content"]["user_expressions"]["v"]["data"]["text/plain"]))["total"]
    return statistics.median(s for s, _ in samples), statistics.median(t for _, t in samples), count


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    manager, client = start_new_kernel()
    try:
        base_kernel, base_trip, base_count = _median(client, rounds)
        _run(client, SETUP)
        kernel, trip, count = _median(client, rounds)
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    print(
        f"empty namespace ({base_count} variables): {base_kernel * 1000:.1f} ms in the kernel, {base_trip * 1000:.1f} ms round trip"
    )
    print(
        f"{count} variables, 5 DataFrames of 1 M rows: {kernel * 1000:.1f} ms in the kernel, {trip * 1000:.1f} ms round trip"
    )
    print(f"goal < 100 ms in the kernel: {'met' if kernel < 0.1 else 'MISSED'}")


if __name__ == "__main__":
    main()
