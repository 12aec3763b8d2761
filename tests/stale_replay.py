"""The stale-notebook corpus (tests/data/stale_notebooks.py) played for real: each case's steps run
in an in-process IPython shell, so the graph gets what a kernel would give it (each execution
count's source from the input history, the namespace's names), and the score against the truth."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agent_core.cell_graph import CellRecord
from tests.data.stale_notebooks import Case

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell


@dataclass
class Played:
    """A case at its end: the code cells as the notebook has them, and what the kernel knows."""

    records: list[CellRecord]
    history: dict[int, str]
    kernel_names: frozenset[str]


def cell_id(position: int) -> str:
    return f"c{position}"


def _shell() -> InteractiveShell:
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    if InteractiveShell.initialized():
        return InteractiveShell.instance()
    config = Config()
    config.HistoryManager.enabled = False  # the input history is kept in memory, no SQLite file
    return InteractiveShell.instance(config=config)


def play(case: Case) -> Played:
    """Run `case` in IPython's in-process shell, its namespace emptied first. The execution counts
    go on from the case before (shell.reset would cost a full garbage collection, 0.2 s, per case):
    the graph reads only their order."""
    shell = _shell()
    for name in [n for n in shell.user_ns if n not in shell.user_ns_hidden and not n.startswith("_")]:
        del shell.user_ns[name]
    sources = list(case.cells)
    counts: list[int | None] = [None] * len(sources)
    alive = [True] * len(sources)
    for step in case.steps:
        kind, index = step[0], step[1]
        if kind == "run":
            counts[index] = shell.execution_count
            shell.run_cell(sources[index], store_history=True, silent=False)
        elif kind == "edit":
            sources[index] = str(step[2])  # type: ignore[misc]
        elif kind == "delete":
            alive[index] = False
    history = {n: text for n, text in enumerate(shell.history_manager.input_hist_raw) if n}  # type: ignore[union-attr]
    hidden = set(shell.user_ns_hidden)
    names = frozenset(name for name in shell.user_ns if name not in hidden and not name.startswith("_"))
    records: list[CellRecord] = []
    for position, source in enumerate(sources):
        if alive[position]:
            count = counts[position]
            records.append(
                CellRecord(
                    index=len(records),
                    cell_id=cell_id(position),
                    source=source,
                    execution_count=count,
                    ran_source=history.get(count) if count is not None else None,
                )
            )
    return Played(records, history, names)


@dataclass
class Score:
    true_positive: int = 0
    false_positive: int = 0
    false_negative: int = 0

    def add(self, found: Iterable[str], truth: Iterable[str]) -> None:
        found, truth = set(found), set(truth)
        self.true_positive += len(found & truth)
        self.false_positive += len(found - truth)
        self.false_negative += len(truth - found)

    @property
    def precision(self) -> float:
        flagged = self.true_positive + self.false_positive
        return self.true_positive / flagged if flagged else 1.0

    @property
    def recall(self) -> float:
        real = self.true_positive + self.false_negative
        return self.true_positive / real if real else 1.0

    def line(self) -> str:
        return f"precision {self.precision:.2f}, recall {self.recall:.2f} (tp {self.true_positive}, fp {self.false_positive}, fn {self.false_negative})"


def truth_ids(positions: Iterable[int]) -> set[str]:
    return {cell_id(p) for p in positions}
