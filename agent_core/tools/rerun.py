"""rerun_stale (issue 42): re-run the notebook's stale cells in place, in the order that brings them
up to date (the order they ran in, so each reads what the one before it wrote again), with one
approval for the chain. The chain comes from the dependency graph (agent_core.tools.notebook_graph);
the model may narrow it to some cells, and the stale cells those read from come along. Each cell
runs as its own step of the call (`<call id>-<n>`), so its outputs land in its own cell."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from agent_core.cell_graph import CellNode, NotebookGraph
from agent_core.environment import CellPlacement
from agent_core.json_types import JsonObject
from agent_core.output_digest import bounded, digest
from agent_core.tools.arguments import ToolArgs
from agent_core.tools.base import ToolContext, ToolInputError, ToolOutcome, ToolSpec
from agent_core.tools.notebook_graph import view_graph
from agent_core.tools.notebook_view import NotebookView, cell_source

MAX_CHAIN = 50  # cells one approval may re-run
OUTPUT_CHARS = 600  # of each cell's outputs, for the model
CellId = Annotated[str, Field(min_length=1, max_length=200)]


class RerunStaleArgs(ToolArgs):
    cell_ids: list[CellId] | None = Field(
        default=None,
        max_length=MAX_CHAIN,
        description="The stale cells to bring up to date, by the ids read_notebook showed; default: every stale "
        "cell. The stale cells they read from are re-run too, all in dependency order.",
    )


def chain_of(graph: NotebookGraph, wanted: list[str] | None) -> list[CellNode]:
    """The stale cells to re-run, in order; ToolInputError when a wanted cell is not stale."""
    order = graph.rerun_order()
    if wanted is None:
        chain = order
    else:
        stale = {node.cell_id: node for node in order}
        unknown = [cell_id for cell_id in wanted if cell_id not in stale]
        if unknown:
            listed = ", ".join(n.cell_id for n in order[:20]) or "none"
            raise ToolInputError(f"not stale (or no such cell): {', '.join(unknown[:10])}; the stale cells: {listed}")
        needed = set(wanted)
        for node in reversed(order):  # a wanted cell's stale sources come along
            if node.cell_id in needed:
                needed.update(r.cell_id for r in node.stale if r.kind == "dependency" and r.cell_id)
        chain = [node for node in order if node.cell_id in needed]
    if not chain:
        raise ToolInputError("no cell of the notebook is stale: nothing to re-run")
    if len(chain) > MAX_CHAIN:
        raise ToolInputError(f"{len(chain)} cells are stale; re-run at most {MAX_CHAIN} at once (give cell_ids)")
    return chain


async def _chain(args: RerunStaleArgs, ctx: ToolContext) -> tuple[NotebookView, list[CellNode]]:
    if not ctx.notebook_path:
        raise ToolInputError("this thread has no notebook, so no cell is stale")
    if not ctx.env.edits_cells:
        raise ToolInputError("cells can be re-run in place from the Cellwright panel only")
    view, graph = await view_graph(ctx)
    return view, chain_of(graph, args.cell_ids)


async def run_chain(view: NotebookView, chain: list[CellNode], ctx: ToolContext, step: str) -> ToolOutcome:
    """Re-run `chain` in order, each cell as its own step `<step>-<n>`; stops at the first failure.
    The outcome's content has each cell's outputs, for the model."""
    parts: list[str] = []
    for number, node in enumerate(chain, start=1):
        found = view.find(node.cell_id)
        if found is None:
            raise ToolInputError(f"cell {node.cell_id} is gone from the notebook; nothing more was re-run")
        source = cell_source(found[1])
        placement = CellPlacement(node.cell_id, edit=True, previous_source=source)
        cell = await ctx.env.run_cell(f"{step}-{number}", source, ctx.emit, placement)
        head = f"cell {node.index}, id {node.cell_id}, execution_count {cell.execution_count}"
        parts.append(f"{head}:\n{bounded(digest(cell.outputs), OUTPUT_CHARS)}")
        if cell.status != "ok":
            rest = ", ".join(str(n.index) for n in chain[number:]) or "none"
            return ToolOutcome("error", "\n\n".join([*parts, f"It failed; not re-run: cells {rest}."]))
    summary = f"Re-ran {len(chain)} stale cell{'s' if len(chain) > 1 else ''} in order"
    return ToolOutcome("ok", f"{summary}.\n\n" + "\n\n".join(parts), summary=summary)


async def rerun_stale(args: RerunStaleArgs, ctx: ToolContext) -> ToolOutcome:
    view, chain = await _chain(args, ctx)
    return await run_chain(view, chain, ctx, ctx.call_id)


async def rerun_check(args: RerunStaleArgs, ctx: ToolContext) -> None:
    await _chain(args, ctx)  # nothing stale, or a wanted cell that is not: the model is told, not the user


async def rerun_card(args: RerunStaleArgs, ctx: ToolContext) -> JsonObject:
    """The card names the chain, in order, with why each cell is stale."""
    _, chain = await _chain(args, ctx)
    lines = [f"cell {n.index}: {bounded(n.reason_text(), 160)}" for n in chain[:12]]
    more = f"\n… and {len(chain) - 12} more" if len(chain) > 12 else ""
    cells = ", ".join(str(n.index) for n in chain)
    return {"description": f"Re-run stale cells {bounded(cells, 200)} in this order:\n" + "\n".join(lines) + more}


RERUN_STALE = ToolSpec(
    name="rerun_stale",
    description=(
        "Re-run the notebook's stale cells (read_notebook marks them: a name they read was redefined after they "
        "ran, or their source changed) in place, in dependency order, with one approval for the chain. Use it "
        "after a change that left cells stale, so their outputs show the new values."
    ),
    args=RerunStaleArgs,
    action=rerun_stale,
    touches="kernel",
    needs_approval=True,
    describe=lambda args: "Re-run the stale cells in dependency order",
    card=rerun_card,
    check=rerun_check,
    # each cell's source is unchanged; its kernel state and outputs are the re-run's (no snapshot is taken)
    rewind_leaves="the re-run cells' new outputs and what they changed in the kernel",
)
