"""The tasks, as data (tasks.yaml): a question, the answer format (`@name[...]` per value), a
difficulty, the data file it reads and the reference code that solves it, printing the answer in that
format. Plot tasks name an expression over the figure (`fig`) that the checker evaluates in the
kernel. What a task expects is what its reference code computes on the generated data (expected.py)."""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import yaml

from bench.agent_tasks.datasets import FOLDER, has_matplotlib, has_parquet

PRELUDE = "import pandas as pd\nimport numpy as np\n"
ANSWER = re.compile(r"@(\w+)\[([^\[\]]*)\]")
LEVELS = ("easy", "medium", "hard")


@dataclass(frozen=True)
class Task:
    id: str
    level: str  # easy | medium | hard
    file: str  # under data/
    question: str
    answer_format: str  # e.g. "@rows[integer]": each @name[...] the answer must give
    reference: str  # code that solves it and prints the answer in the format
    figure: str = ""  # plot tasks: a Python expression over `fig` giving the plotted data (JSON-able)
    tolerance: float = 0.01  # absolute, for numbers; 0.1 % relative is allowed too

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in ANSWER.findall(self.answer_format))

    @property
    def code(self) -> str:
        """The reference as a cell: the imports the task file leaves out, then its code."""
        return PRELUDE + self.reference.strip() + "\n"

    def prompt(self) -> str:
        """The message the runner sends: what a user would ask, with the required format."""
        figure = " Keep the matplotlib Figure in a variable named `fig`." if self.figure else ""
        return (
            f"{self.question}{figure}\nData: {FOLDER}/{self.file} (relative to the notebook's folder).\n"
            f"Compute it in the notebook, then give your final answer containing exactly: {self.answer_format} "
            "(numbers as plain digits, rounded as asked; lists comma-separated)."
        )


def _task(entry: dict[str, object]) -> Task:
    level = str(entry["level"])
    if level not in LEVELS:
        raise ValueError(f"task {entry['id']}: level {level!r} is not one of {LEVELS}")
    task = Task(
        id=str(entry["id"]),
        level=level,
        file=str(entry["file"]),
        question=str(entry["question"]),
        answer_format=str(entry["format"]),
        reference=str(entry["code"]),
        figure=str(entry.get("figure") or ""),
        tolerance=float(entry.get("tolerance") or 0.01),  # type: ignore[arg-type]
    )
    if not task.names:
        raise ValueError(f"task {task.id}: its format names no @answer[...]")
    return task


@cache
def _table() -> dict[str, list[Task]]:
    data = yaml.safe_load((Path(__file__).with_name("tasks.yaml")).read_text(encoding="utf-8"))
    return {key: [_task(entry) for entry in entries] for key, entries in data.items()}


def missing_packages() -> list[str]:
    """What this machine lacks for some tasks (pip install "cellwright[bench]"): those tasks are left out."""
    return [name for name, found in (("pyarrow", has_parquet()), ("matplotlib", has_matplotlib())) if not found]


def all_tasks() -> list[Task]:
    """Every task this machine can run: the parquet ones where pyarrow is installed, the plot ones
    where matplotlib is."""
    table = _table()
    tasks = table["tasks"] + (table["parquet_tasks"] if has_parquet() else [])
    tasks = [t for t in tasks if not t.figure or has_matplotlib()]
    if len({t.id for t in tasks}) != len(tasks):
        raise ValueError("tasks.yaml: two tasks share an id")
    return tasks


def select(tasks: list[Task], pattern: str | None) -> list[Task]:
    """Tasks whose id matches `pattern`: shell-style, comma-separated alternatives, or a level."""
    if not pattern:
        return tasks
    parts = [p.strip() for p in pattern.split(",") if p.strip()]
    return [t for t in tasks if any(fnmatch.fnmatch(t.id, p) or t.level == p for p in parts)]
