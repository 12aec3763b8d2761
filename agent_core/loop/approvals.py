"""The approval step of a risky call: the card the user sees (asked once per call in this process)
and what the user's decision means for the call (run as asked, run edited, or rejected)."""

from __future__ import annotations

import logging
from dataclasses import replace

from agent_core.contract.bodies import Decision
from agent_core.json_types import JsonObject
from agent_core.tools import ToolContext, ToolOutcome, ToolSpec
from agent_core.tools.external import origin_fields

log = logging.getLogger(__name__)

ASKED_KEPT = 256


async def approval_request(
    spec: ToolSpec, args: JsonObject, tool_ctx: ToolContext, agent: str, task_id: str
) -> JsonObject:
    request: JsonObject = {
        "id": tool_ctx.call_id,
        "name": spec.name,
        "args": args,
        "description": spec.describe_call(args),
        "diagnostics": [],
        "diff": None,
        "agent": agent,
    }
    if task_id:
        request["task_id"] = task_id
    request.update(origin_fields(spec))
    try:
        request.update(await spec.preview(args, tool_ctx))
    except Exception as exc:  # a preview is a help for the user, never a reason to fail the call
        log.warning("preview of %s failed: %s", spec.name, exc)
    return request


class ApprovalCards:
    """The approval requests a thread driver (ThreadRunner.approvals) made, by (ledger scope, call
    id): the node re-runs from its top on resume, and interrupt() then ignores its value, so the
    card's diagnostics (a lint, maybe a kernel round trip) need not be computed again while the
    approved cell waits. After a restart they are."""

    def __init__(self) -> None:
        self._asked: dict[tuple[str, str], JsonObject] = {}

    async def request_once(
        self, spec: ToolSpec, args: JsonObject, tool_ctx: ToolContext, agent: str, task_id: str, scope: str
    ) -> JsonObject:
        key = (scope, tool_ctx.call_id)
        request = self._asked.get(key)
        if request is None or request["args"] != args:
            request = await approval_request(spec, args, tool_ctx, agent, task_id)
            if len(self._asked) >= ASKED_KEPT:
                del self._asked[next(iter(self._asked))]
            self._asked[key] = request
        return request


def decoded(resumed: object) -> Decision:
    """The user's decision as the interrupt hands it back (the checkpoint keeps it as a dict): the
    route checked it already; read once here, typed from here to the tool."""
    return Decision.model_validate(resumed)


def decided_context(decision: Decision, proposed: JsonObject, tool_ctx: ToolContext) -> ToolContext:
    """The call's context with how the user decided (kept in the cell's provenance)."""
    if decision.decision == "edit":
        return replace(tool_ctx, decision="edited", proposed_args=proposed)
    return replace(tool_ctx, decision="approved")


def decided_args(decision: Decision, args: JsonObject) -> tuple[JsonObject | None, ToolOutcome | None]:
    """The arguments to run with, or the outcome of a rejection."""
    if decision.decision == "reject":
        reason = (decision.reason or "").strip() or "no reason given"
        return None, ToolOutcome(
            "rejected",
            f"The user rejected this call. Reason: {reason}. Do not run it again unchanged; adapt your plan to the reason.",
            summary=f"Rejected: {reason}",
        )
    if decision.decision == "edit":
        return dict(decision.args or {}), None
    return args, None
