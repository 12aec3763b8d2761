"""The server's side of sandboxed exploration (issue 37): asks the kernel whether it can make the
sandbox, and runs code in a sandboxed fork of it (agent_core.kernel_probes.fork_sandbox, shipped as
a probe: one silent evaluation, no history, no execution count, nothing assigned)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from agent_core.config.agent_settings import AgentSettings
from agent_core.environment import ToolEnvironment, ToolInputError
from agent_core.json_types import JsonObject
from agent_core.kernel_probes import probe as kernel_probe
from agent_core.kernel_probes.introspection import _evaluate  # the probes' busy check and time limit
from agent_core.kernel_probes.sandbox_status import OFF_REASON, SandboxStatus
from agent_core.workspace import workspace_of

STATUS_TIMEOUT = 15.0  # the first check in a kernel forks it once
RESULT_MARGIN = 5.0  # the reply's way back, on top of the sandbox's own wall time


@dataclass
class Exploration:
    """What a fork ran: nbformat outputs as a cell's, and what the sandbox stopped."""

    status: str  # "ok", "error", or "unavailable" (nothing ran: the sandbox could not be made)
    outputs: list[JsonObject] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    reason: str = ""
    fork_ms: float = 0.0
    duration_ms: float = 0.0


@cache
def _source() -> str:
    return (Path(__file__).parent / "fork_sandbox.py").read_text(encoding="utf-8")


def status_expression() -> str:
    return kernel_probe.probe_expression(_source(), "sandbox_status", {})


def explore_expression(code: str, limits: dict[str, float], root: str, hide: list[str], sandbox: bool) -> str:
    payload = {"code": code, "limits": limits, "root": root, "hide": hide, "sandbox": sandbox}
    return kernel_probe.probe_expression(_source(), "explore", payload)


async def kernel_sandbox(env: ToolEnvironment, settings: AgentSettings) -> SandboxStatus:
    """Whether the notebook's kernel can run an exploration sandboxed now (CUDA may have been
    initialised since the last look). ToolInputError when the kernel cannot be asked."""
    if settings.sandbox == "off":
        return SandboxStatus(False, reason=OFF_REASON)
    answer = await _evaluate(env, status_expression(), STATUS_TIMEOUT)
    if not isinstance(answer, dict):
        raise ToolInputError("the kernel's sandbox check gave no answer")
    return SandboxStatus(bool(answer.get("available")), str(answer.get("mechanism", "")), str(answer.get("reason", "")))


def _hidden(env: ToolEnvironment) -> list[str]:
    """The folders the server denies its tools (its data folder: the API key; Jupyter's runtime
    folder: kernel keys), hidden in the sandbox too, beside what the kernel finds itself."""
    return [os.fspath(folder) for folder in workspace_of(env).denied]


async def explore_in_kernel(
    env: ToolEnvironment, code: str, settings: AgentSettings, sandbox: bool = True
) -> Exploration:
    """Run `code` in a fork of the notebook's kernel: sandboxed, or (approved) only forked."""
    limits = {name: float(value) for name, value in settings.sandbox_limits.items()}
    expression = explore_expression(code, limits, os.fspath(env.root_dir), _hidden(env), sandbox)
    answer = await _evaluate(env, expression, limits["wall_s"] + RESULT_MARGIN)
    if not isinstance(answer, dict):
        raise ToolInputError("the kernel's exploration gave no answer")
    outputs = answer.get("outputs")
    return Exploration(
        status=str(answer.get("status", "error")),
        outputs=[o for o in outputs if isinstance(o, dict)] if isinstance(outputs, list) else [],
        blocked=[str(b) for b in answer.get("blocked") or []],
        notes=[str(n) for n in answer.get("notes") or []],
        reason=str(answer.get("reason", "")),
        fork_ms=float(answer.get("fork_ms") or 0.0),
        duration_ms=float(answer.get("duration_ms") or 0.0),
    )
