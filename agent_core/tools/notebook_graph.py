"""The dependency graph of the notebook as the tools see it (agent_core.tools.notebook_view), with
what the kernel can tell without running anything: the source each execution count ran (its input
history) and the names it holds. read_notebook, the approval cards of run_cell and edit_cell,
rerun_stale and the notebook/graph route all read the graph from here."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from agent_core.cell_graph import CellRecord, NotebookGraph
from agent_core.cell_graph.graph import MAX_CELLS
from agent_core.contract.notebook_graph import GraphCell, NotebookGraphAnswer, StaleReasonInfo
from agent_core.environment import HasKernelHistory, ToolEnvironment, ToolInputError
from agent_core.json_types import JsonObject
from agent_core.kernel_probes.namespace_names import namespace_names
from agent_core.tools.base import ToolContext
from agent_core.tools.notebook_view import NBFORMAT_ID, NotebookView, cell_source, notebook_view

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
            entries = await asyncio.wait_for(env.kernel_history(HISTORY_ENTRIES), HISTORY_TIMEOUT)
            history = {count: source for count, source in entries if isinstance(count, int)}
        except (asyncio.TimeoutError, ToolInputError):
            pass
        except Exception:  # noqa: BLE001 - a dead kernel or a protocol error: the graph goes without it
            pass
    return KernelFacts(history, await namespace_names(env))


def records(cells: Sequence[JsonObject], facts: KernelFacts) -> list[CellRecord]:
    """The code cells as graph records. The history gives the source a count ran only when it is this
    notebook's session: most cells whose counts it holds must match it (a saved notebook's counts
    from before a restart would otherwise read as edits)."""
    found: list[tuple[int, str, str, int | None]] = []
    for index, cell in enumerate(cells[: MAX_CELLS * 2]):
        if cell.get("cell_type") != "code":
            continue
        count = cell.get("execution_count")
        cell_id = cell.get("id")
        # an id as nbformat allows it, else one by position: a hostile notebook's id never reaches the model
        cell_id = cell_id if isinstance(cell_id, str) and NBFORMAT_ID.fullmatch(cell_id) else f"index-{index}"
        found.append((index, cell_id, cell_source(cell), count if isinstance(count, int) else None))
    known = [(source, facts.history[count]) for _, _, source, count in found if count in facts.history]
    same_session = bool(known) and sum(1 for source, ran in known if source == ran) * 2 > len(known)
    return [
        CellRecord(
            index=index,
            cell_id=cell_id,
            source=source,
            execution_count=count,
            ran_source=facts.history.get(count) if same_session and count is not None else None,
        )
        for index, cell_id, source, count in found
    ]


async def view_graph(ctx: ToolContext, target: str | None = None) -> tuple[NotebookView, NotebookGraph]:
    """The view of `target` (default: the thread's notebook) and its graph; the kernel is asked only
    about the thread's own notebook (another notebook's kernel is not this thread's to read)."""
    view = await notebook_view(ctx, target)
    bound = not target or target == ctx.notebook_path
    facts = await kernel_facts(ctx.env) if bound else NO_FACTS
    return view, NotebookGraph(records(view.cells, facts), facts.names)


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
            reads=list(node.reads[:NAMES_LISTED]),
            writes=list(node.writes[:NAMES_LISTED]),
            stale=node.is_stale,
            hidden_state=node.hidden_state,
            reasons=[
                StaleReasonInfo(
                    kind=r.kind,
                    text=r.text,
                    name=r.name,
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
