"""The one error hierarchy of what a caller asked for and cannot have: every refusal that reaches a
route is a `CellwrightError` with a `kind` (what the panel and API clients switch on, listed in the
contract as `RouteErrorKind`) and a `category` (what the server maps to an HTTP status, once, in
jupyter_ext/errors.py). The magic shows the same errors as a line in the cell."""

from __future__ import annotations

from typing import Literal

from typing_extensions import TypeAliasType

# Why POST threads/{id}/undo/{call_id} refuses (agent_core/undo/steps.py UndoRefused); the last four
# are the kernel's own answers (kernel_probes/snapshots.py).
UndoRefusal = TypeAliasType(
    "UndoRefusal",
    Literal[
        "not_undoable",
        "no_snapshot",
        "kernel_unavailable",
        "already_undone",
        "kernel_restarted",
        "snapshot_store_changed",
        "snapshot_gone",
    ],
)
# The `error` of a route's error answer (ErrorBody): the kinds of agent_core.errors' CellwrightError.
RouteErrorKind = TypeAliasType(
    "RouteErrorKind",
    UndoRefusal
    | Literal[
        # the categories' defaults (agent_core/errors.py), and tornado's own errors (handlers.write_error)
        "bad_request",
        "not_found",
        "conflict",
        "unavailable",
        "misconfigured",
        "http_error",
        "internal",
        # a body or a query the client must fix (contract/bodies.py parse_json, parse_body, field_kinds)
        "bad_json",
        "body_too_large",
        "missing_fields",
        "bad_mode",
        "bad_autonomy",
        "bad_decision",
        "bad_args",
        "bad_rule",
        "policy_wider",  # a run asked for a wider data_policy than the server's
        # paths (agent_core/workspace.py)
        "bad_path",
        "path_outside_root",
        "hidden_path",
        "path_denied",
        # threads and runs (loop/thread_runner.py, jupyter_ext/run_manager.py)
        "thread_not_found",
        "step_not_found",
        "not_explore",  # Run as cell of a step that is not an explore call (jupyter_ext/as_cell.py)
        "run_active",
        "approval_pending",
        "not_pending",
        "kernel_elsewhere",
        "llm_not_configured",
        # what the server needs is down, or busy
        "database_unavailable",
        "diagnostics_unavailable",
        # inline completion (agent_core/completion): turned off by c.Cellwright.inline_completion
        "completion_off",
    ],
)


Category = Literal["bad_request", "not_found", "conflict", "too_large", "unavailable", "misconfigured"]


class CellwrightError(Exception):
    """A refusal the caller can act on: `message` says what went wrong and what to do."""

    category: Category = "bad_request"
    kind: RouteErrorKind = "bad_request"

    def __init__(self, message: str, kind: RouteErrorKind | None = None, category: Category | None = None) -> None:
        super().__init__(message)
        self.message = message
        if kind:
            self.kind = kind
        if category:
            self.category = category


class BadRequest(CellwrightError):
    category = "bad_request"


class NotFound(CellwrightError):
    category = "not_found"
    kind: RouteErrorKind = "not_found"


class Conflict(CellwrightError):
    """The thread's (or the step's) state does not allow it now."""

    category = "conflict"
    kind: RouteErrorKind = "conflict"


class Unavailable(CellwrightError):
    """Something the server needs is down (the shared database): retry later."""

    category = "unavailable"
    kind: RouteErrorKind = "unavailable"


class Misconfigured(CellwrightError):
    """The server cannot serve this until its operator fixes the configuration (the message says how)."""

    category = "misconfigured"
    kind: RouteErrorKind = "misconfigured"
