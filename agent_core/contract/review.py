"""The shapes of review and undo (issue 12): what the approval card says a cell will touch
(`impact`), where a notebook cell the agent wrote came from (`provenance` on cell_started, written
into the cell's nbformat metadata under `cellwright`), what undoing a step did, and what a rewind did."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from agent_core.contract.shared import WireModel


class ImpactItem(WireModel):
    name: str = Field(description="A variable, a file, a host, a package or a command, as the code names it.")
    line: int = Field(description="The line of the cell it comes from (1-based).")


class Impact(WireModel):
    """Static analysis of a cell's code (Python's ast; magics and ! lines recognised). What the
    analysis cannot tell is listed under `unknown`, never guessed as safe."""

    reads: list[ImpactItem]
    assigns: list[ImpactItem]
    mutates: list[ImpactItem] = Field(
        description="Changed in place: method calls such as inplace=True, item or attribute assignment."
    )
    deletes: list[ImpactItem]
    files_written: list[ImpactItem]
    network: list[ImpactItem]
    installs: list[ImpactItem]
    shell: list[ImpactItem]
    unknown: list[ImpactItem] = Field(description="Effects the analysis cannot see through (exec, a parse error, ...).")
    parse_error: str | None = None
    undoable: bool = Field(
        description="The kernel part of the step can be undone (its changed variables can be snapshotted)."
    )
    not_undoable_reason: str | None = Field(
        default=None,
        description="Why the step cannot be undone in the kernel, or which effects an undo leaves (files, network...).",
    )
    rule_warnings: list[str] = Field(description="Workspace rules (.cellwright/rules.md) this call appears to break.")
    suggested_rule: str | None = Field(
        default=None, description='What "Save as rule" offers when the user rejects this call without a reason.'
    )


ProvenanceDecision = Literal["approved", "edited", "auto_approved"]


class Provenance(WireModel):
    """Where an agent-written cell came from: the panel writes it, with the event's thread_id and
    run_id, into the cell's metadata as `cellwright`."""

    thread_id: str
    tool_call_id: str
    model: str
    agent: str
    decision: ProvenanceDecision
    edited_from: str | None = Field(default=None, description='decision "edited": the code the agent proposed.')
    undoable: bool = Field(
        description="A snapshot of the variables the cell changes was kept: POST undo can restore them."
    )
    not_undoable_reason: str | None = None


class UndoResult(WireModel):
    """POST threads/{id}/undo/{tool_call_id}; also the `step_undone` event."""

    restored: list[str] = Field(description="Variables set back to their value before the step.")
    removed: list[str] = Field(description="Variables the step created, deleted again.")
    not_undone: list[str] = Field(
        description="Effects outside the kernel that stay (files written, network, installs, shell)."
    )
    cell_id: str | None = Field(
        default=None, description="The step's notebook cell: removed, or (edit) given its previous source back."
    )
    edit: bool = Field(
        default=False, description="The step edited an existing cell (edit_cell) rather than adding one."
    )


# -- rewind (issue 25): agent_core/contract/rewind.py has its bodies and branches


class NotReversible(WireModel):
    tool_call_id: str
    why: str


class RewindStep(WireModel):
    """One later step, as the rewind card lists it (newest first)."""

    tool_call_id: str
    name: str = Field(description="The tool it called.")
    restores: list[str] = Field(description="What going back restores for this step, one line each.")
    cannot: list[str] = Field(description="What stays as it is (shell, network, installs, a lost snapshot...).")


class FileDiff(WireModel):
    path: str
    diff: str = Field(description="Unified diff from the file as it is now to the file as going back leaves it.")


class RewindResult(WireModel):
    """POST threads/{id}/rewind (with dry_run: what would happen); also the `rewound` event's fields."""

    dry_run: bool
    steps: list[RewindStep] = Field(description="The steps gone back over, newest first.")
    restored: list[str] = Field(description="Kernel variables set back.")
    removed: list[str] = Field(description="Kernel variables the steps created, deleted again.")
    cells_removed: list[str] = Field(
        description="Tool call ids whose notebook cells the panel removes, or gives their source from before back "
        "(edit_cell), as for an undone step (notebook: revert)."
    )
    files_reverted: list[str] = Field(description="Paths put back as they were before the steps (files: revert).")
    kernel_undone: list[str] = Field(
        default_factory=list,
        description="Tool call ids whose kernel variables went back: their one-step undo is spent, also after "
        "the rewind is undone (that does not redo them).",
    )
    file_diffs: list[FileDiff] = Field(
        default_factory=list, description="dry_run with files: revert: what going back changes in each file."
    )
    not_reversible: list[NotReversible]
    branch: str = Field(description="The thread's branch after the rewind (empty on a dry run).")
    previous_branch: str = Field(description="The branch gone back from: still readable (GET branches).")


class RewindUndone(WireModel):
    """POST threads/{id}/rewind/undo: the branch the rewind left is the thread's again."""

    branch: str
    undid: str = Field(description="The branch the undone rewind had made (its `rewound` event's `branch`).")
    files_restored: list[str] = Field(description="Files put back as they were just before the rewind.")
    not_restored: list[str] = Field(description="What the undo cannot bring back, e.g. the kernel's variables.")
