"""Approvals with and without the sandbox (issue 37's figure): the same tasks and the same model run
through two Cellwright servers started for it, one without the sandbox (`c.Cellwright.sandbox =
"off"`: every explore asks, as run_cell does; the baseline) and one with it (`auto`: explore runs
unasked in a sandboxed fork of the kernel). Per task: the looks, the approvals each asked and
whether each solved it; then the prompts cut against the baseline measured in the same run.

    python -m bench.agent_tasks --scripted exploring --compare-sandbox [--tasks PATTERN] [--jobs N]

(or an endpoint's --base-url and --model instead of --scripted). The runner answers every approval
at once: the wall times hold no user's reading time, which is what the cut saves."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from bench.agent_tasks.driver import TaskResult
from bench.agent_tasks.expected import Expected
from bench.agent_tasks.runner import Settings, run_on_new_server
from bench.agent_tasks.tasks import Task

GOAL_PCT = 85.0  # the goal: at least this many percent fewer prompts with the sandbox
RUNS = (("without", "off"), ("with", "auto"))  # the baseline first


def compare_sandbox(
    settings: Settings,
    tasks: list[Task],
    expected: dict[str, Expected],
    api_key: str = "",
    on_result: Callable[[str, TaskResult], None] | None = None,
) -> dict[str, Any]:
    """Both runs' reports, and the figure comparing them."""
    reports = {}
    for name, sandbox in RUNS:
        report_result = (lambda result, name=name: on_result(name, result)) if on_result else None
        reports[name] = run_on_new_server(replace(settings, sandbox=sandbox), tasks, expected, api_key, report_result)
    return {**reports, "figure": figure(reports["with"], reports["without"])}


def _explore(result: dict[str, Any], counts: str) -> int:
    return int(result[counts].get("explore", 0))


def figure(with_sandbox: dict[str, Any], without: dict[str, Any]) -> dict[str, Any]:
    """The approvals asked with the sandbox against the baseline without it, and what each solved."""
    on, off = with_sandbox["results"], without["results"]
    asked_on, asked_off = (sum(r["approvals_asked"] for r in rs) for rs in (on, off))
    solved_on, solved_off = ({r["id"] for r in rs if r["correct"]} for rs in (on, off))
    cut = round(100 * (asked_off - asked_on) / asked_off, 1) if asked_off else 0.0
    return {
        "tasks": len(on),
        "approvals_with": asked_on,
        "approvals_without": asked_off,
        "ratio": round(asked_on / asked_off, 3) if asked_off else None,
        "fewer_pct": cut,
        "goal_pct": GOAL_PCT,
        "goal_met": cut >= GOAL_PCT,
        "explores_with": sum(_explore(r, "tool_calls") for r in on),
        "explores_without": sum(_explore(r, "tool_calls") for r in off),
        "explore_approvals_with": sum(_explore(r, "approvals_by_tool") for r in on),
        "explore_approvals_without": sum(_explore(r, "approvals_by_tool") for r in off),
        "sandboxed_with": sum(r["sandboxed"] for r in on),
        "solved_with": len(solved_on),
        "solved_without": len(solved_off),
        "same_solved": solved_on == solved_off,
        "wall_s_mean_with": with_sandbox["summary"]["wall_s_mean"],
        "wall_s_mean_without": without["summary"]["wall_s_mean"],
    }


def sandbox_table(compared: dict[str, Any]) -> str:
    """Per task the looks and approvals without and with the sandbox, then the figure."""
    off = {r["id"]: r for r in compared["without"]["results"]}
    header = ("task", "looks", "asked without", "asked with", "solved without/with", "wall s without/with")
    rows = [header]
    for r in compared["with"]["results"]:
        base = off[r["id"]]
        rows.append(
            (
                r["id"],
                str(_explore(r, "tool_calls")),
                str(base["approvals_asked"]),
                str(r["approvals_asked"]),
                f"{'yes' if base['correct'] else 'no'}/{'yes' if r['correct'] else 'no'}",
                f"{base['wall_s']:.2f}/{r['wall_s']:.2f}",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    f = compared["figure"]
    settings = compared["with"]["settings"]
    lines += [
        "",
        f"{settings['model']} ({settings['mode']}, {settings['tool_calling']} tool calling), {compared['with']['date']}",
        f"approvals asked: {f['approvals_with']} with the sandbox, {f['approvals_without']} without it (the baseline, "
        f"this run): {f['ratio']}x, {f['fewer_pct']}% fewer prompts (goal: at least {f['goal_pct']:g}% fewer: "
        f"{'met' if f['goal_met'] else 'NOT met'})",
        f"explore: {f['explores_with']} looks with the sandbox, {f['explore_approvals_with']} asked "
        f"({f['sandboxed_with']} ran sandboxed); {f['explores_without']} looks without it, "
        f"{f['explore_approvals_without']} asked",
        f"solved: {f['solved_with']}/{f['tasks']} with the sandbox, {f['solved_without']}/{f['tasks']} without; the "
        f"same tasks: {'yes' if f['same_solved'] else 'NO'}",
        f"wall per task mean: {f['wall_s_mean_with']} s with the sandbox, {f['wall_s_mean_without']} s without "
        "(every approval answered at once)",
    ]
    return "\n".join(lines)
