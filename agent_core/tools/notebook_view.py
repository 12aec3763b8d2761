"""The notebook as the server's tools see it: its cells (the shared document under real-time
collaboration, else as the user's browser sent them, else as saved) plus the agent's own cells that
the thread record holds and the notebook does not have yet, placed as the panel's reconcile will
place them (labextension_src/model/agentCells.ts, planReconcile).

Without that overlay every reader of a notebook reads a file that lacks the agent's cells until a
browser places them: with no browser open (a run over the API or MCP, a closed tab) edit_cell could
not find the cell run_cell had just made, and verify_notebook re-ran a file without the agent's work.
read_notebook, search_notebooks, edit_cell and verify_notebook all read this one view, so an index
or id one of them shows is the one the others find."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from agent_core.cell_graph.records import NBFORMAT_ID, cell_source
from agent_core.contract.notebook_cells import AgentCell
from agent_core.json_types import JsonObject, json_items
from agent_core.output_digest import bounded
from agent_core.tools.base import HasSharedNotebook, ToolContext, ToolInputError
from agent_core.workspace import WorkspaceError, relative_to_root, workspace_of

METADATA_KEY = "cellwright"
PENDING_NOTE = "not yet in the saved file"
LAYOUT_CELLS = 40  # cells listed in an error's layout: enough around any index a model just read
LAYOUT_SOURCE_CHARS = 60

Pending = Literal["new", "edit"]


def shown_id(cell: JsonObject) -> str:
    """The cell's id as the model is shown it: as is when nbformat allows it (letters, digits, '-',
    '_'), else quoted JSON, bounded, so a notebook's odd id cannot pass for anything but an id."""
    cell_id = cell.get("id")
    if not isinstance(cell_id, str) or not cell_id:
        return "(none)"
    return cell_id if NBFORMAT_ID.fullmatch(cell_id) else json.dumps(cell_id[:64])


def tool_call_of(cell: JsonObject) -> str | None:
    """The tool call that wrote the cell, from its `cellwright` metadata; None for the user's."""
    metadata = cell.get("metadata")
    meta = metadata.get(METADATA_KEY) if isinstance(metadata, dict) else None
    call = meta.get("tool_call_id") if isinstance(meta, dict) else None
    return call if isinstance(call, str) else None


def placed_ids(metadata: object) -> set[str]:
    """The tool calls ever placed in the notebook (its metadata `cellwright.placed`, which the panel
    keeps): an agent cell placed and then gone was deleted by the user."""
    meta = metadata.get(METADATA_KEY) if isinstance(metadata, dict) else None
    placed = meta.get("placed") if isinstance(meta, dict) else None
    return {p for p in placed if isinstance(p, str)} if isinstance(placed, list) else set()


@dataclass(frozen=True)
class NotebookView:
    """The cells in notebook order. An agent cell the notebook lacks carries `pending`: "new" (the
    saved file lacks the cell) or "edit" (it has the cell, without the agent's edit)."""

    path: str  # root-relative
    cells: list[JsonObject]
    metadata: JsonObject = field(default_factory=dict)  # the saved notebook's (kernelspec, ...)
    gone: dict[str, str] = field(default_factory=dict)  # an agent cell's id -> why the notebook lacks it

    @property
    def pending(self) -> list[JsonObject]:
        return [cell for cell in self.cells if cell.get("pending")]

    def find(self, cell_id: str) -> tuple[int, JsonObject] | None:
        return next(((i, c) for i, c in enumerate(self.cells) if c.get("id") == cell_id), None)

    def layout(self, near: int = 0) -> str:
        """The cells around index `near`, one line each (index, id, type, first line): what a model
        needs to address the right cell after the notebook changed."""
        start = max(0, min(near - LAYOUT_CELLS // 2, len(self.cells) - LAYOUT_CELLS))
        lines = [f"{self.path} now has {len(self.cells)} cells:"]
        for index in range(start, min(len(self.cells), start + LAYOUT_CELLS)):
            cell = self.cells[index]
            first = next((line for line in cell_source(cell).splitlines() if line.strip()), "")
            note = f", {PENDING_NOTE}" if cell.get("pending") else ""
            lines.append(
                f"  cell {index}, id {shown_id(cell)} ({cell.get('cell_type', '?')}{note}): "
                f"{bounded(first.strip(), LAYOUT_SOURCE_CHARS)}"
            )
        if start + LAYOUT_CELLS < len(self.cells):
            lines.append(f"  ... {len(self.cells) - start - LAYOUT_CELLS} more (read_notebook with start/end)")
        return "\n".join(lines)

    def missing(self, cell_id: str) -> str:
        """Why no cell has `cell_id`, for the model: what happened to it, and the cells there are."""
        why = self.gone.get(cell_id)
        if why:
            head = f"cell {cell_id!r} is no longer in {self.path}: {why}"
        else:
            head = (
                f"there is no cell with id {cell_id!r} in {self.path}, saved or not: it is not a cell the agent "
                "ran here, and no cell of the notebook has it (deleted by the user since you read it, or a "
                "mistyped id)"
            )
        return f"{head}. Nothing was changed.\n{self.layout()}\nUse one of these ids, or run_cell for a new cell."


async def notebook_view(ctx: ToolContext, target: str | None = None) -> NotebookView:
    """The view of `target` (default: the thread's notebook). ToolInputError when there is no such
    notebook in the root."""
    # notebook_reader's tools read this view: its loader is imported here, when a view is made
    from agent_core.tools.notebook_reader import load_notebook

    target = target or ctx.notebook_path
    if not target:
        raise ToolInputError("this thread has no notebook: give the path of one")
    workspace = workspace_of(ctx.env)
    try:
        path = workspace.resolve(target)
    except WorkspaceError as exc:
        raise ToolInputError(exc.message) from None
    rel = relative_to_root(workspace.root, path)
    saved = await asyncio.to_thread(load_notebook, path)
    saved_cells = [c for c in json_items(saved["cells"]) if isinstance(c, dict)]
    metadata = saved.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    bound = bool(ctx.notebook_path) and _same(workspace, ctx.notebook_path, rel)
    cells, markdown = saved_cells, True
    if bound and isinstance(ctx.env, HasSharedNotebook) and (shared := await ctx.env.shared_cells()) is not None:
        cells = [c for c in shared if isinstance(c, dict)]
    elif bound and ctx.notebook_cells is not None:
        cells, markdown = _browser_cells(ctx.notebook_cells, saved_cells), False
    record: Sequence[AgentCell] = await ctx.agent_cells(rel) if ctx.agent_cells is not None else ()
    return overlay(rel, cells, metadata, record, markdown=markdown)


def _same(workspace: Any, path: str, rel: str) -> bool:
    try:
        return relative_to_root(workspace.root, workspace.resolve(path)) == rel
    except WorkspaceError:
        return False


def _browser_cells(live: list[JsonObject], saved: list[JsonObject]) -> list[JsonObject]:
    """The cells as the browser sent them (saved or not), with the outputs and metadata of the saved
    cell with the same id, and its source where the browser left one out (the request's size cap)."""
    by_id = {cell.get("id"): cell for cell in saved}
    cells = []
    for cell in live:
        stored = by_id.get(cell.get("id"), {})
        source = cell_source(stored) if cell.get("truncated") else cell.get("source", "")
        cells.append({**stored, "id": cell.get("id"), "cell_type": cell.get("cell_type"), "source": source})
    return cells


def overlay(
    path: str,
    cells: list[JsonObject],
    metadata: JsonObject,
    record: Sequence[AgentCell],
    markdown: bool = True,
) -> NotebookView:
    """`cells` with the agent cells of `record` they lack, as planReconcile places them: a new cell at
    the end, in the order it ran; an edit once, the last of a cell's, onto the cell with its id (also
    one added here). Undone steps and cells the user deleted (placed before) are left out.
    `markdown`: whether the cells carry the metadata that tells an agent's Markdown cell (the browser
    sends none, and the panel gives a Markdown cell no id of the record's)."""
    placed = placed_ids(metadata)
    by_tool = {call for cell in cells if (call := tool_call_of(cell))}
    index_of = {cell_id: i for i, cell in enumerate(cells) if isinstance(cell_id := cell.get("id"), str)}
    view = [dict(cell) for cell in cells]
    last_edit = {c.cell_id: c.tool_call_id for c in record if c.edit and not c.undone}
    gone: dict[str, str] = {}
    for agent in record:
        if agent.edit or not agent.cell_id or agent.cell_id in index_of:
            continue
        if agent.undone:
            gone[agent.cell_id] = "the user undid the step that made it"
        elif agent.tool_call_id in placed and agent.tool_call_id not in by_tool:
            gone[agent.cell_id] = "it was placed in the notebook, and the user deleted it"
    for agent in record:
        if agent.undone or agent.tool_call_id in placed or agent.tool_call_id in by_tool:
            continue
        if agent.cell_type == "markdown" and not markdown:
            continue
        if agent.edit:
            index = index_of.get(agent.cell_id)
            if index is not None and last_edit.get(agent.cell_id) == agent.tool_call_id:
                view[index] = _edited(view[index], agent)
        elif agent.cell_id not in index_of:
            index_of[agent.cell_id] = len(view)
            view.append(_new(agent))
            by_tool.add(agent.tool_call_id)
    for cell_id in index_of:
        gone.pop(cell_id, None)
    return NotebookView(path, view, metadata, gone)


def _stamps(agent: AgentCell) -> JsonObject:
    return {METADATA_KEY: {"thread_id": agent.thread_id, "run_id": agent.run_id, "tool_call_id": agent.tool_call_id}}


def _outputs(agent: AgentCell) -> list[JsonObject]:
    return agent.model_dump(mode="json", exclude_none=True, include={"outputs"}).get("outputs", [])


def _new(agent: AgentCell) -> JsonObject:
    cell: JsonObject = {
        # A Markdown cell gets its nbformat id when a browser (or the shared document) places it: the
        # record's is not the one it will have, so none is shown (edit_cell edits code cells only).
        "id": agent.cell_id if agent.cell_type == "code" else None,
        "cell_type": agent.cell_type,
        "source": agent.source,
        "metadata": _stamps(agent),
        "pending": "new",
    }
    if agent.cell_type == "code":
        cell.update(outputs=_outputs(agent), execution_count=agent.execution_count)
    return cell


def _edited(cell: JsonObject, agent: AgentCell) -> JsonObject:
    if cell.get("pending") != "new" and cell_source(cell) == agent.source:
        if agent.execution_count is None or cell.get("execution_count") == agent.execution_count:
            return cell  # the browser has the edit already (live, not yet saved)
        # the same source run again (rerun_stale, issue 42): the count and outputs are that run's
        return {**cell, "execution_count": agent.execution_count, "outputs": _outputs(agent)}
    pending: Pending = "new" if cell.get("pending") == "new" else "edit"
    old = cell.get("metadata")
    metadata = {**(old if isinstance(old, dict) else {}), **_stamps(agent)}
    return {
        **cell,
        "source": agent.source,
        "outputs": _outputs(agent),
        "execution_count": agent.execution_count,
        "metadata": metadata,
        "pending": pending,
    }
