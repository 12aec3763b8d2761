"""Why a cell's re-run differs, from the dependency graph of the saved notebook (issue 42): its saved
outputs were out of date already, because a name it read was redefined after it ran, its source
changed, or it read from such a cell. Said with verify's own numbers (1-based code cells)."""

from __future__ import annotations

from collections.abc import Sequence

from agent_core.cell_graph import NotebookGraph, StaleReason
from agent_core.cell_graph.records import records
from agent_core.json_types import JsonObject


def _said(reason: StaleReason, number: dict[int, int]) -> str:
    other = number.get(reason.cell_index) if reason.cell_index is not None else None
    if reason.kind == "source_changed":
        return "its source was changed after it ran"
    if reason.kind == "redefined" and other is not None:
        return f"it read {reason.name} before cell {other} redefined it at [{reason.execution_count}]"
    if reason.kind == "dependency" and other is not None:
        return f"it read {reason.name} from cell {other}, whose outputs were out of date too"
    return reason.text


def stale_explanations(cells: Sequence[JsonObject]) -> dict[int, str]:
    """Per notebook index, why the cell's saved outputs were already out of date (stale cells only)."""
    graph = NotebookGraph(records(cells))
    number = {node.index: n for n, node in enumerate(graph.nodes, start=1)}
    return {
        node.index: _said(next(r for r in node.stale if r.kind != "hidden_state"), number)
        for node in graph.nodes
        if node.is_stale
    }
