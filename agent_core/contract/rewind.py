"""The shapes of rewind (issue 25): going back to a step of a thread (kernel, notebook cells, files
and conversation together), the branches a rewind leaves readable, and forking a new thread from a
step ("try again from here")."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from agent_core.contract.answers import ThreadMessage
from agent_core.contract.bodies import MAX_ID_CHARS, Body
from agent_core.contract.shared import WireModel

RewindChoice = Literal["revert", "keep"]
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


class NotReversible(WireModel):
    tool_call_id: str
    why: str


class RewindStep(WireModel):
    """One later step, as the rewind card lists it (newest first)."""

    tool_call_id: str
    name: str = Field(description="The tool it called.")
    restores: list[str] = Field(description="What going back restores for this step, one line each.")
    cannot: list[str] = Field(description="What stays as it is (shell, network, installs, a lost snapshot...).")


class RewindResult(WireModel):
    """POST threads/{id}/rewind (with dry_run: what would happen); also the `rewound` event's fields."""

    dry_run: bool
    steps: list[RewindStep] = Field(description="The steps gone back over, newest first.")
    restored: list[str] = Field(description="Kernel variables set back.")
    removed: list[str] = Field(description="Kernel variables the steps created, deleted again.")
    cells_removed: list[str] = Field(
        description="Tool call ids whose notebook cells the panel removes (notebook: revert)."
    )
    files_reverted: list[str] = Field(description="Paths put back as they were before the steps (files: revert).")
    not_reversible: list[NotReversible]
    branch: str = Field(description="The thread's branch after the rewind (empty on a dry run).")
    previous_branch: str = Field(description="The branch gone back from: still readable (GET branches).")


class RewindUndone(WireModel):
    """POST threads/{id}/rewind/undo: the branch the rewind left is the thread's again."""

    branch: str
    files_restored: list[str] = Field(description="Files put back as they were just before the rewind.")
    not_restored: list[str] = Field(description="What the undo cannot bring back, e.g. the kernel's variables.")


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
