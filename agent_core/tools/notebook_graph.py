"""The dependency graph of the notebook as the tools see it (agent_core.tools.notebook_view), with
what the kernel can tell without running anything: the source each execution count ran (its input
history) and the names it holds. read_notebook, the approval cards of run_cell and edit_cell,
rerun_stale and the notebook/graph route all read the graph from here."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from agent_core.cell_graph import NotebookGraph
from agent_core.cell_graph.graph import shown_name
from agent_core.cell_graph.records import records
from agent_core.contract.notebook_graph import GraphCell, NotebookGraphAnswer, StaleReasonInfo
from agent_core.deadlines import within
from agent_core.environment import HasKernelHistory, ToolEnvironment, ToolInputError
from agent_core.json_types import JsonObject
from agent_core.kernel_probes.namespace_names import namespace_names
from agent_core.tools.base import ToolContext
from agent_core.tools.notebook_view import NotebookView, notebook_view

HISTORY_ENTRIES = 5000  # inputs of the kernel's session read back (their sources give each count's)
HISTORY_TIMEOUT = 4.0
REASONS_SHOWN = 12  # stale cells listed for the model; the rest are counted
REASON_CHARS = 200
MAX_LISTED = 200  # cells a card names (the text lists fewer)
NAMES_LISTED = 50  # names a route's cell lists of what it reads and writes


@dataclass(frozen=True)
class KernelFacts:
    history: dict[int, str]  # execution count -> the source it ran, in the kernel's current session
    names: frozenset[str] | None  # the namespace's names; None: not known


NO_FACTS = KernelFacts({}, None)


async def kernel_facts(env: ToolEnvironment | None) -> KernelFacts:
    """What the kernel says (history and names), each part empty when it cannot tell (busy, gone)."""
    history: dict[int, str] = {}
    if isinstance(env, HasKernelHistory):
        try:
            async with within(HISTORY_TIMEOUT):  # sent now, not on the loop's next turn (deadlines.py)
                entries = await env.kernel_history(HISTORY_ENTRIES)
            history = {count: source for count, source in entries if isinstance(count, int)}
        except (asyncio.TimeoutError, ToolInputError):
            pass
        except Exception:  # noqa: BLE001 - a dead kernel or a protocol error: the graph goes without it
            pass
    return KernelFacts(history, await namespace_names(env))


async def view_graph(ctx: ToolContext, target: str | None = None) -> tuple[NotebookView, NotebookGraph]:
    """The view of `target` (default: the thread's notebook) and its graph; the kernel is asked only
    about the thread's own notebook (another notebook's kernel is not this thread's to read)."""
    view = await notebook_view(ctx, target)
    bound = not target or target == ctx.notebook_path
    facts = await kernel_facts(ctx.env) if bound else NO_FACTS
    return view, NotebookGraph(records(view.cells, facts.history), facts.names)


def stale_text(graph: NotebookGraph) -> str:
    """The stale cells for the model, one line each, bounded; '' when none."""
    stale = graph.stale()
    if not stale:
        return ""
    lines = [f"Stale cells ({len(stale)}): their outputs may be out of date. Re-run them (rerun_stale) or say so."]
    for node in stale[:REASONS_SHOWN]:
        reason = node.reason_text()
        reason = reason if len(reason) <= REASON_CHARS else reason[: REASON_CHARS - 1] + "…"
        kind = "stale" if node.is_stale else "hidden state"
        lines.append(f"  cell {node.index}, id {node.cell_id} ({kind}): {reason}")
    if len(stale) > REASONS_SHOWN:
        lines.append(f"  ... and {len(stale) - REASONS_SHOWN} more")
    return "\n".join(lines)


def stale_marks(graph: NotebookGraph) -> dict[int, str]:
    """Per notebook index, the word read_notebook adds to a stale cell's header."""
    return {node.index: "stale" if node.is_stale else "hidden state" for node in graph.stale()}


async def makes_stale(ctx: ToolContext, source: str, cell_id: str | None = None) -> JsonObject | None:
    """The approval card's `makes_stale` for running `source` (in cell `cell_id`, else a new cell
    at the end): None when it leaves nothing stale, or the thread has no notebook."""
    if not ctx.notebook_path:
        return None
    view, graph = await view_graph(ctx)
    found = view.find(cell_id) if cell_id else None
    effect = graph.after_change(cell_id, source, found[0] if found else len(view.cells))
    if not effect.newly_stale:
        return None
    cells = [{"index": node.index, "cell_id": node.cell_id} for node in effect.newly_stale[:MAX_LISTED]]
    return {"text": effect.text(), "cells": cells}


def graph_answer(path: str, graph: NotebookGraph, kernel: bool) -> NotebookGraphAnswer:
    """The notebook/graph route's answer (the panel's badges)."""
    cells = [
        GraphCell(
            index=node.index,
            cell_id=node.cell_id,
            execution_count=node.execution_count,
            reads=[shown_name(name) for name in node.reads[:NAMES_LISTED]],
            writes=[shown_name(name) for name in node.writes[:NAMES_LISTED]],
            stale=node.is_stale,
            hidden_state=node.hidden_state,
            reasons=[
                StaleReasonInfo(
                    kind=r.kind,
                    text=r.text,
                    name=shown_name(r.name) if r.name else None,
                    cell_index=r.cell_index,
                    cell_id=r.cell_id,
                    execution_count=r.execution_count,
                )
                for r in node.stale
            ],
        )
        for node in graph.nodes
    ]
    return NotebookGraphAnswer(
        path=path, cells=cells, rerun_order=[node.cell_id for node in graph.rerun_order()], kernel=kernel
    )
