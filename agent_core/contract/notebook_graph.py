"""The notebook's dependency graph on the wire (issue 42): the GET notebook/graph answer, which
carries everything the panel's stale badge needs (cell id, stale or hidden state, the reason), and
the approval card's `makes_stale` line."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from agent_core.contract.shared import WireModel

StaleKind = Literal["redefined", "source_changed", "dependency", "hidden_state"]


class StaleReasonInfo(WireModel):
    kind: StaleKind = Field(
        description="redefined: a name it read was rebound or changed in place after it ran; source_changed: its "
        "source differs from what ran; dependency: it read from a stale cell; hidden_state: it reads a name no cell "
        "defines that the kernel still has."
    )
    text: str = Field(description='The badge\'s hover text: "reads df, redefined by cell 3 at [12]".')
    name: str | None = Field(default=None, description="The name it is about, where one.")
    cell_index: int | None = Field(default=None, description="The cell that caused it (0-based notebook index).")
    cell_id: str | None = None
    execution_count: int | None = None


class GraphCell(WireModel):
    """One code cell in the graph."""

    index: int = Field(description="The cell's position in the notebook (0-based, all cell types counted).")
    cell_id: str = Field(description="Its nbformat id (`index-N` for a cell without a usable one).")
    execution_count: int | None
    reads: list[str] = Field(description="Names it read when it ran (through the functions it called too); bounded.")
    writes: list[str] = Field(description="Names it wrote (rebound or changed in place); bounded.")
    stale: bool = Field(description="Its outputs may be out of date: re-running it would change them.")
    hidden_state: bool = Field(description="It reads a name that only the kernel has (its cell is gone or changed).")
    reasons: list[StaleReasonInfo]


class NotebookGraphAnswer(WireModel):
    """GET notebook/graph: the code cells with what they read and write, which are stale and why."""

    path: str
    cells: list[GraphCell]
    rerun_order: list[str] = Field(
        description="The stale cells' ids in the order that brings them up to date (the order they ran in)."
    )
    kernel: bool = Field(
        description="Whether the notebook's kernel answered (its history tells edited cells, its names hidden state)."
    )


class StaleCellRef(WireModel):
    index: int
    cell_id: str


class MakesStale(WireModel):
    """What approving a run_cell or edit_cell would leave stale."""

    text: str = Field(description='"redefines df, read by cells 4, 7, 9".')
    cells: list[StaleCellRef] = Field(description="The cells it would make stale, in notebook order.")
