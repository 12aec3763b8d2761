"""The dependency graph of a 500-cell notebook (issue 42): a full build (every cell analysed, no
cache) against the update after one edit (only the edited cell analysed again, the replay redone).
Prints both medians and their ratio. Target: the update under 20 ms.

    python bench/cell_graph.py [cells] [rounds]
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent_core.cell_graph import CellRecord, NotebookGraph  # noqa: E402
from agent_core.cell_graph import names as cell_names_module  # noqa: E402


def _source(i: int) -> str:
    """A realistic mix: loads, transforms, functions reading globals, plots, in-place changes."""
    kind = i % 5
    if kind == 0:
        return f"df{i} = pd.read_csv('data_{i}.csv')\ndf{i}['total'] = df{i}['a'] + df{i}['b']"
    if kind == 1:
        return (
            f"def clean_{i}(frame):\n    return frame[frame.total > threshold].dropna()\n\nc{i} = clean_{i}(df{i - 1})"
        )
    if kind == 2:
        return f"summary_{i} = c{i - 1}.groupby('k').agg({{'total': 'sum'}})\nsummary_{i}.head()"
    if kind == 3:
        return f"for col in summary_{i - 1}.columns:\n    stats[col] = summary_{i - 1}[col].mean()\nprint(len(stats))"
    return f"%matplotlib inline\nax = summary_{i - 2}.plot()\nthreshold = {i}"


def _cells(n: int, edited: int | None = None, stamp: int = 0) -> list[CellRecord]:
    cells = []
    for i in range(n):
        source = _source(i) + (f"\n# edit {stamp}" if i == edited else "")
        cells.append(CellRecord(index=i, cell_id=f"c{i}", source=source, execution_count=i + 1, ran_source=source))
    return cells


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    kernel = frozenset({"pd", "stats", "threshold"})
    full, update, update_cpu = [], [], []
    for r in range(rounds):
        cell_names_module._CACHE.clear()
        start = time.perf_counter()
        NotebookGraph(_cells(n), kernel)
        full.append(time.perf_counter() - start)
        edited = _cells(n, edited=n // 2, stamp=r)  # a new source each round: analysed, not cached
        start, cpu = time.perf_counter(), time.process_time()
        graph = NotebookGraph(edited, kernel)
        update.append(time.perf_counter() - start)
        update_cpu.append(time.process_time() - cpu)
    full_ms, update_ms = statistics.median(full) * 1000, statistics.median(update) * 1000
    stale = len(graph.stale())
    print(f"{n} cells, {rounds} rounds; {stale} cells stale after the edit")
    print(f"full build (cold):       {full_ms:8.1f} ms")
    print(f"update after one edit:   {update_ms:8.1f} ms  (target < 20 ms)")
    print(f"  of which CPU time:     {statistics.median(update_cpu) * 1000:8.1f} ms  (a loaded machine adds the rest)")
    print(f"ratio full / update:     {full_ms / update_ms:8.1f}x")


if __name__ == "__main__":
    main()
