"""What the agent changed over a range of a thread's steps (issue 25, GET threads/{id}/diff): per
notebook cell and per file, before the range's first step on it and after its last one. Cells come
from the thread's stored events (the same fold as POST agent_cells), files from the pre-images kept
on the steps' tool messages (agent_core.undo.preimages) and, after the last step, the file itself."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from agent_core.contract.rewind import CellChange, CellState, FileChange, ThreadDiff
from agent_core.errors import BadRequest
from agent_core.json_types import JsonObject
from agent_core.loop.agent_cells import CellFold
from agent_core.loop.branches import NoSuchStep
from agent_core.messages import Message
from agent_core.output_digest import bounded
from agent_core.rewind.rewind_plan import LaterStep, later_steps, writes_files
from agent_core.tools.writes import MAX_DIFF_CHARS, unified_diff
from agent_core.undo.preimages import current, digest
from agent_core.workspace import Workspace, WorkspaceError

MAX_CELLS = 200
MAX_FILES = 50
MAX_SIDE_CHARS = 200_000  # of a file's content on one side of its change


class RangeRefused(BadRequest):
    """`from` comes after `to` (400)."""


@dataclass
class _Cell:
    """The states one notebook cell went through, step by step (index into the branch's steps)."""

    cell_type: str
    states: list[tuple[int, str, CellState]] = field(default_factory=list)
    previous_source: dict[str, str] = field(default_factory=dict)  # edit call id -> the source it replaced


def step_range(steps: list[str], start: str | None, end: str | None) -> tuple[int, int]:
    """Indexes of `start` and `end` (inclusive) in `steps`; the first and last step when not given."""
    if not steps:
        raise NoSuchStep("this thread has no steps yet")

    def index(call_id: str | None, default: int) -> int:
        if call_id is None:
            return default
        if call_id not in steps:
            raise NoSuchStep(f"this thread's current branch has no step {call_id[:200]!r}")
        return steps.index(call_id)

    first, last = index(start, 0), index(end, len(steps) - 1)
    if first > last:
        raise RangeRefused('"from" comes after "to": give the older step as "from".', "bad_request")
    return first, last


def thread_diff(
    messages: list[Message],
    events: Iterable[JsonObject],
    thread_id: str,
    notebook_path: str,
    workspace: Workspace,
    start: str | None,
    end: str | None,
) -> ThreadDiff:
    """Raises NoSuchStep for a step the current branch lacks, RangeRefused for a reversed range."""
    steps = later_steps(messages, {})[::-1]  # oldest first
    ids = [step.call_id for step in steps]
    first, last = step_range(ids, start, end)
    return ThreadDiff(
        from_tool_call_id=ids[first],
        to_tool_call_id=ids[last],
        steps=ids[first : last + 1],
        cells=_cells(ids, events, thread_id, notebook_path, first, last),
        files=_files(steps, workspace, first, last),
    )


def _cells(
    ids: list[str], events: Iterable[JsonObject], thread_id: str, notebook_path: str, first: int, last: int
) -> list[CellChange]:
    fold = CellFold(thread_id, notebook_path)
    replaced: dict[str, str] = {}
    for event in events:
        fold.add(event)
        previous = event.get("previous_source")
        if event.get("type") == "cell_started" and event.get("edit") and isinstance(previous, str):
            replaced.setdefault(str(event.get("id")), previous)
    position = {call_id: index for index, call_id in enumerate(ids)}
    cells: dict[str, _Cell] = {}
    for call_id, folded in fold.cells.items():
        if call_id not in position:  # a step of another branch
            continue
        cell = cells.setdefault(str(folded["cell_id"]), _Cell(str(folded["cell_type"])))
        state = CellState.model_validate({"source": str(folded["source"]), "outputs": folded.get("outputs") or []})
        cell.states.append((position[call_id], call_id, state))
        if call_id in replaced:
            cell.previous_source[call_id] = replaced[call_id]
    changes = []
    for cell_id, cell in cells.items():
        cell.states.sort(key=lambda entry: entry[0])
        inside = [entry for entry in cell.states if first <= entry[0] <= last]
        if not inside:
            continue
        earlier = [entry for entry in cell.states if entry[0] < first]
        before, known = _cell_before(cell, earlier, inside[0][1], fold.cells[inside[0][1]])
        after = inside[-1][2]
        changes.append(
            CellChange(
                cell_id=cell_id,
                cell_type="markdown" if cell.cell_type == "markdown" else "code",
                tool_call_ids=[call_id for _, call_id, _ in inside],
                before=before,
                before_known=known,
                after=after,
                diff=_diff(before.source if before else "", after.source, f"cell {cell_id}"),
            )
        )
    changes.sort(key=lambda change: ids.index(change.tool_call_ids[0]))
    return changes[:MAX_CELLS]


def _cell_before(
    cell: _Cell, earlier: list[tuple[int, str, CellState]], first_call: str, folded: JsonObject
) -> tuple[CellState | None, bool]:
    if earlier:  # an earlier agent step left the cell as the range found it
        return earlier[-1][2], True
    if not folded.get("edit"):
        return None, True  # the range's step added the cell
    previous = cell.previous_source.get(first_call)
    if previous is None:
        return None, False  # an edit recorded before cell_started carried the old source
    return CellState(source=previous), True


def _files(steps: list[LaterStep], workspace: Workspace, first: int, last: int) -> list[FileChange]:
    by_path: dict[str, list[tuple[int, LaterStep]]] = {}
    for index, step in enumerate(steps):
        if writes_files(step.name) and step.preimage is not None:
            by_path.setdefault(str(step.preimage.get("path")), []).append((index, step))
    changes = []
    for path, touched in by_path.items():
        inside = [(index, step) for index, step in touched if first <= index <= last]
        if not inside:
            continue
        later = [step for index, step in touched if index > last]
        changes.append(_file_change(path, [step for _, step in inside], later[0] if later else None, workspace))
        if len(changes) == MAX_FILES:
            break
    return changes


def _file_change(path: str, inside: list[LaterStep], next_step: LaterStep | None, workspace: Workspace) -> FileChange:
    image = inside[0].preimage
    before: str | None = None
    known, why = True, None
    if image and image.get("existed"):
        before = image.get("content")
        if before is None:
            known, why = False, str(image.get("why", "no copy from before the step was kept"))
    if next_step is not None:  # the file as the next agent step on it found it
        later = next_step.preimage
        after = later.get("content") if later and later.get("existed") else None
        changed_since = False
    else:
        now = _read_now(workspace, path)
        after = now.decode("utf-8", errors="replace") if now is not None else None
        last = inside[-1].preimage
        changed_since = (digest(now) if now is not None else None) != (last.get("after") if last else None)
    truncated = len(before or "") > MAX_SIDE_CHARS or len(after or "") > MAX_SIDE_CHARS
    return FileChange(
        path=path,
        tool_call_ids=[step.call_id for step in inside],
        before=before[:MAX_SIDE_CHARS] if before is not None else None,
        before_known=known,
        why_unknown=why,
        after=after[:MAX_SIDE_CHARS] if after is not None else None,
        after_is_now=next_step is None,
        changed_since=changed_since,
        truncated=truncated,
        diff=_diff(before or "", after or "", path) if known else "",
    )


def _read_now(workspace: Workspace, path: str) -> bytes | None:
    """The file as it is now, if it is still one the agent's tools may read (confined, not hidden)."""
    try:
        resolved: Path = workspace.resolve(path)
    except WorkspaceError:
        return None
    return current(resolved)


def _diff(before: str, after: str, name: str) -> str:
    return bounded(unified_diff(before[:MAX_SIDE_CHARS], after[:MAX_SIDE_CHARS], name), MAX_DIFF_CHARS)
