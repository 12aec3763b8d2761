"""What the saved notebook's cells, read in order, say about hidden state, without running anything:
names a cell reads that no earlier cell defines (they came from a deleted cell, a later one, or code
run outside the notebook), and cells whose saved execution counts show they ran out of order."""

from __future__ import annotations

import builtins
import re
from collections.abc import Sequence

from agent_core.impact.analysis import analyze_code

# What IPython puts in every kernel's namespace: never hidden state.
IPYTHON_NAMES = frozenset(
    {"In", "Out", "get_ipython", "display", "exit", "quit", "_", "__", "___", "_ih", "_oh", "_dh"}
)
_HISTORY_NAME = re.compile(r"^_(i{1,3}|i?\d+)$")  # _i, _ii, _iii, _i3, _3
_STAR_IMPORT = re.compile(r"^\s*from\s+\S+\s+import\s+\*", re.MULTILINE)


def _provided(name: str) -> bool:
    return name in IPYTHON_NAMES or hasattr(builtins, name) or bool(_HISTORY_NAME.match(name))


def hidden_state(sources: Sequence[str]) -> list[str]:
    """Names read by a code cell (of `sources`, the code cells in notebook order) that no earlier
    cell and no earlier line of that cell defines, in the order first read. After a star import
    nothing can be told (any name may come from it): the cells after one are not judged."""
    defined: set[str] = set()
    hidden: dict[str, None] = {}
    for source in sources:
        impact = analyze_code(source)
        for name in impact.names("reads"):
            if name not in defined and not _provided(name):
                hidden[name] = None
        defined.update(impact.names("assigns"))
        if _STAR_IMPORT.search(source):
            break
    return list(hidden)


def out_of_order(counts: Sequence[int | None]) -> list[int]:
    """The 1-based numbers of the code cells (their saved execution counts, in notebook order) that
    ran before a cell above them: a count lower than an earlier cell's. Cells never run are skipped."""
    highest = 0
    late: list[int] = []
    for number, count in enumerate(counts, start=1):
        if not isinstance(count, int):
            continue
        if count < highest:
            late.append(number)
        highest = max(highest, count)
    return late
