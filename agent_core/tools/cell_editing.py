"""edit_cell: replace the source of one notebook cell, addressed by its nbformat id, and run it again.
The approval card shows the change as a diff against the cell as the user's browser has it (the run
or the approval sends those cells), or as saved when no browser sent them. A cell that is gone is an
error for the model, and nothing changes."""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import Field

from agent_core.contract.events import MAX_PREVIOUS_SOURCE
from agent_core.output_digest import bounded
from agent_core.tools.arguments import ToolArgs
from agent_core.tools.base import (
    CellPlacement,
    HasSharedNotebook,
    ToolContext,
    ToolInputError,
    ToolOutcome,
    ToolSpec,
)
from agent_core.tools.notebook import RunCellArgs, before_cell, cell_outcome, cell_preview
from agent_core.tools.notebook_reader import load_notebook
from agent_core.tools.writes import MAX_DIFF_CHARS, unified_diff
from agent_core.workspace import WorkspaceError, workspace_of


class EditCellArgs(ToolArgs):
    cell_id: str = Field(
        min_length=1, max_length=200, description="The cell's id, as read_notebook or run_cell gave it."
    )
    source: str = Field(description="The cell's whole new source.")


def _source(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


async def notebook_cells(ctx: ToolContext) -> list[dict[str, Any]]:
    """The notebook's cells: as its shared document holds them (under real-time collaboration), else
    as the browser sent them with this run or approval (a source it left out taken from the saved
    file), else as saved."""
    if isinstance(ctx.env, HasSharedNotebook):
        shared = await ctx.env.shared_cells()
        if shared is not None:
            return shared
    live = ctx.notebook_cells
    if live is None:
        return await saved_cells(ctx)
    if not any(cell.get("truncated") for cell in live):
        return live
    saved = {cell.get("id"): cell for cell in await saved_cells(ctx)}
    return [
        {**cell, "source": _source(saved.get(cell["id"], cell))} if cell.get("truncated") else cell for cell in live
    ]


async def saved_cells(ctx: ToolContext) -> list[dict[str, Any]]:
    path = ctx.notebook_path
    if not path:
        raise ToolInputError("this thread has no notebook, so there is no cell to edit")
    try:
        resolved = workspace_of(ctx.env).resolve(path)
    except WorkspaceError as exc:
        raise ToolInputError(exc.message) from None
    notebook = await asyncio.to_thread(load_notebook, resolved)
    return [c for c in notebook["cells"] if isinstance(c, dict)]


async def target_cell(cell_id: str, ctx: ToolContext) -> tuple[int, dict[str, Any]]:
    cells = await notebook_cells(ctx)
    for index, cell in enumerate(cells):
        if cell.get("id") == cell_id:
            if cell.get("cell_type") != "code":
                raise ToolInputError(f"cell {cell_id} is a {cell.get('cell_type')} cell; edit_cell edits code cells")
            return index, cell
    raise ToolInputError(
        f"there is no cell with id {cell_id!r} in the notebook (it may have been deleted); call read_notebook to "
        "see the cells and their ids, or use run_cell for a new cell"
    )


async def edit_cell(args: EditCellArgs, ctx: ToolContext) -> ToolOutcome:
    if not args.source.strip():
        raise ToolInputError("edit_cell needs a non-empty source")
    if not ctx.env.edits_cells:
        raise ToolInputError("cells can be edited from the Cellwright panel only; here use run_cell")
    _, cell = await target_cell(args.cell_id, ctx)
    previous = _source(cell)
    kept = previous if len(previous) <= MAX_PREVIOUS_SOURCE else None
    placement = await before_cell(args.source, ctx, CellPlacement(args.cell_id, edit=True, previous_source=kept))
    return await cell_outcome(await ctx.env.run_cell(ctx.call_id, args.source, ctx.emit, placement), placement, ctx)


async def edit_cell_check(args: EditCellArgs, ctx: ToolContext) -> None:
    await target_cell(args.cell_id, ctx)


async def edit_cell_preview(args: EditCellArgs, ctx: ToolContext) -> dict[str, Any]:
    index, cell = await target_cell(args.cell_id, ctx)
    diff = unified_diff(_source(cell), args.source, f"cell {index} ({args.cell_id})")
    card = await cell_preview(RunCellArgs(code=args.source), ctx)
    return {**card, "diff": bounded(diff, MAX_DIFF_CHARS) or "(no change)"}


EDIT_CELL = ToolSpec(
    name="edit_cell",
    description=(
        "Replace the source of an existing code cell (by its id, from read_notebook or a run_cell result) and run "
        "it again: use it to fix a cell that failed, instead of adding a corrected copy. The user approves the diff."
    ),
    args=EditCellArgs,
    action=edit_cell,
    touches="kernel",
    cell="edits",
    undone_by="kernel_snapshot",
    outside_agents=True,
    needs_approval=True,
    describe=lambda args: f"Edit cell {args.cell_id} and run it again",
    card=edit_cell_preview,
    check=edit_cell_check,
)
