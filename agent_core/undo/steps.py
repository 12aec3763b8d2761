"""Snapshots before a step, undo after it. Before an approved cell runs, the variables the analysis
says it assigns, mutates or deletes are copied in the kernel (kernel_calls.take) and the names it
may create are noted as absent; this process remembers the step (its kernel, a token, what an undo
leaves), and an undo restores the values, deletes the created names and leaves a note for the
agent's next run. A restarted kernel, a second undo or a store a cell replaced is refused with the
reason (UndoRefused). The records are in memory: a snapshot lives in a kernel, which does not
outlive this process's kernels either."""

from __future__ import annotations

import logging
import secrets
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, get_args

from agent_core.contract.choices import UndoRefusal
from agent_core.tools.base import CellPlacement, ToolContext, ToolEnvironment, ToolInputError
from agent_core.undo import card, kernel_calls

log = logging.getLogger(__name__)

STEPS_KEPT = 2000  # step records in this process (each is a few hundred bytes)
NOTES_KEPT = 20  # undo notes waiting for a thread's next run


class UndoRefused(Exception):
    """The step cannot be undone (any more); `kind` is the error kind, `status` the HTTP status."""

    def __init__(self, message: str, kind: UndoRefusal = "not_undoable", status: int = 409) -> None:
        super().__init__(message)
        self.message, self.kind, self.status = message, kind, status


@dataclass
class StepRecord:
    thread_id: str
    call_id: str
    token: str  # the kernel's snapshot must carry it: a cell cannot forge a snapshot for this step ("": none kept)
    kernel: str | None  # the kernel process it was taken in (a restart loses it)
    not_undone: list[str]
    cell_id: str | None = None
    edit: bool = False
    undone: bool = False
    refused: str | None = None  # no snapshot was kept: why (an undo says so, never that it restored anything)


@dataclass
class UndoBook:
    """This process's step records and the notes for the next runs, both bounded."""

    steps: OrderedDict[tuple[str, str], StepRecord] = field(default_factory=OrderedDict)
    notes: dict[str, list[str]] = field(default_factory=dict)

    def keep(self, record: StepRecord) -> None:
        self.steps[(record.thread_id, record.call_id)] = record
        while len(self.steps) > STEPS_KEPT:
            self.steps.popitem(last=False)

    def knows(self, thread_id: str, call_id: str) -> bool:
        return (thread_id, call_id) in self.steps

    def note(self, thread_id: str, text: str) -> None:
        self.notes[thread_id] = [*self.notes.get(thread_id, []), text][-NOTES_KEPT:]

    def take_notes(self, thread_id: str) -> list[str]:
        return self.notes.pop(thread_id, [])

    def forget_thread(self, thread_id: str) -> None:
        for key in [key for key in self.steps if key[0] == thread_id]:
            del self.steps[key]
        self.notes.pop(thread_id, None)


BOOK = UndoBook()


def _provenance(ctx: ToolContext, undoable: bool, reason: str | None) -> dict[str, Any]:
    run = ctx.run
    agent = getattr(getattr(run, "agent", None), "name", "main")
    decision = ctx.decision
    proposed = (ctx.proposed_args or {}).get("code", (ctx.proposed_args or {}).get("source"))
    provenance: dict[str, Any] = {
        "thread_id": str(getattr(run, "thread_id", "") or ""),
        "tool_call_id": ctx.call_id,
        "model": ctx.settings.model,
        "agent": agent,
        "decision": decision,
        "undoable": undoable,
    }
    if decision == "edited" and isinstance(proposed, str):
        provenance["edited_from"] = proposed[:100_000]
    if reason:
        provenance["not_undoable_reason"] = reason
    return provenance


async def before_cell(code: str, ctx: ToolContext, placement: CellPlacement) -> CellPlacement:
    """Snapshot what the approved cell will change; the placement carries the cell's provenance.
    Never fails the cell: a step without a snapshot runs, and says it cannot be undone."""
    from dataclasses import replace

    from agent_core.impact.analysis import analyze_code

    thread_id = ctx.thread_id
    impact = analyze_code(code)
    if not thread_id:
        undo = card.Undoability(False, "this step belongs to no thread")
    elif impact.parse_error or card.limit_bytes(ctx) <= 0:
        undo = await card.undoability(impact, ctx)  # says why, without asking the kernel
    else:
        try:
            undo = await _snapshot(impact, thread_id, ctx, placement)
        except ToolInputError as exc:
            undo = card.Undoability(False, f"no snapshot could be taken: {exc}")
    if thread_id and not undo.undoable:  # an undo of it is refused with this reason
        BOOK.keep(
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


async def _snapshot(impact: Any, thread_id: str, ctx: ToolContext, placement: CellPlacement) -> card.Undoability:
    names = sorted(set(impact.changed_names()) | set(impact.created_names()))
    check = list(impact.touched_names())  # the kernel keeps the iterators among them, refuses what cannot be saved
    # A cell that binds no name and calls nothing on one (`pass`, a plot) has nothing to keep: the kernel is not asked.
    token = secrets.token_hex(16) if names or check else ""
    answer: dict[str, Any] = (
        await kernel_calls.take(
            ctx.env, thread_id, ctx.call_id, token, names, card.limit_bytes(ctx), list(impact.mutated_names()), check
        )
        if names or check
        else {"ok": True}
    )
    if not answer.get("ok"):
        return card.Undoability(False, str(answer.get("problem") or "the snapshot failed"))
    outside = card.not_undone(impact)
    BOOK.keep(
        StepRecord(
            thread_id, ctx.call_id, token, await ctx.env.kernel_identity(), outside, placement.cell_id, placement.edit
        )
    )
    for gone in answer.get("evicted", []):
        BOOK.steps.pop((thread_id, str(gone)), None)
    reason = ("Undo restores the kernel's variables but not: " + "; ".join(outside)) if outside else None
    return card.Undoability(True, reason)


async def undo_step(env: ToolEnvironment, thread_id: str, call_id: str) -> dict[str, Any]:
    """Undo one step in the kernel; the answer of POST threads/{id}/undo/{call_id}."""
    record = BOOK.steps.get((thread_id, call_id))
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
        answer: dict[str, Any] = (
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
    result = {
        "restored": [str(n) for n in answer.get("restored", [])],
        "removed": [str(n) for n in answer.get("removed", [])],
        "not_undone": list(record.not_undone),
        "cell_id": record.cell_id,
        "edit": record.edit,
    }
    BOOK.note(thread_id, undo_note(call_id, result))
    return result


def _refusal(kind: Any) -> UndoRefusal:
    """The kernel's refusal as an UndoRefusal; one the contract does not list (a kernel of another
    version, a cell's forgery) is plain not_undoable."""
    for known in get_args(UndoRefusal.__value__):
        if kind == known:
            return known
    return "not_undoable"


def undo_note(call_id: str, result: dict[str, Any]) -> str:
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


def pending_notes(thread_id: str) -> list[dict[str, Any]]:
    """Context messages for the thread's next run: the steps the user undid since the last one."""
    from agent_core.loop.mentions import CONTEXT_KEY

    return [{"role": "user", "content": text, CONTEXT_KEY: True} for text in BOOK.take_notes(thread_id)]


async def forget_thread(env: ToolEnvironment | None, thread_id: str) -> None:
    """The thread ended (deleted): drop its snapshots in the kernel and its records here."""
    BOOK.forget_thread(thread_id)
    if env is None:
        return
    try:
        await kernel_calls.drop(env, thread_id)
    except ToolInputError as exc:
        log.info("snapshots of thread %s not dropped: %s", thread_id, exc)
