"""The contract's named choices (plain Literal aliases, no pydantic): the settings import them at
server start, before anything needs the models, so loading them must cost nothing."""

from __future__ import annotations

from typing import Literal

from typing_extensions import TypeAliasType

# The route error kinds live with the error hierarchy (agent_core.errors, a floor below the contract)
# and are listed here with the rest of the contract's choices.
from agent_core.errors import RouteErrorKind as RouteErrorKind
from agent_core.errors import UndoRefusal as UndoRefusal

# Named aliases, not bare Literals: each becomes one named schema (OpenAPI components, one TS type).
Mode = TypeAliasType("Mode", Literal["single", "multi"])
# How much the agent may do: explain only, plan first (the plan is approved before it acts), or act.
Autonomy = TypeAliasType("Autonomy", Literal["ask", "plan", "agent"])
ToolCalling = TypeAliasType("ToolCalling", Literal["native", "prompt", "auto"])
CheckpointerKind = TypeAliasType("CheckpointerKind", Literal["sqlite", "postgres", "memory"])
# waiting_for_cell (issue 38): a long cell went on in the background; no model call until it ends.
RunStatus = TypeAliasType(
    "RunStatus", Literal["completed", "awaiting_approval", "cancelled", "failed", "waiting_for_cell"]
)
ThreadStatus = TypeAliasType(
    "ThreadStatus",
    Literal["idle", "running", "completed", "awaiting_approval", "cancelled", "failed", "waiting_for_cell"],
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

# The error kinds: what the panel and API clients switch on. Every kind is listed here (the route kinds
# through agent_core.errors): mypy refuses
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
    "EventErrorKind", LLMErrorKind | Literal["llm_retrying", "internal", "kernel_unresponsive", "agent_process"]
)
RewindChoice = TypeAliasType("RewindChoice", Literal["revert", "keep"])  # a rewind's notebook / files
