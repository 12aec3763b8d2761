"""Rewind a thread to a step (issue 25): every later step undone newest first (kernel variables by
the one-step undo of agent_core.undo.steps, files from their pre-images, cells named for the panel to
remove) and the conversation forked from the checkpoint before the step (agent_core.loop.branches),
so the steps gone back over stay readable as another branch. A rewind can be undone while it is
still the thread's head; "try again from here" forks a new thread instead."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

from agent_core.contract.rewind import FileDiff, NotReversible, RewindRequest, RewindResult, RewindUndone
from agent_core.loop import branches
from agent_core.messages import Preimage
from agent_core.output_digest import bounded
from agent_core.rewind.rewind_plan import Planned, Situation, later_steps, plan, writes_files
from agent_core.tools.writes import MAX_DIFF_CHARS, unified_diff, write_atomic
from agent_core.undo.book import FileBefore, RewindRecord
from agent_core.undo.preimages import current, digest, revert
from agent_core.undo.steps import UndoRefused, undo_step
from agent_core.workspace import workspace_of

if TYPE_CHECKING:
    from agent_core.loop.thread_runner import ThreadRunner
    from agent_core.tools.base import ToolEnvironment

KERNEL_NOT_REDONE = (
    "kernel variables are not redone: the rewind set them back from the steps' snapshots, which are used up; run "
    "those cells again to redo them"
)


class RewindRefused(Exception):
    """Nothing to undo, or the thread moved on since the rewind (409)."""


async def _statuses(runner: ThreadRunner, thread_id: str, call_ids: list[str]) -> dict[str, str | None]:
    """What the ledger recorded of each call: "rejected" ones never ran, so nothing of them goes back."""
    found: dict[str, str | None] = {}
    for call_id in call_ids:
        outcome = await runner.store.ledger.lookup(thread_id, call_id)
        found[call_id] = outcome.status if outcome is not None else None
    return found


async def rewind(runner: ThreadRunner, thread_id: str, env: ToolEnvironment, request: RewindRequest) -> RewindResult:
    """Raises branches.NoSuchStep when the current branch has no such step."""
    point = await branches.fork_point(runner.graph, thread_id, request.to, request.user_message)
    head = await runner.snapshot(thread_id)
    steps = later_steps(point.later, await _statuses(runner, thread_id, branches.call_ids(point.later)))
    here = Situation(
        thread_id,
        runner.undo,
        await env.kernel_identity(),
        (head.values or {}).get("kernel_identity"),
        request.notebook,
        request.files,
    )
    planned = plan(steps, here)
    previous = branches.checkpoint_id(head)
    if request.dry_run:
        result = _result(planned, True, "", previous, [], [], [p.preimage["path"] for p in planned if p.preimage])
        result.file_diffs = await asyncio.to_thread(_file_diffs, workspace_of(env).root, planned)
        return result
    restored, removed, reverted, befores, kernel_steps = [], [], [], [], []
    failures: list[NotReversible] = []
    for step in planned:  # newest first: each step's state is the one the next older step left
        if step.undo_kernel:
            try:
                answer = await undo_step(runner.undo, env, thread_id, step.call_id)
            except UndoRefused as exc:
                failures.append(NotReversible(tool_call_id=step.call_id, why=f"kernel variables: {exc.message}"))
            else:
                restored += answer["restored"]
                removed += answer["removed"]
                kernel_steps.append(step.call_id)
        if step.preimage is not None:
            path = workspace_of(env).root / str(step.preimage["path"])
            before = await asyncio.to_thread(current, path)
            problem = await asyncio.to_thread(revert, path, step.preimage)
            if problem:
                failures.append(NotReversible(tool_call_id=step.call_id, why=problem))
            else:
                reverted.append(str(step.preimage["path"]))
                after = await asyncio.to_thread(current, path)
                befores.append(FileBefore(str(step.preimage["path"]), before, digest(after) if after else None))
    # The one-step undo left notes about steps the conversation no longer holds: one note instead.
    runner.undo.take_notes(thread_id)
    note = _note(planned, failures, request)
    if note:
        runner.undo.note(thread_id, note)
    branch = await branches.fork(
        runner.graph, thread_id, branches.checkpoint_id(point.snapshot), **{branches.REWOUND_FROM: previous}
    )
    runner.undo.rewound(thread_id, RewindRecord(branch, befores[::-1], kernel_steps))
    result = _result(planned, False, branch, previous, restored, removed, reverted, failures)
    result.kernel_undone = kernel_steps
    return result


def _result(
    planned: list[Planned],
    dry_run: bool,
    branch: str,
    previous: str,
    restored: list[str],
    removed: list[str],
    reverted: list[str],
    failures: list[NotReversible] | None = None,
) -> RewindResult:
    not_reversible = [NotReversible(tool_call_id=p.call_id, why=why) for p in planned for why in p.cannot]
    not_reversible += failures or []
    return RewindResult(
        dry_run=dry_run,
        steps=[p.card() for p in planned],
        restored=sorted(set(restored)),
        removed=sorted(set(removed)),
        cells_removed=[p.call_id for p in planned if p.remove_cell],
        files_reverted=reverted,
        not_reversible=not_reversible,
        branch=branch,
        previous_branch=previous,
    )


MAX_DIFFS = 20


def _file_diffs(root: Path, planned: list[Planned]) -> list[FileDiff]:
    """Per file, from its content now to the oldest pre-image in the range (what it goes back to)."""
    target: dict[str, Preimage] = {}
    for step in planned:  # newest first: the oldest pre-image of a file is the last one seen
        if step.preimage is not None:
            target[str(step.preimage["path"])] = step.preimage
    diffs = []
    for path, image in list(target.items())[:MAX_DIFFS]:
        now = current(root / path)
        text = now.decode("utf-8", errors="replace") if now is not None else ""
        diff = unified_diff(text, str(image.get("content", "")), path)
        diffs.append(FileDiff(path=path, diff=bounded(diff, MAX_DIFF_CHARS)))
    return diffs


def _note(planned: list[Planned], failures: list[NotReversible], request: RewindRequest) -> str:
    """What the model is told on the next run: only what still differs from the conversation it sees."""
    stays = [f"{p.call_id} ({p.name}): {why}" for p in planned for why in p.cannot] + [
        f"{f.tool_call_id}: {f.why}" for f in failures
    ]
    if request.files == "keep":
        stays += [f"{p.call_id} ({p.name}): its file changes were kept" for p in planned if writes_files(p.name)]
    if not stays:
        return ""
    return (
        "[The user went back to an earlier point of this conversation; the later steps were undone, except (still in "
        "effect): " + "; ".join(stays[:20]) + ".]"
    )


async def undo_rewind(runner: ThreadRunner, thread_id: str, env: ToolEnvironment) -> RewindUndone:
    """Make the branch the last rewind left the thread's again, while nothing ran after the rewind;
    its files too if this process made that rewind. Kernel variables are not redone."""
    head = await runner.snapshot(thread_id)
    previous = (head.metadata or {}).get(branches.REWOUND_FROM)
    if not previous:
        raise RewindRefused(
            "The thread's latest state is not a rewind (something ran after it, or it was never rewound): "
            "there is no rewind to undo. The earlier branches stay readable with GET branches."
        )
    branch = await branches.fork(runner.graph, thread_id, str(previous))
    record = runner.undo.rewinds.pop(thread_id, None)
    mine = record is not None and record.branch == branches.checkpoint_id(head)
    restored, not_restored = [], []
    for before in record.files if record is not None and mine else []:
        problem = await asyncio.to_thread(_put_back, workspace_of(env).root / before.path, before)
        if problem:
            not_restored.append(f"{before.path}: {problem}")
        else:
            restored.append(before.path)
    if not mine:
        not_restored.append(
            "files the rewind put back (if any) stay as it left them: this server did not make it, or restarted since"
        )
    if record is None or record.kernel_steps:
        not_restored.append(KERNEL_NOT_REDONE)
    runner.undo.take_notes(thread_id)
    runner.undo.note(
        thread_id,
        "[The user undid going back: the conversation continues from its latest step again, but kernel variables the "
        "rewind restored were not redone; check them before relying on them.]",
    )
    return RewindUndone(
        branch=branch, undid=branches.checkpoint_id(head), files_restored=restored, not_restored=not_restored
    )


def _put_back(path: Path, before: FileBefore) -> str | None:
    """The file as the rewind found it, unless it changed since the rewind (then the reason)."""
    now = current(path)
    if (digest(now) if now is not None else None) != before.left:
        return "changed since the rewind, so left as it is"
    if before.data is not None:
        write_atomic(path, before.data)
    elif now is not None:
        path.unlink()
    return None
