"""verify_notebook (issue 26): does the saved notebook re-run from the top? The route's body and the
answer the tool and the route share (agent_core/verify/)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from agent_core.contract.bodies import MAX_PATH_CHARS, Body
from agent_core.contract.shared import WireModel

VerifyStatus = Literal["verified", "differs", "fails"]
CellVerdict = Literal["same", "differs", "fails", "ran", "not_run"]


class VerifyRequest(Body):
    path: str = Field(min_length=1, max_length=MAX_PATH_CHARS, description="The notebook, relative to the server root.")


class VerifiedCell(WireModel):
    """One code cell of the saved notebook, re-run in the shadow kernel."""

    index: int = Field(description="The cell's position in the notebook (0-based, all cell types counted).")
    number: int = Field(description="1-based position among the code cells: 'cell N' as the badge says it.")
    cell_id: str | None = None
    tool_call_id: str | None = Field(default=None, description="Set for an agent cell (its `cellwright` metadata).")
    status: CellVerdict = Field(
        description="same/differs: an agent cell whose outputs match (or not) what its thread recorded; ran: a "
        "user's cell that ran without error (its outputs are not compared); fails: it raised or timed out; "
        "not_run: after the first failure."
    )
    detail: str = Field(default="", description="The error, or the first output that differs (shortened).")
    explained: str | None = Field(
        default=None,
        description="differs: why the dependency graph expected it (issue 42), e.g. 'it read df before cell 3 "
        "redefined it at [12]' (cells as 1-based code-cell numbers).",
    )


class VerifyResult(WireModel):
    """What re-running the saved notebook top to bottom in a fresh kernel found."""

    status: VerifyStatus = Field(
        description="fails: a cell failed; differs: an agent cell's outputs differ, a name comes from hidden "
        "state, or cells ran out of order; verified otherwise."
    )
    path: str
    kernel_name: str = Field(description="The kernelspec the shadow kernel ran (the notebook's own).")
    cells: list[VerifiedCell]
    hidden_state: list[str] = Field(
        description="Names a cell reads that no earlier cell defines: they came from a deleted cell, a later "
        "cell, or something run outside the notebook."
    )
    out_of_order: list[int] = Field(
        description="Code cells (1-based numbers) whose saved execution count is lower than an earlier cell's."
    )
    at_cell: int | None = Field(default=None, description="The first failing, else differing, code cell (1-based).")
    seconds: float = Field(description="Time taken, the shadow kernel's start and shutdown included.")
