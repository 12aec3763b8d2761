"""The exploring scripted model (bench/agent_tasks/looks.py, issue 37) on three tasks (a CSV, the
SQLite database, a plot) through two real Cellwright servers, without the sandbox and with it (the
figure of bench/agent_tasks/sandbox_figure.py on a sample): both solve the same tasks; with the
sandbox no look asks, only the solution cell does; without it every look asks. The looks are built
from what earlier results showed, so a look whose result did not come back fails the run."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.agent_tasks.policies import PolicyProcess
from bench.agent_tasks.runner import Settings, prepare
from bench.agent_tasks.sandbox_figure import compare_sandbox, sandbox_table
from bench.agent_tasks.tasks import all_tasks, select
from tests.bench_tables import record

SAMPLE = "sales_top_region,sql_paid_orders,plot_dept_salary"


@pytest.mark.runs_long  # about a minute: two servers, 28 looks each importing pandas in a fresh kernel's fork
@pytest.mark.timeout(240)
def test_with_the_sandbox_no_look_asks_and_the_same_tasks_are_solved(tmp_path: Path) -> None:
    tasks = select(all_tasks(), SAMPLE)
    assert len(tasks) == 3, "the test extra installs matplotlib (the plot task)"
    expected = prepare(tmp_path, tasks)
    with PolicyProcess(tasks, {t: e.answers for t, e in expected.items()}) as policy:
        settings = Settings(policy.base_url, "exploring", tasks=SAMPLE, jobs=3, verify=False, forked_kernels=True)
        compared = compare_sandbox(settings, tasks, expected)
    record("agent_tasks: approvals with and without the sandbox (3 tasks)", sandbox_table(compared))
    without, with_sandbox = compared["without"]["results"], compared["with"]["results"]
    assert [r["id"] for r in without + with_sandbox if not r["correct"]] == [], without + with_sandbox
    for result in with_sandbox:  # each look ran sandboxed, unasked; only the solution cell asked
        looks = result["tool_calls"].get("explore", 0)
        assert looks >= 4 and result["sandboxed"] == looks, result
        assert result["approvals_by_tool"] == {"run_cell": 1}, result
    for result in without:  # the same looks, each asked, as the solution cell was
        looks = result["tool_calls"].get("explore", 0)
        assert looks >= 4 and result["sandboxed"] == 0, result
        assert result["approvals_by_tool"] == {"explore": looks, "run_cell": 1}, result
    figure = compared["figure"]
    assert figure["same_solved"] and figure["solved_with"] == 3
    assert figure["explores_with"] == figure["explores_without"] == figure["explore_approvals_without"]
    assert figure["approvals_with"] == 3 and figure["explore_approvals_with"] == 0
    cut = 100 * (figure["approvals_without"] - 3) / figure["approvals_without"]
    assert figure["fewer_pct"] == round(cut, 1)
