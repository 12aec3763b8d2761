"""The contract's named choices (plain Literal aliases, no pydantic): the settings import them at
server start, before anything needs the models, so loading them must cost nothing."""

from __future__ import annotations

from typing import Literal

from typing_extensions import TypeAliasType

# Named aliases, not bare Literals: each becomes one named schema (OpenAPI components, one TS type).
Mode = TypeAliasType("Mode", Literal["single", "multi"])
# How much the agent may do: explain only, plan first (the plan is approved before it acts), or act.
Autonomy = TypeAliasType("Autonomy", Literal["ask", "plan", "agent"])
ToolCalling = TypeAliasType("ToolCalling", Literal["native", "prompt", "auto"])
CheckpointerKind = TypeAliasType("CheckpointerKind", Literal["sqlite", "postgres", "memory"])
RunStatus = TypeAliasType("RunStatus", Literal["completed", "awaiting_approval", "cancelled", "failed"])
ThreadStatus = TypeAliasType(
    "ThreadStatus", Literal["idle", "running", "completed", "awaiting_approval", "cancelled", "failed"]
)
Vision = TypeAliasType("Vision", Literal["auto", "on", "off"])
# What of the user's data may reach the model (agent_core/privacy), widest first.
DataPolicy = TypeAliasType("DataPolicy", Literal["full", "redact", "schema_only"])
RequestKind = TypeAliasType("RequestKind", Literal["turn", "summary", "completion"])  # a recorded model request
CellStatus = TypeAliasType("CellStatus", Literal["ok", "error", "aborted"])
ToolStatus = TypeAliasType("ToolStatus", Literal["ok", "error", "rejected"])
TodoStatus = TypeAliasType("TodoStatus", Literal["pending", "in_progress", "completed"])
ApprovalDecision = TypeAliasType("ApprovalDecision", Literal["approve", "edit", "reject"])
DiagnosticSeverity = TypeAliasType("DiagnosticSeverity", Literal["error", "warning", "information", "hint"])

# The error kinds: what the panel and API clients switch on. Every kind is listed here: mypy refuses
# one that is not (agent_core.errors and LLMError type their `kind` with these), tests/test_contract.py
# refuses one raised or emitted as a bare string, and the panel gets them as TypeScript unions.
#
# What a failed model call says (agent_core/llm/failures.py LLMError): an `error` event of a run, and
# the connection check's report.
LLMErrorKind = TypeAliasType(
    "LLMErrorKind",
    Literal[
        "llm_not_configured",
        "llm_timeout",
        "llm_unreachable",
        "llm_auth",
        "llm_model_not_found",
        "llm_rate_limited",
        "images_unsupported",
        "tools_unsupported",
        "llm_error",
    ],
)
# The `kind` of an `error` event: a failed model call, a retry notice, a bug, or a kernel that does not answer.
EventErrorKind = TypeAliasType(
    "EventErrorKind", LLMErrorKind | Literal["llm_retrying", "internal", "kernel_unresponsive"]
)
# Why POST threads/{id}/undo/{call_id} refuses (agent_core/undo/steps.py UndoRefused); the last four
# are the kernel's own answers (kernel_side/snapshots.py).
RewindChoice = TypeAliasType("RewindChoice", Literal["revert", "keep"])  # a rewind's notebook / files
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
