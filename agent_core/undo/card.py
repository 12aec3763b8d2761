"""The approval card's `impact` (contract.review.Impact): what the static analysis finds in the code,
the workspace rules it appears to break, and whether the step can be undone in the kernel, decided
up front from the sizes and types of the variables it would change (asked of the kernel silently)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agent_core.environment import ToolInputError
from agent_core.impact.analysis import analyze_code
from agent_core.impact.rules import rule_from_rejection, rule_warnings
from agent_core.json_types import JsonObject, json_items
from agent_core.undo import kernel_calls
from agent_core.undo.calls import StepCall
from agent_core.undo.rules import rules_of

if TYPE_CHECKING:
    from agent_core.impact.analysis import CodeImpact

log = logging.getLogger(__name__)

FINDING_KINDS = ("reads", "assigns", "mutates", "deletes", "files_written", "network", "installs", "shell", "unknown")
OUTSIDE_KINDS = {
    "files_written": "files written",
    "network": "network access",
    "installs": "package installs",
    "shell": "shell commands",
    "unknown": "effects the analysis cannot see",
}
MAX_LISTED = 5


@dataclass(frozen=True)
class Undoability:
    undoable: bool
    reason: str | None = None  # why not; or, when undoable, what an undo leaves as it is


def findings(impact: CodeImpact) -> dict[str, list[JsonObject]]:
    return {kind: [{"name": f.name, "line": f.line} for f in getattr(impact, kind)] for kind in FINDING_KINDS}


def not_undone(impact: CodeImpact) -> list[str]:
    """The effects outside the kernel an undo leaves as they are, one line per kind."""
    lines = []
    for kind, label in OUTSIDE_KINDS.items():
        items = getattr(impact, kind)
        if items:
            shown = ", ".join(f"{f.name} (line {f.line})" for f in items[:MAX_LISTED])
            more = f" and {len(items) - MAX_LISTED} more" if len(items) > MAX_LISTED else ""
            lines.append(f"{label}: {shown}{more}")
    return lines


def limit_bytes(ctx: StepCall) -> int:
    return ctx.settings.undo_snapshot_limit_mb * kernel_calls.MB


async def undoability(impact: CodeImpact, ctx: StepCall) -> Undoability:
    """Whether the kernel part can be undone, from the kernel's sizes of the names the cell changes and
    the types of those it changes in place or calls methods on (a generator's state cannot be saved)."""
    if impact.parse_error:
        return Undoability(
            False, f"the code could not be analysed ({impact.parse_error}), so what it changes is unknown"
        )
    cap = limit_bytes(ctx)
    if cap <= 0:
        return Undoability(False, "undo snapshots are turned off (undo_snapshot_limit_mb = 0)")
    names, check = list(impact.changed_names()), list(impact.touched_names())
    problems: list[str] = []
    notes: list[str] = []
    if names or check:
        try:
            answer = await kernel_calls.measure(ctx.env, names, cap, list(impact.mutated_names()), check)
        except ToolInputError as exc:
            if names:
                return Undoability(False, f"the kernel could not be asked for the variables' sizes: {exc}")
            # Only names the cell may change (`df.head()`, `gen.send(None)`): the snapshot taken before
            # the cell runs checks them again and says so if it cannot keep them.
            shown = ", ".join(check[:MAX_LISTED]) + (", …" if len(check) > MAX_LISTED else "")
            notes.append(
                f"the kernel could not be asked ({exc}) whether {shown} can be saved; the snapshot before the cell runs will tell"
            )
        else:
            problems = [str(p) for p in json_items(answer.get("problems"))]
    if problems:
        return Undoability(False, "; ".join(problems))
    outside = not_undone(impact)
    if outside:
        notes.insert(0, "Undo restores the kernel's variables but not: " + "; ".join(outside))
    return Undoability(True, "; ".join(notes) if notes else None)


def warnings_for(impact: CodeImpact, ctx: StepCall) -> list[str]:
    rules = rules_of(ctx.env.root_dir)
    return list(rule_warnings(rules, impact)) if rules else []


def suggestion(impact: CodeImpact) -> str | None:
    return rule_from_rejection(impact, "") or None


async def code_impact(code: str, ctx: StepCall) -> JsonObject:
    """The card's `impact` for a cell's code (run_cell, edit_cell)."""
    impact = analyze_code(code)
    undo = await undoability(impact, ctx)
    return {
        **findings(impact),
        "parse_error": impact.parse_error,
        "undoable": undo.undoable,
        "not_undoable_reason": undo.reason,
        "rule_warnings": warnings_for(impact, ctx),
        "suggested_rule": suggestion(impact),
    }


def command_impact(command: str, ctx: StepCall) -> JsonObject:
    """The card's `impact` for a shell command: analysed as the `!` line a cell would hold, so an
    install is recognised as one; it runs outside the kernel, so nothing of it can be undone."""
    impact = analyze_code("!" + " ".join(command.splitlines()))
    return {
        **findings(impact),
        "parse_error": None,
        "undoable": False,
        "not_undoable_reason": "a shell command runs outside the kernel: its effects cannot be undone",
        "rule_warnings": warnings_for(impact, ctx),
        "suggested_rule": suggestion(impact),
    }
