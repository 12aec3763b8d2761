"""The benchmark's output: a summary of a run, its table, and the comparison of two runs' JSON files."""

from __future__ import annotations

from statistics import mean, median
from typing import Any

from bench.agent_tasks.tasks import LEVELS


def _mean(values: list[float]) -> float | None:
    return round(mean(values), 3) if values else None


def summary(results: list[dict[str, Any]]) -> dict[str, Any]:
    done = len(results)
    correct = sum(r["correct"] for r in results)
    levels = {
        level: f"{sum(r['correct'] for r in rs)}/{len(rs)}"
        for level in LEVELS
        if (rs := [r for r in results if r["level"] == level])
    }
    checked = [r for r in results if r["reruns"] is not None]
    return {
        "tasks": done,
        "correct": correct,
        "score_pct": round(100 * correct / done, 1) if done else 0.0,
        "by_level": levels,
        "model_calls": sum(r["model_calls"] for r in results),
        "approvals_asked": sum(r["approvals_asked"] for r in results),
        "approvals_rejected": sum(r["approvals_rejected"] for r in results),
        "prompt_tokens": sum(r["prompt_tokens"] for r in results),
        "completion_tokens": sum(r["completion_tokens"] for r in results),
        "wall_s_mean": _mean([r["wall_s"] for r in results]),
        "wall_s_median": round(median([r["wall_s"] for r in results]), 3) if results else None,
        "first_token_s_mean": _mean([r["first_token_s"] for r in results if r["first_token_s"] is not None]),
        "reruns_verified": f"{sum(r['reruns'] == 'verified' for r in checked)}/{len(checked)}",
        "verify_s_mean": _mean([r["verify_s"] for r in checked]),
        "runner_overhead_s_mean": _mean([r["overhead_s"] for r in results]),
        "errors": sum(bool(r["error"]) for r in results),
    }


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


COLUMNS = [
    ("task", "id"),
    ("level", "level"),
    ("correct", "correct"),
    ("calls", "model_calls"),
    ("asked", "approvals_asked"),
    ("rejected", "approvals_rejected"),
    ("tokens", "tokens"),
    ("wall s", "wall_s"),
    ("1st token s", "first_token_s"),
    ("re-runs", "reruns"),
    ("overhead s", "overhead_s"),
]


def table(report: dict[str, Any]) -> str:
    """The run as a plain-text table, one row per task, then the summary."""
    rows = [[name for name, _ in COLUMNS]]
    for r in report["results"]:
        values = {**r, "tokens": r["prompt_tokens"] + r["completion_tokens"]}
        if r["reruns"] not in (None, "verified") and r.get("rerun_at_cell"):
            values["reruns"] = f"{r['reruns']}@{r['rerun_at_cell']}"
        rows.append([_cell(values[key]) for _, key in COLUMNS])
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    s, settings = report["summary"], report["settings"]
    lines += [
        "",
        f"{settings['model']} at {settings['base_url']} ({settings['mode']}, {settings['tool_calling']} tool calling, "
        f"{settings['policy']}{', kernels forked (test run)' if settings.get('forked_kernels') else ''}), "
        f"{report['date']}",
        f"score {s['correct']}/{s['tasks']} = {s['score_pct']}% (by level {s['by_level']}); model calls "
        f"{s['model_calls']}, approvals {s['approvals_asked']} asked / {s['approvals_rejected']} rejected, tokens "
        f"{s['prompt_tokens']} + {s['completion_tokens']}",
        f"wall per task mean {s['wall_s_mean']} s (median {s['wall_s_median']}), first token mean "
        f"{s['first_token_s_mean']} s; notebooks that re-run {s['reruns_verified']} (verify mean "
        f"{s['verify_s_mean']} s); runner overhead per task mean {s['runner_overhead_s_mean']} s; errors {s['errors']}",
    ]
    return "\n".join(lines)


def compare(a: dict[str, Any], b: dict[str, Any]) -> str:
    """Two runs side by side: the summaries, then every task whose correctness differs."""
    sa, sb = a["summary"], b["summary"]
    name_a = f"A: {a['settings']['model']} ({a['date']})"
    name_b = f"B: {b['settings']['model']} ({b['date']})"
    lines = [name_a, name_b, ""]
    for key in (
        "score_pct",
        "correct",
        "tasks",
        "model_calls",
        "prompt_tokens",
        "completion_tokens",
        "wall_s_mean",
        "first_token_s_mean",
        "reruns_verified",
        "runner_overhead_s_mean",
    ):
        lines.append(f"{key:<24} {_cell(sa.get(key)):>12} {_cell(sb.get(key)):>12}")
    by_a = {r["id"]: r for r in a["results"]}
    by_b = {r["id"]: r for r in b["results"]}
    changed = [
        f"  {task:<28} A {_cell(by_a[task]['correct']):<4} B {_cell(by_b[task]['correct'])}"
        for task in by_a
        if task in by_b and by_a[task]["correct"] != by_b[task]["correct"]
    ]
    only = sorted(set(by_a) ^ set(by_b))
    lines += ["", f"tasks whose result differs: {len(changed)}", *changed]
    if only:
        lines.append(f"tasks in one run only: {', '.join(only)}")
    return "\n".join(lines)
