"""A notebook's code cells as graph records: nbformat JSON in, CellRecord out, with the source each
execution count ran where the kernel's input history tells it (and it is this notebook's session)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from agent_core.cell_graph.graph import MAX_CELLS, CellRecord
from agent_core.json_types import JsonObject

NBFORMAT_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")  # what nbformat allows a cell id to be


def cell_source(cell: JsonObject) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def records(cells: Sequence[JsonObject], history: Mapping[int, str] | None = None) -> list[CellRecord]:
    """The code cells of `cells` (nbformat dicts, notebook order) as graph records. `history` (count ->
    source, the kernel's current session) gives the source a count ran only when it is this notebook's
    session: most cells whose counts it holds must match it (a saved notebook's counts from before a
    restart would otherwise read as edits)."""
    history = history or {}
    found: list[tuple[int, str, str, int | None]] = []
    for index, cell in enumerate(cells[: MAX_CELLS * 2]):
        if cell.get("cell_type") != "code":
            continue
        count = cell.get("execution_count")
        cell_id = cell.get("id")
        # an id as nbformat allows it, else one by position: a hostile notebook's id never reaches the model
        cell_id = cell_id if isinstance(cell_id, str) and NBFORMAT_ID.fullmatch(cell_id) else f"index-{index}"
        found.append((index, cell_id, cell_source(cell), count if isinstance(count, int) else None))
    known = [(source, history[count]) for _, _, source, count in found if count is not None and count in history]
    same_session = bool(known) and sum(1 for source, ran in known if source == ran) * 2 > len(known)
    return [
        CellRecord(
            index=index,
            cell_id=cell_id,
            source=source,
            execution_count=count,
            ran_source=history.get(count) if same_session and count is not None else None,
        )
        for index, cell_id, source, count in found
    ]
