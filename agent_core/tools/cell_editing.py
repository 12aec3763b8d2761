"""edit_cell: replace the source of one notebook cell, addressed by its nbformat id or its index (or
both, checked against each other), and run it again. The cell is looked up in the notebook as the
tools see it (agent_core.tools.notebook_view): as the user's browser has it, or as saved, plus the
agent's own cells not placed yet, so the agent can fix its failed cell with no browser open. The
approval card shows the change as a diff against that cell. A cell that is gone or has moved is an
error for the model, with the cells as they are now, and nothing changes."""

from __future__ import annotations

from pydantic import Field, model_validator

from agent_core.contract.bodies import MAX_CELLS
from agent_core.contract.events import MAX_PREVIOUS_SOURCE
from agent_core.json_types import JsonObject
from agent_core.output_digest import bounded
from agent_core.tools.arguments import ToolArgs, argument_error
from agent_core.tools.base import CellPlacement, ToolContext, ToolInputError, ToolOutcome, ToolSpec
from agent_core.tools.notebook import RunCellArgs, before_cell, cell_outcome, cell_preview
from agent_core.tools.notebook_view import PENDING_NOTE, cell_source, notebook_view
from agent_core.tools.writes import MAX_DIFF_CHARS, unified_diff


class EditCellArgs(ToolArgs):
    cell_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        description="The cell's id, as read_notebook, search_notebooks or a run_cell result showed it.",
    )
    index: int | None = Field(
        default=None,
        ge=0,
        le=MAX_CELLS,
        description="The cell's index (from 0) as read_notebook showed it; with cell_id, checked against it.",
    )
    source: str = Field(description="The cell's whole new source.")

    @model_validator(mode="after")
    def _addressed(self) -> EditCellArgs:
        if self.cell_id is None and self.index is None:
            raise argument_error("give cell_id (or index), as read_notebook shows them, to say which cell to edit")
        return self


def _named(args: EditCellArgs) -> str:
    return repr(args.cell_id) if args.cell_id is not None else f"at index {args.index}"


async def target_cell(args: EditCellArgs, ctx: ToolContext) -> tuple[int, JsonObject]:
    """The cell the call means, in the notebook as the tools see it (agent_core.tools.notebook_view):
    ToolInputError, with the cells as they are now, when it is gone or has moved since the read."""
    if not ctx.notebook_path:
        raise ToolInputError("this thread has no notebook, so there is no cell to edit")
    view = await notebook_view(ctx)
    if args.cell_id is not None:
        found = view.find(args.cell_id)
        if found is None:
            raise ToolInputError(view.missing(args.cell_id))
        index, cell = found
        if args.index is not None and args.index != index:
            raise ToolInputError(
                f"cell {args.cell_id!r} is at index {index} now, not {args.index}: the notebook changed since "
                f"you read it, and nothing was edited.\n{view.layout(index)}\nCheck that this is still the cell "
                "to change, then call edit_cell again with its current index (or its id alone)."
            )
    else:
        index = args.index if args.index is not None else -1
        if not 0 <= index < len(view.cells):
            raise ToolInputError(f"there is no cell at index {index}; nothing was edited.\n{view.layout(index)}")
        cell = view.cells[index]
    if cell.get("cell_type") != "code":
        raise ToolInputError(f"cell {index} is a {cell.get('cell_type')} cell; edit_cell edits code cells")
    if not isinstance(cell.get("id"), str) or not cell["id"]:
        raise ToolInputError(
            f"cell {index} has no id (the notebook's format predates cell ids), so an edit cannot be placed in "
            "it; use run_cell for a corrected cell"
        )
    return index, cell


async def edit_cell(args: EditCellArgs, ctx: ToolContext) -> ToolOutcome:
    if not args.source.strip():
        raise ToolInputError("edit_cell needs a non-empty source")
    if not ctx.env.edits_cells:
        raise ToolInputError("cells can be edited from the Cellwright panel only; here use run_cell")
    _, cell = await target_cell(args, ctx)
    previous = cell_source(cell)
    kept = previous if len(previous) <= MAX_PREVIOUS_SOURCE else None
    placement = await before_cell(args.source, ctx, CellPlacement(str(cell["id"]), edit=True, previous_source=kept))
    return await cell_outcome(await ctx.env.run_cell(ctx.call_id, args.source, ctx.emit, placement), placement, ctx)


async def edit_cell_check(args: EditCellArgs, ctx: ToolContext) -> None:
    await target_cell(args, ctx)


async def edit_cell_preview(args: EditCellArgs, ctx: ToolContext) -> JsonObject:
    index, cell = await target_cell(args, ctx)
    where = f" ({PENDING_NOTE})" if cell.get("pending") == "new" else ""
    diff = unified_diff(cell_source(cell), args.source, f"cell {index} ({cell['id']}){where}")
    card = await cell_preview(RunCellArgs(code=args.source), ctx, str(cell["id"]))
    return {**card, "diff": bounded(diff, MAX_DIFF_CHARS) or "(no change)"}


EDIT_CELL = ToolSpec(
    name="edit_cell",
    description=(
        "Replace the source of an existing code cell and run it again: use it to fix a cell that failed, instead "
        "of adding a corrected copy. Name the cell by its id (read_notebook and search_notebooks show each cell's "
        "id, a run_cell result its cell's), or by the index read_notebook showed, or both (checked against each "
        "other). The agent's own cells can be edited before the notebook is opened. The user approves the diff."
    ),
    args=EditCellArgs,
    action=edit_cell,
    touches="kernel",
    cell="edits",
    undone_by="kernel_snapshot",
    outside_agents=True,
    needs_approval=True,
    describe=lambda args: f"Edit cell {_named(args)} and run it again",
    card=edit_cell_preview,
    check=edit_cell_check,
)
