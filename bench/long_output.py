"""A cell printing 20 000 flushed lines (a training loop's log) through Cellwright's server
(approve -> `cell_finished`, the thread's event stream read meanwhile) versus a raw jupyter-client
execute of the same code on the same kernel, every iopub message read. Prints both medians and the
ratio, from one run.

    python bench/long_output.py [rounds] [lines]
"""

from __future__ import annotations

import statistics
import sys

from cell_roundtrip import raw, served_kernel, through_server  # bench/ is the script's directory


def main(rounds: int, lines: int) -> None:
    code = f"for i in range({lines}):\n    print(f'step {{i}} loss {{1 / (i + 1):.6f}}', flush=True)"
    with served_kernel() as (llm, http, kernel, kc):
        through_server(llm, http, kernel, 0)  # warm: first use opens the checkpointer and imports langgraph
        raw(kc, code)
        served, direct = [], []
        for n in range(1, rounds + 1):  # interleaved, so both see the same load on the machine
            direct.append(raw(kc, code))
            served.append(through_server(llm, http, kernel, n, code))
    print(f"rounds: {rounds}, {lines} flushed lines")
    print(f"raw jupyter-client execute:                median {statistics.median(direct):6.2f} s")
    print(f"through Cellwright (approve -> finished):  median {statistics.median(served):6.2f} s")
    print(f"ratio {statistics.median(served) / statistics.median(direct):.2f}x")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3, int(sys.argv[2]) if len(sys.argv) > 2 else 20_000)
