"""Snapshots before a step, undo after it. Before an approved cell runs, the variables the analysis
says it assigns, mutates or deletes are copied in the kernel (kernel_calls.take) and the names it
may create are noted as absent; this process remembers the step (its kernel, a token, what an undo
leaves), and an undo restores the values, deletes the created names and leaves a note for the
agent's next run. A restarted kernel, a second undo or a store a cell replaced is refused with the
reason (UndoRefused). The records are in memory, in the book of the run's driver (UndoBook,
agent_core/undo/book.py: the run's RunContext carries it to the tools): a snapshot lives in a kernel,
which does not outlive this process's kernels either."""

from __future__ import annotations

import logging
import secrets
from dataclasses import replace
from typing import TypedDict, get_args

from agent_core.contract.choices import UndoRefusal
from agent_core.environment import CellPlacement, ToolEnvironment, ToolInputError
from agent_core.impact.analysis import CodeImpact, analyze_code
from agent_core.json_types import JsonObject, json_items
from agent_core.messages import CONTEXT_KEY, Message
from agent_core.undo import card, kernel_calls
from agent_core.undo.book import StepRecord, UndoBook
from agent_core.undo.calls import StepCall

log = logging.getLogger(__name__)


class UndoRefused(Exception):
    """The step cannot be undone (any more); `kind` is the error kind, `status` the HTTP status."""

    def __init__(self, message: str, kind: UndoRefusal = "not_undoable", status: int = 409) -> None:
        super().__init__(message)
        self.message, self.kind, self.status = message, kind, status


def _provenance(ctx: StepCall, undoable: bool, reason: str | None) -> JsonObject:
    run = ctx.run
    agent = getattr(getattr(run, "agent", None), "name", "main")
    decision = ctx.decision
    proposed = (ctx.proposed_args or {}).get("code", (ctx.proposed_args or {}).get("source"))
    provenance: JsonObject = {
        "thread_id": str(getattr(run, "thread_id", "") or ""),
        "tool_call_id": ctx.call_id,
        "model": getattr(run, "driver", "") or ctx.settings.model,
        "agent": agent,
        "decision": decision,
        "undoable": undoable,
    }
    if decision == "edited" and isinstance(proposed, str):
        provenance["edited_from"] = proposed[:100_000]
    if reason:
        provenance["not_undoable_reason"] = reason
    return provenance


async def before_cell(code: str, ctx: StepCall, placement: CellPlacement) -> CellPlacement:
    """Snapshot what the approved cell will change; the placement carries the cell's provenance.
    Never fails the cell: a step without a snapshot runs, and says it cannot be undone."""
    thread_id = ctx.thread_id
    book = ctx.run.undo if ctx.run is not None else None
    impact = analyze_code(code)
    if not thread_id or book is None:  # a tool called outside a run (no driver keeps its step)
        undo = card.Undoability(False, "this step belongs to no thread")
    elif impact.parse_error or card.limit_bytes(ctx) <= 0:
        undo = await card.undoability(impact, ctx)  # says why, without asking the kernel
    else:
        try:
            undo = await _snapshot(book, impact, thread_id, ctx, placement)
        except ToolInputError as exc:
            undo = card.Undoability(False, f"no snapshot could be taken: {exc}")
    if thread_id and book is not None and not undo.undoable:  # an undo of it is refused with this reason
        book.keep(
            StepRecord(
                thread_id,
                ctx.call_id,
                "",
                None,
                [],
                placement.cell_id,
                placement.edit,
                refused=undo.reason or "not undoable",
            )
        )
    return replace(placement, provenance=_provenance(ctx, undo.undoable, undo.reason))


async def _snapshot(
    book: UndoBook, impact: CodeImpact, thread_id: str, ctx: StepCall, placement: CellPlacement
) -> card.Undoability:
    names = sorted(set(impact.changed_names()) | set(impact.created_names()))
    check = list(impact.touched_names())  # the kernel keeps the iterators among them, refuses what cannot be saved
    # A cell that binds no name and calls nothing on one (`pass`, a plot) has nothing to keep: the kernel is not asked.
    token = secrets.token_hex(16) if names or check else ""
    answer: JsonObject = (
        await kernel_calls.take(
            ctx.env, thread_id, ctx.call_id, token, names, card.limit_bytes(ctx), list(impact.mutated_names()), check
        )
        if names or check
        else {"ok": True}
    )
    if not answer.get("ok"):
        return card.Undoability(False, str(answer.get("problem") or "the snapshot failed"))
    outside = card.not_undone(impact)
    book.keep(
        StepRecord(
            thread_id, ctx.call_id, token, await ctx.env.kernel_identity(), outside, placement.cell_id, placement.edit
        )
    )
    for gone in json_items(answer.get("evicted")):
        book.steps.pop((thread_id, str(gone)), None)
    reason = ("Undo restores the kernel's variables but not: " + "; ".join(outside)) if outside else None
    return card.Undoability(True, reason)


class UndoneStep(TypedDict):
    """What undoing a step did: the contract's UndoResult, and the fields of its step_undone event."""

    restored: list[str]
    removed: list[str]
    not_undone: list[str]
    cell_id: str | None
    edit: bool


async def undo_step(book: UndoBook, env: ToolEnvironment, thread_id: str, call_id: str) -> UndoneStep:
    """Undo one step (as `book` recorded it) in the kernel; the answer of POST threads/{id}/undo/{call_id}."""
    record = book.steps.get((thread_id, call_id))
    if record is None:
        raise UndoRefused(
            "No snapshot was kept for this step (it was not undoable, it ran before the server restarted, or it "
            "was dropped to save memory), so it cannot be undone.",
            "no_snapshot",
        )
    if record.refused is not None:
        raise UndoRefused(
            f"No snapshot was kept for this step ({record.refused}), so it cannot be undone.", "no_snapshot"
        )
    if record.undone:
        raise UndoRefused("This step was already undone.", "already_undone")
    now = await env.kernel_identity()
    if record.kernel is not None and now != record.kernel:
        raise UndoRefused(
            "The kernel restarted (or is not running) since this step ran: its snapshot is gone, so the step cannot "
            "be undone any more.",
            "kernel_restarted",
        )
    try:
        answer: JsonObject = (
            await kernel_calls.undo(env, thread_id, call_id, record.token) if record.token else {"ok": True}
        )
    except ToolInputError as exc:
        raise UndoRefused(f"The kernel could not undo the step: {exc}.", "kernel_unavailable") from None
    if not answer.get("ok"):
        kind = _refusal(answer.get("kind"))
        if kind in ("already_undone", "kernel_restarted", "snapshot_store_changed"):
            record.undone = True
        raise UndoRefused(f"This step cannot be undone: {answer.get('problem')}.", kind)
    record.undone = True
    result: UndoneStep = {
        "restored": [str(n) for n in json_items(answer.get("restored"))],
        "removed": [str(n) for n in json_items(answer.get("removed"))],
        "not_undone": list(record.not_undone),
        "cell_id": record.cell_id,
        "edit": record.edit,
    }
    book.note(thread_id, undo_note(call_id, result))
    return result


def _refusal(kind: object) -> UndoRefusal:
    """The kernel's refusal as an UndoRefusal; one the contract does not list (a kernel of another
    version, a cell's forgery) is plain not_undoable."""
    for known in get_args(UndoRefusal.__value__):
        if kind == known:
            return known
    return "not_undoable"


def undo_note(call_id: str, result: UndoneStep) -> str:
    parts = [
        f"restored {', '.join(result['restored'])}" if result["restored"] else "",
        f"deleted {', '.join(result['removed'])}" if result["removed"] else "",
    ]
    done = "; ".join(p for p in parts if p) or "nothing in the kernel changed back"
    left = f" Not undone (still in effect): {'; '.join(result['not_undone'])}." if result["not_undone"] else ""
    cell = " Its cell was removed from the notebook." if result["cell_id"] and not result["edit"] else ""
    return (
        f"[The user undid step {call_id} (a cell you ran): {done}.{cell}{left} Do not rely on that step's results; "
        "run it again if you still need them.]"
    )


def pending_notes(book: UndoBook, thread_id: str) -> list[Message]:
    """Context messages for the thread's next run: the steps the user undid since the last one."""
    return [{"role": "user", "content": text, CONTEXT_KEY: True} for text in book.take_notes(thread_id)]


async def forget_thread(book: UndoBook, env: ToolEnvironment | None, thread_id: str) -> None:
    """The thread ended (deleted): drop its snapshots in the kernel and its records in `book`."""
    book.forget_thread(thread_id)
    if env is None:
        return
    try:
        await kernel_calls.drop(env, thread_id)
    except ToolInputError as exc:
        log.info("snapshots of thread %s not dropped: %s", thread_id, exc)
