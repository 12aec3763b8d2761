"""How much the agent may do in a run (API.md: the run request's `autonomy`), enforced here rather
than asked of the model: Ask offers only tools that change nothing; Plan offers those and
`write_todos`, whose call is the plan the user approves (or edits) before anything else is offered;
Agent offers everything. A call to a tool the mode does not offer is refused with a message the
model can act on."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agent_core.contract.shared import Autonomy
from agent_core.tools.base import ToolSpec

PLAN_TOOL = "write_todos"

_PROMPTS: dict[str, str] = {
    "ask": (
        "Mode: Ask. You may read files, the notebook and the kernel's state, and explain. Look at the data with "
        "explore (a sandboxed copy of the kernel: it changes nothing). You cannot run cells, change files or cells, "
        "or run commands: put any code that should change something in your final answer for the user to run."
    ),
    "plan": (
        "Mode: Plan. First investigate with the read-only tools if you need to, then call write_todos with your "
        "plan as todos. The user approves or edits the plan; only then can you run code and change things."
    ),
}


@dataclass(frozen=True)
class ToolPolicy:
    autonomy: Autonomy = "agent"
    plan_approved: bool = False

    @property
    def acting(self) -> bool:
        """Every tool is offered: Agent mode, or Plan mode once the plan is approved."""
        return self.autonomy == "agent" or (self.autonomy == "plan" and self.plan_approved)

    def offers(self, name: str, spec: ToolSpec) -> bool:
        """Ask, and Plan before its plan is approved, offer the tools that touch nothing (ToolSpec.touches):
        reading, planning, answering, and delegating (a sub-agent inherits the mode)."""
        if self.acting:
            return True
        if name == "task":
            return self.autonomy == "ask"  # a planner in Plan mode delegates once its plan is approved
        return spec.touches == "nothing"

    def asks_for_plan(self, name: str) -> bool:
        """This call is the plan: it waits for the user's approval whatever auto_approve says."""
        return self.autonomy == "plan" and not self.plan_approved and name == PLAN_TOOL

    def refusal(self, name: str) -> str:
        if self.autonomy == "ask":
            return (
                f"{name} is not available in Ask mode: the user asked for an explanation only. Answer with "
                "final_answer; put code there for the user to run."
            )
        return f"{name} is not available until the user approves your plan: call {PLAN_TOOL} with the plan first."

    def prompt_note(self) -> str:
        return "" if self.acting else _PROMPTS[self.autonomy]

    def subagent_autonomy(self) -> Autonomy:
        return "agent" if self.acting else self.autonomy


def policy_of(state: Mapping[str, Any]) -> ToolPolicy:
    return ToolPolicy(state.get("autonomy", "agent"), bool(state.get("plan_approved")))
