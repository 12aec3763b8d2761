"""Rewind, its undo, branches and fork on the server (issue 25): each between runs, on the owner's
thread (RunManager.idle_thread), with agent_core.rewind.rewind doing the work and its event going into
the thread's log; agent_core's refusals become the HTTP errors here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_core.workspace import workspace_of

from .errors import Conflict, NotFound

if TYPE_CHECKING:
    from agent_core.contract.rewind import (
        BranchDetail,
        BranchList,
        Forked,
        ForkRequest,
        RewindRequest,
        RewindResult,
        RewindUndone,
        ThreadDiff,
    )

    from .run_manager import RunManager

BUSY = "A run of this thread is active: go back once it has finished or stopped."
MAX_BRANCH_ID = 64
MAX_THREAD_EVENTS = 100_000  # of one thread read for its cells, or for a fork's copy


async def rewind(runs: RunManager, thread_id: str, request: RewindRequest) -> RewindResult:
    # langgraph and the undo, branch and rewind modules load on the first request: the server starts without them
    # (bench/server_start.py)
    from agent_core.contract import make_event
    from agent_core.loop.branches import NoSuchStep
    from agent_core.loop.thread_view import pending_approval
    from agent_core.rewind.rewind import rewind as go_back

    async with runs.idle_thread(thread_id, BUSY) as (record, runner):
        if pending_approval(await runner.snapshot(thread_id)) is not None and not request.dry_run:
            raise Conflict(
                "This thread waits for your approval of a tool call: reject it or press Stop, then go back.",
                "approval_pending",
            )
        try:
            result = await go_back(runner, thread_id, runs.environment_of(record), request)
        except NoSuchStep as exc:
            raise NotFound(f"Cannot go back: {exc}.", "step_not_found") from None
        if not result.dry_run:
            await runs.log_event(record, make_event("rewound", **result.model_dump()))
        return result


async def undo_rewind(runs: RunManager, thread_id: str) -> RewindUndone:
    from agent_core.contract import make_event
    from agent_core.rewind.rewind import RewindRefused
    from agent_core.rewind.rewind import undo_rewind as undo

    async with runs.idle_thread(thread_id, BUSY) as (record, runner):
        try:
            result = await undo(runner, thread_id, runs.environment_of(record))
        except RewindRefused as exc:
            raise Conflict(str(exc), "conflict") from None
        await runs.log_event(record, make_event("rewind_undone", **result.model_dump()))
        return result


async def branches(runs: RunManager, thread_id: str) -> BranchList:
    from agent_core.contract.rewind import BranchList
    from agent_core.loop import branches as tree

    await runs.thread(thread_id)
    runner = await runs.runner()
    return BranchList.model_validate({"branches": await tree.branches(runner.graph, thread_id)})


async def branch(runs: RunManager, thread_id: str, branch_id: str) -> BranchDetail:
    """A branch's conversation as GET threads/{id} shows messages ("show the earlier attempt")."""
    from agent_core.contract.rewind import BranchDetail
    from agent_core.loop import branches as tree
    from agent_core.loop.thread_view import visible_messages

    await runs.thread(thread_id)
    snapshot = await tree.read_branch((await runs.runner()).graph, thread_id, branch_id[:MAX_BRANCH_ID])
    if snapshot is None:
        raise NotFound(
            f"Thread {thread_id!r} has no branch {branch_id[:MAX_BRANCH_ID]!r}: list them with GET branches.",
            "not_found",
        )
    messages = visible_messages(tree.messages_of(snapshot))
    return BranchDetail.model_validate({"branch": branch_id, "messages": messages})


async def fork(runs: RunManager, thread_id: str, request: ForkRequest) -> Forked:
    """ "Try again from here": a new thread with this one's conversation up to just before the step;
    nothing is undone and this thread stays as it is."""
    from agent_core.contract.rewind import Forked
    from agent_core.loop import branches as tree
    from agent_core.loop.fork_log import forked_log

    record = await runs.thread(thread_id)
    runner = await runs.runner()
    try:
        point = await tree.fork_point(runner.graph, thread_id, request.from_, None)
    except tree.NoSuchStep as exc:
        raise NotFound(f"Cannot fork: {exc}.", "step_not_found") from None
    new = await runs.threads.create(record.notebook_path, f"{record.title} (again)"[:500])
    if record.kernel_id:
        await runs.threads.update(new.thread_id, kernel_id=record.kernel_id)
    origin = f"{thread_id}:{request.from_}"
    await tree.copy_into(runner.graph, point.snapshot, new.thread_id, origin)
    left_out = set(tree.call_ids(point.later))  # the step and every step after it
    events = await runs.threads.events.events_after(thread_id, 0, MAX_THREAD_EVENTS)
    log = forked_log(events, left_out, thread_id, request.from_, record.title or "")
    await runs.threads.events.append_all(new.thread_id, log)
    return Forked(thread_id=new.thread_id, forked_from=origin)


async def diff(runs: RunManager, thread_id: str, start: str | None, end: str | None) -> ThreadDiff:
    """Per cell and per file, what the steps `start`..`end` (inclusive) of the current branch changed."""
    from agent_core.loop import branches as tree
    from agent_core.rewind.step_diff import thread_diff

    record = await runs.thread(thread_id)
    runner = await runs.runner()
    messages = tree.messages_of(await runner.snapshot(thread_id))
    events = await runs.threads.events.events_after(thread_id, 0, MAX_THREAD_EVENTS)
    workspace = workspace_of(runs.environment_of(record))
    try:
        return thread_diff(messages, events, thread_id, record.notebook_path or "", workspace, start, end)
    except tree.NoSuchStep as exc:
        raise NotFound(f"No diff: {exc}.", "step_not_found") from None
