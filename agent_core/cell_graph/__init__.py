"""The notebook's dependency graph: per code cell the names it reads and writes (the impact
analysis, function bodies counted where they are called), the order the cells ran in, and the
stale cells with the reason for each. Pure Python, no Jupyter imports."""

from agent_core.cell_graph.graph import (
    CellNode,
    CellRecord,
    ChangeEffect,
    NotebookGraph,
    StaleReason,
)
from agent_core.cell_graph.names import CellNames, cell_names

__all__ = ["CellNames", "CellNode", "CellRecord", "ChangeEffect", "NotebookGraph", "StaleReason", "cell_names"]
