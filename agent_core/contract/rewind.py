"""The shapes of rewind (issue 25): going back to a step of a thread (kernel, notebook cells, files
and conversation together), the branches a rewind leaves readable, and forking a new thread from a
step ("try again from here")."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from agent_core.contract.answers import ThreadMessage
from agent_core.contract.bodies import MAX_ID_CHARS, Body
from agent_core.contract.choices import RewindChoice
from agent_core.contract.review import FileDiff, NotReversible, RewindResult, RewindStep, RewindUndone
from agent_core.contract.shared import NbOutput, WireModel

MAX_USER_MESSAGE = 100_000


class RewindRequest(Body):
    """Go back to just before step `to` (a tool call id) or before the user's message number
    `user_message` (0-based, as GET threads/{id} lists the user's messages): that step and every later
    one are undone. `dry_run`: only say what would be restored and what cannot be."""

    to: str | None = Field(default=None, min_length=1, max_length=MAX_ID_CHARS)
    user_message: int | None = Field(default=None, ge=0, le=MAX_USER_MESSAGE)
    notebook: RewindChoice = Field(default="revert", description="revert: remove the agent's later cells.")
    files: RewindChoice = Field(default="revert", description="revert: put the later written/edited files back.")
    dry_run: bool = False

    @model_validator(mode="after")
    def _one_target(self) -> RewindRequest:
        if (self.to is None) == (self.user_message is None):
            raise ValueError('give exactly one of "to" (a tool call id) and "user_message" (its 0-based number)')
        return self


class ForkRequest(Body):
    from_: str = Field(alias="from", min_length=1, max_length=MAX_ID_CHARS, description="A tool call id.")


class Branch(WireModel):
    branch: str = Field(description="The id of the branch's newest checkpoint.")
    current: bool = Field(description="The branch the thread continues on.")
    from_tool_call_id: str | None = Field(
        description="The first step of this branch after it parted from the current one (None: no step)."
    )
    created_at: str = Field(description="When its newest checkpoint was written (ISO 8601).")
    steps: int = Field(description="Tool calls on this branch.")


class BranchList(WireModel):
    branches: list[Branch] = Field(description="The current branch first, then the others newest first.")


class BranchDetail(WireModel):
    branch: str
    messages: list[ThreadMessage]


class Forked(WireModel):
    thread_id: str
    forked_from: str = Field(description="<thread id>:<tool call id> the new thread continues from.")


class CellState(WireModel):
    source: str
    outputs: list[NbOutput] = Field(default_factory=list, description="As the server stored them.")


class CellChange(WireModel):
    """One notebook cell the steps of the range added or edited: as it was before the range's first
    step on it, and as the range's last step on it left it."""

    cell_id: str
    cell_type: Literal["code", "markdown"]
    tool_call_ids: list[str] = Field(description="The range's steps on this cell, oldest first.")
    before: CellState | None = Field(
        description="None: the cell did not exist before (or, with before_known false, its source was not recorded)."
    )
    before_known: bool = Field(description="False: an edit of a cell whose earlier source no event recorded.")
    after: CellState
    diff: str = Field(description="Unified diff of the source, before to after.")


class FileChange(WireModel):
    """One file the range's steps wrote or edited: before the range's first step on it, and after its
    last one (the file as the next agent step found it, else as it is now)."""

    path: str
    tool_call_ids: list[str] = Field(description="The range's steps on this file, oldest first.")
    before: str | None = Field(description="None: the file did not exist, or (before_known false) was not kept.")
    before_known: bool
    why_unknown: str | None = Field(default=None, description="Why the content before is not known.")
    after: str | None = Field(description="None: the file does not exist (any more), or is not UTF-8 text.")
    after_is_now: bool = Field(description="True: no later agent step touched the file; `after` is it as it is now.")
    changed_since: bool = Field(
        description="after_is_now and the file differs from what the range's last step wrote (changed by someone else)."
    )
    truncated: bool = Field(description="before or after was cut to the size a diff answer carries.")
    diff: str


class ThreadDiff(WireModel):
    """GET threads/{id}/diff: what the agent changed in the notebook and the files over a range of steps."""

    from_tool_call_id: str
    to_tool_call_id: str
    steps: list[str] = Field(description="The tool calls of the range on the thread's current branch, oldest first.")
    cells: list[CellChange]
    files: list[FileChange]


__all__ = ["FileDiff", "NotReversible", "RewindResult", "RewindStep", "RewindUndone", "RewindChoice"]
