"""Why the driver refuses what was asked of a thread: each a CellwrightError whose `kind` is the
contract's error kind, shown as an HTTP status by the server and as a line in the cell by `%agent`."""

from __future__ import annotations

from agent_core.errors import BadRequest, Conflict, NotFound


class RunRefused(Conflict):
    """The thread cannot do what was asked right now; `kind` is the error kind of API.md."""


class ThreadBusy(RunRefused):
    """Another process (the server, or a kernel's %agent) is driving this thread right now."""

    kind = "run_active"

    def __init__(self, holder: str, action: str = "start another run") -> None:
        super().__init__(
            f"{holder[:1].upper()}{holder[1:]} is running this thread right now: wait for it to finish "
            f"(or interrupt that kernel) before you {action}."
        )


class ApprovalPending(RunRefused):
    kind = "approval_pending"


class NotPending(RunRefused):
    kind = "not_pending"


class BadDecision(BadRequest):
    kind = "bad_args"


class BadRule(BadRequest):
    kind = "bad_rule"


class PolicyWider(BadRequest):
    """A run asked for a wider data_policy than the server's (agent_core.privacy)."""

    kind = "policy_wider"


class ThreadNotFound(NotFound):
    kind = "thread_not_found"
