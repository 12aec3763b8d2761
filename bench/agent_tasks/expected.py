"""What each task expects: its reference code run on the generated data, in a fresh Python process
started in the server's root (where the kernels' notebooks are), stdout read for `@name[value]`;
for a plot task, also its figure expression evaluated on the figure the code drew."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.agent_tasks.checker import answers_in
from bench.agent_tasks.tasks import Task

_RUN_ALL = """
import contextlib, io, json, sys
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    plt = None
found = {}
for task in json.loads(sys.stdin.read()):
    namespace, printed = {}, io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(task["code"], task["id"], "exec"), namespace)
    entry = {"stdout": printed.getvalue()}
    if task["figure"]:
        entry["figure"] = eval(task["figure"], namespace)
    if plt is not None:
        plt.close("all")
    found[task["id"]] = entry
print(json.dumps(found))
"""


@dataclass(frozen=True)
class Expected:
    answers: dict[str, str]
    figure: Any = None


def expected_answers(tasks: list[Task], root: Path) -> dict[str, Expected]:
    """task id -> what it expects. RuntimeError when a reference does not give every answer it names."""
    payload = json.dumps([{"id": t.id, "code": t.code, "figure": t.figure} for t in tasks])
    done = subprocess.run(
        [sys.executable, "-c", _RUN_ALL], cwd=root, input=payload, capture_output=True, text=True, timeout=300
    )
    if done.returncode != 0:
        raise RuntimeError(f"the reference code failed:\n{done.stderr[-3000:]}")
    found = json.loads(done.stdout.strip().splitlines()[-1])
    expected = {}
    for task in tasks:
        answers = answers_in(found[task.id]["stdout"])
        missing = [name for name in task.names if name not in answers]
        if missing:
            raise RuntimeError(f"task {task.id}: its reference code does not print {missing}")
        expected[task.id] = Expected({n: answers[n] for n in task.names}, found[task.id].get("figure"))
    return expected
