"""The shapes of "Run as cell" (issue 37): an explore step of a thread turned into a notebook cell,
through the usual approval. The request carries no code: the step's own code is read from the
thread's record, so a page cannot have other code run under the step's name."""

from __future__ import annotations

from pydantic import ConfigDict, Field

from agent_core.contract.bodies import MAX_ID_CHARS, Body
from agent_core.contract.shared import WireModel


class StepAsCell(Body):
    """POST threads/{id}/steps/{tool_call_id}/as_cell: nothing to send (an empty object). A `code`
    field is refused: the cell's code is the explore step's, as the thread recorded it."""

    model_config = ConfigDict(strict=True, extra="forbid")


class AsCellStarted(WireModel):
    """The one-call run that proposes the cell: its approval card follows in the thread's events."""

    tool_call_id: str = Field(
        max_length=MAX_ID_CHARS, description="The run_cell call's id: the approval card's (POST approvals/{this})."
    )
    after: int = Field(ge=0, description="The seq the run's events follow: read the thread's events after it.")
