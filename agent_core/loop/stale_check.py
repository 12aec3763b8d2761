"""The final answer's check on stale cells (issue 42): when the agent's cells of this run (run_cell,
edit_cell) left other cells stale (a name they read was redefined after they ran), an answer that
does not say so goes back to the model once, with the cells and why, before the user reads it. The
user must never find out from a chart that it shows the old data."""

from __future__ import annotations

import re
from collections.abc import Sequence

from agent_core.cell_graph import CellNode, NotebookGraph
from agent_core.loop.run_context import RunContext
from agent_core.loop.state import parse_args
from agent_core.messages import Message
from agent_core.tools.base import ToolInputError
from agent_core.tools.notebook import new_cell_id
from agent_core.tools.notebook_graph import stale_text, view_graph

MARK = "[Stale cells]"  # starts the note; one note per request
CHANGING = ("run_cell", "edit_cell")
LISTED = 12
_SAYS_STALE = re.compile(r"\b(stale|out[- ]of[- ]date|outdated|re-?run)", re.IGNORECASE)


def _this_request(messages: Sequence[Message]) -> list[Message]:
    """The messages since the user's last request (the run's own work)."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.get("role") == "user" and not str(message.get("content", "")).startswith(MARK):
            return list(messages[index + 1 :])
    return list(messages)


def _agent_cells(messages: Sequence[Message]) -> set[str]:
    """The cells this request's run_cell and edit_cell calls ran (a new cell's id comes from its call)."""
    found: set[str] = set()
    for message in messages:
        for call in message.get("tool_calls") or []:
            name = call["function"]["name"]
            if name == "run_cell":
                found.add(new_cell_id(call["id"]))
            elif name == "edit_cell":
                args, _ = parse_args(call["function"]["arguments"])
                cell_id = args.get("cell_id") if args is not None else None
                if isinstance(cell_id, str):
                    found.add(cell_id)
    return found


def left_stale(graph: NotebookGraph, changed: set[str]) -> list[CellNode]:
    """The stale cells whose staleness comes from `changed` (directly, or through a stale cell that
    does), in notebook order; a cell stale before the run for its own reasons is not the run's doing."""
    by_agent: set[str] = set()
    for node in sorted(graph.nodes, key=lambda n: (n.execution_count or 0, n.index)):
        if node.cell_id in changed or not node.is_stale:
            continue
        if any(r.cell_id in changed or r.cell_id in by_agent for r in node.stale if r.kind != "hidden_state"):
            by_agent.add(node.cell_id)
    return [node for node in graph.nodes if node.cell_id in by_agent]


def mentions(answer: str, cells: Sequence[CellNode]) -> bool:
    """Whether the answer tells the user: says stale (or out of date, re-run), or names every cell."""
    if _SAYS_STALE.search(answer):
        return True
    return all(re.search(rf"\bcell\s*{node.index}\b", answer) or node.cell_id in answer for node in cells)


async def stale_note(ctx: RunContext, messages: Sequence[Message], answer: str) -> str | None:
    """The note that sends the answer back, or None: no cell changed by this request, nothing left
    stale, the answer says so already, or the note was sent once in this request."""
    if ctx.agent.is_subagent or not ctx.notebook_path:
        return None
    request = _this_request(messages)
    if any(str(m.get("content", "")).startswith(MARK) for m in request):
        return None
    changed = _agent_cells(request)
    if not changed:
        return None
    tool_ctx = ctx.tool_context("stale-check")
    try:
        _, graph = await view_graph(tool_ctx)
    except ToolInputError:
        return None
    stale = left_stale(graph, changed)
    if not stale or mentions(answer, stale):
        return None
    cells = ", ".join(str(node.index) for node in stale[:LISTED]) + (" and more" if len(stale) > LISTED else "")
    return (
        f"{MARK} Your changes left cells {cells} stale: their outputs show results of the old values. Before you "
        f"finish, re-run them (rerun_stale) or tell the user which cells are stale and why.\n{stale_text(graph)}"
    )
