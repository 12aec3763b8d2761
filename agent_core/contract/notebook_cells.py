"""The agent cells of a notebook (issue 23): what a panel that binds to a notebook inserts when the
notebook lacks them, and the shape the live bridge writes too. Derived from the stored events of the
owner's threads of that notebook (agent_core/loop/agent_cells.py)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from agent_core.contract.bodies import MAX_PATH_CHARS, Body
from agent_core.contract.review import Provenance
from agent_core.contract.shared import NbOutput, WireModel

MAX_AGENT_CELLS_PAGE = 200  # a page of cells: each carries at most the outputs the server stores for a cell


class AgentCellsRequest(Body):
    notebook_path: str = Field(min_length=1, max_length=MAX_PATH_CHARS, description="Relative to the server root.")
    offset: int = Field(default=0, ge=0, description="Skip this many cells: `next_offset` of the previous page.")
    limit: int = Field(default=MAX_AGENT_CELLS_PAGE, ge=1, le=MAX_AGENT_CELLS_PAGE)


class AgentCell(WireModel):
    """One notebook change the agent made: a code cell it ran, a Markdown cell it added, or (`edit`)
    the new source of an existing cell. The panel writes `cellwright` metadata from the stamps and
    `provenance`, as for a live cell."""

    tool_call_id: str
    thread_id: str
    run_id: str
    cell_type: Literal["code", "markdown"]
    cell_id: str = Field(description="The nbformat id: the new cell's, or with `edit` the cell whose source changed.")
    edit: bool = Field(default=False, description="edit_cell: `source` replaces the source of cell `cell_id`.")
    source: str = Field(description="Markdown cells: the model's text as written; the panel makes it inert.")
    outputs: list[NbOutput] = Field(default_factory=list, description="What the server stored of the cell's outputs.")
    execution_count: int | None = None
    finished: bool = Field(description="The cell has finished (false: it still runs, or its run stopped).")
    undone: bool = Field(default=False, description="The user undid the step: the panel does not insert it.")
    provenance: Provenance | None = None
    seq: int = Field(description="The last event of this cell folded in: live outputs up to it are already here.")


class AgentCells(WireModel):
    """The agent cells of a notebook, in the order they ran (threads by creation, then by event)."""

    cells: list[AgentCell]
    next_offset: int | None = Field(description="Ask again with this offset for the rest; null on the last page.")
