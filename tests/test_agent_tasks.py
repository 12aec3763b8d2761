"""The task benchmark (bench/agent_tasks, issue 26) end to end through one real Cellwright server:
the scripted reference model solves every task (100 %, and every notebook it leaves re-runs), the
scripted wrong model fails every one (0 %: the checkers can fail). Both tables are printed at the end
of the test run and written to .output/bench/."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.agent_tasks.__main__ import main
from bench.agent_tasks.checker import same_data, same_value, wrong_answers
from bench.agent_tasks.datasets import generate
from bench.agent_tasks.policies import PolicyProcess, changed
from bench.agent_tasks.report import table
from bench.agent_tasks.runner import Settings, cellwright_server, prepare, run_benchmark
from bench.agent_tasks.tasks import all_tasks
from tests.bench_tables import record


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tasks = all_tasks()
    expected = prepare(tmp_path_factory.mktemp("answers"), tasks)
    with PolicyProcess(tasks, {t: e.answers for t, e in expected.items()}) as policy:
        settings = Settings(policy.base_url, "reference", forked_kernels=True)
        with cellwright_server(settings, base=tmp_path_factory.mktemp("bench-server")) as server:
            generate(server.root)
            yield {"server": server, "policy": policy, "tasks": tasks, "expected": expected}


def _run(bench: dict[str, Any], **settings: Any) -> dict[str, Any]:
    chosen = Settings(bench["policy"].base_url, forked_kernels=True, **settings)
    return run_benchmark(bench["server"].url, bench["server"].root, bench["tasks"], chosen, bench["expected"])


@pytest.mark.runs_long
@pytest.mark.timeout(400)
def test_the_reference_model_solves_every_task_and_its_notebooks_rerun(bench: dict[str, Any]) -> None:
    report = _run(bench, model="reference", jobs=3)
    record("agent_tasks: scripted reference model", table(report))
    results, tasks = report["results"], bench["tasks"]
    assert len(tasks) >= 40 and {r["level"] for r in results} == {"easy", "medium", "hard"}
    assert [r["id"] for r in results if not r["correct"]] == [], [r for r in results if not r["correct"]][:3]
    assert report["summary"]["score_pct"] == 100.0
    # Each task: one cell proposed and approved, then the answer; the notebook re-runs from the top.
    assert {(r["model_calls"], r["approvals_asked"], r["approvals_rejected"]) for r in results} == {(2, 1, 0)}
    assert {r["reruns"] for r in results} == {"verified"}
    assert all(r["first_token_s"] is not None and r["first_token_s"] <= r["wall_s"] for r in results)


@pytest.mark.runs_long
@pytest.mark.timeout(300)
def test_the_wrong_model_scores_zero(bench: dict[str, Any]) -> None:
    report = _run(bench, model="wrong", jobs=4, verify=False)
    record("agent_tasks: scripted wrong model", table(report))
    results = report["results"]
    assert report["summary"]["correct"] == 0 and len(results) == len(bench["tasks"])
    assert all(r["status"] == "completed" and r["answer"] and not r["error"] for r in results)
    # Every answer the wrong model gave was read and judged wrong (and a plot task drew no figure).
    expected = bench["expected"]
    assert all(set(r["wrong"]) >= set(expected[r["id"]].answers) for r in results)
    assert all("figure" in r["wrong"] for r in results if r["id"].startswith("plot_"))


def test_the_checker_has_a_tolerance_and_reads_lists_and_names() -> None:
    assert same_value("6.21", "6.215", 0.01) and not same_value("6.21", "6.23", 0.01)
    assert same_value("75892.57", "75900", 0.01)  # 0.1 % relative
    assert not same_value("75892.57", "76000", 0.01)
    assert same_value("North", " north ", 0.01) and not same_value("North", "South", 0.01)
    assert same_value("67, 12, 32", "67,12,32", 0.01) and not same_value("67, 12, 32", "12, 67, 32", 0.01)
    assert not same_value("3", "three", 0.01) and not same_value("0", "nan", 0.01)
    assert wrong_answers({"a": "1", "b": "x"}, "so @a[1.0] and @b[y]", 0.01) == ["b"]
    assert wrong_answers({"a": "1"}, "no format at all: 1", 0.01) == ["a"]
    assert same_data([1.0, [2.0, "x"]], [1.001, [2.0, "x"]], 0.01) and not same_data([1.0, 2.0], [1.0], 0.01)
    assert not same_value("2024-11", changed("2024-11"), 0.01) and not same_value("0", changed("0"), 0.01)


def test_compare_puts_two_reports_side_by_side(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def report(model: str, correct: list[bool]) -> dict[str, Any]:
        results = [
            {"id": f"t{i}", "level": "easy", "correct": ok, "model_calls": 2, "approvals_asked": 1,
             "approvals_rejected": 0, "prompt_tokens": 10, "completion_tokens": 2, "wall_s": 1.0,
             "first_token_s": 0.5, "reruns": "verified", "verify_s": 1.0, "overhead_s": 0.3, "error": ""}
            for i, ok in enumerate(correct)
        ]  # fmt: skip
        from bench.agent_tasks.report import summary

        return {"settings": {"model": model}, "date": "today", "results": results, "summary": summary(results)}

    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(report("m1", [True, True, False])))
    b.write_text(json.dumps(report("m2", [True, False, True])))
    assert main(["--compare", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "A: m1" in out and "B: m2" in out and "tasks whose result differs: 2" in out
    assert "t1" in out and "t2" in out and "  t0 " not in out


@pytest.mark.timeout(120)
def test_the_reject_first_shell_policy_rejects_each_tasks_first_shell_command(bench: dict[str, Any]) -> None:
    chosen = Settings(
        bench["policy"].base_url,
        "shell-first",
        policy="reject-first-shell",
        tasks="sales_rows,sql_customers",
        forked_kernels=True,
    )
    tasks = [t for t in bench["tasks"] if t.id in ("sql_customers", "sales_rows")]
    report = run_benchmark(bench["server"].url, bench["server"].root, tasks, chosen, bench["expected"])
    # In each task the model's shell command was rejected with the reason, and it carried on in the notebook.
    assert [(r["approvals_asked"], r["approvals_rejected"], r["correct"]) for r in report["results"]] == [
        (2, 1, True),
        (2, 1, True),
    ], report["results"]


@pytest.mark.timeout(180)
@pytest.mark.parametrize(("mode", "tool_calling"), [("multi", "native"), ("single", "prompt")])
def test_the_runner_drives_multi_agent_mode_and_prompt_tool_calling(
    bench: dict[str, Any], mode: str, tool_calling: str
) -> None:
    chosen = Settings(bench["policy"].base_url, "reference", mode=mode, tool_calling=tool_calling, forked_kernels=True)
    tasks = [t for t in bench["tasks"] if t.id in ("sales_rows", "sql_paid_orders", "plot_dept_salary")]
    report = run_benchmark(bench["server"].url, bench["server"].root, tasks, chosen, bench["expected"])
    assert report["summary"]["correct"] == 3 and report["settings"]["mode"] == mode, report["results"]
    # Multi: the planner delegates, the developer runs the cell and reports, the planner answers.
    assert {r["model_calls"] for r in report["results"]} == ({4} if mode == "multi" else {2})
    assert {r["reruns"] for r in report["results"]} == {"verified"}
