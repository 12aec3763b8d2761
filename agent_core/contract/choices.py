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
CellStatus = TypeAliasType("CellStatus", Literal["ok", "error", "aborted"])
ToolStatus = TypeAliasType("ToolStatus", Literal["ok", "error", "rejected"])
TodoStatus = TypeAliasType("TodoStatus", Literal["pending", "in_progress", "completed"])
ApprovalDecision = TypeAliasType("ApprovalDecision", Literal["approve", "edit", "reject"])
DiagnosticSeverity = TypeAliasType("DiagnosticSeverity", Literal["error", "warning", "information", "hint"])
