""" "Approve and re-run dependents" (issue 42): a run_cell or edit_cell the user approved with
`rerun_dependents` re-runs, right after its own cell ran, the cells it made stale, in dependency
order (the order they ran in), under the same approval. The chain is planned before the cell runs,
from the graph the card's `makes_stale` came from and the arguments as decided (an edited source
plans its own chain); each re-run cell is its own step `<call id>-dep-<n>`, and its outputs reach
the model in the call's result."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from agent_core.cell_graph import CellNode
from agent_core.tools.arguments import ToolArgs
from agent_core.tools.base import ToolContext, ToolOutcome, ToolSpec
from agent_core.tools.cell_editing import EditCellArgs, target_cell
from agent_core.tools.notebook import RunCellArgs
from agent_core.tools.notebook_graph import view_graph
from agent_core.tools.notebook_view import NotebookView
from agent_core.tools.rerun import MAX_CHAIN, run_chain

RERUNS_DEPENDENTS = frozenset({"run_cell", "edit_cell"})


async def planned_chain(args: ToolArgs, ctx: ToolContext) -> tuple[NotebookView, list[CellNode]]:
    """The cells running this call's cell will make stale, in the order that brings them up to date
    (at most MAX_CHAIN: the card names as many); none for a thread without a notebook."""
    if not ctx.notebook_path or not ctx.env.edits_cells:
        return NotebookView("", []), []
    view, graph = await view_graph(ctx)
    if isinstance(args, EditCellArgs):
        index, cell = await target_cell(args, ctx)
        effect = graph.after_change(str(cell["id"]), args.source, index)
    elif isinstance(args, RunCellArgs):
        effect = graph.after_change(None, args.code, len(view.cells))
    else:
        return view, []
    chain = sorted(effect.newly_stale, key=lambda node: (node.execution_count or 0, node.index))
    return view, chain[:MAX_CHAIN]


def with_dependents(spec: ToolSpec[Any]) -> ToolSpec[Any]:
    """`spec` whose call, once its own cell ran without error, re-runs the cells it made stale;
    `spec` itself for a tool that runs no cell."""
    if spec.name not in RERUNS_DEPENDENTS:
        return spec
    action = spec.action

    async def run_then_dependents(args: ToolArgs, ctx: ToolContext) -> ToolOutcome:
        view, chain = await planned_chain(args, ctx)  # before the run: the graph the card showed
        outcome = await action(args, ctx)
        if outcome.status != "ok" or not chain:
            return outcome
        rerun = await run_chain(view, chain, ctx, f"{ctx.call_id}-dep")
        cells = ", ".join(str(node.index) for node in chain)
        told = f"Then, as the user asked on approving it, re-ran the cells it made stale (cells {cells}):"
        then = f"re-ran dependents {cells}" if rerun.status == "ok" else "a dependent failed on its re-run"
        return replace(
            outcome,
            content=f"{outcome.content}\n\n{told}\n{rerun.content}",
            summary=f"{outcome.display_summary}; {then}",
        )

    return replace(spec, action=run_then_dependents)
