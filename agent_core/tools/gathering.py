"""A run's tools from outside: the MCP servers' (agent_core.mcp) and the notebook's @tool functions
(agent_core.tools.notebook_functions), gathered at the start of every run segment and given to the graph's
RunContext beside the static registry. Gathering never fails a run: what is missing becomes a note
(agent_core.loop.segments.with_tool_notes puts the notes before the run's message)."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from typing import Protocol

from agent_core.config.agent_settings import AgentSettings
from agent_core.environment import ToolEnvironment
from agent_core.tools import TOOLS
from agent_core.tools.external import ExternalToolSpec
from agent_core.tools.notebook_functions import notebook_tools

log = logging.getLogger(__name__)
EXTERNAL_TOOL_AGENTS = ("main", "python_developer")  # the agents that act; the planner and researcher do not
TAKEN = frozenset(TOOLS)
MAX_EXTERNAL_TOOLS = 128  # offered per run at most: every schema goes into every model request
MAX_SCHEMA_CHARS_TOTAL = 200_000


class ToolSource(Protocol):
    """Where a run's MCP tools come from: agent_core.mcp.manager.McpManager, a floor above, hands itself down."""

    async def tools_for_run(
        self, disabled: Iterable[str], taken: frozenset[str], auto_approve: frozenset[str]
    ) -> tuple[dict[str, ExternalToolSpec], list[str]]: ...


def gone_tool_hint(name: str) -> str:
    """What the model is told when it calls a tool the run does not have (any more)."""
    if name.startswith("mcp__"):
        return " MCP tools come from the configured servers: that server is not configured, disabled for this thread, or not running."
    return (
        " If it was a function the notebook registered with @tool: those live in the kernel, and a kernel restart "
        "(or a new kernel) forgets them until the cell that defines them runs again."
    )


async def gather_tools(
    mcp: ToolSource | None, env: ToolEnvironment | None, settings: AgentSettings, disabled: Iterable[str] = ()
) -> tuple[dict[str, ExternalToolSpec], list[str]]:
    """This run's external tools, by name, and notes for the model (servers that failed, tools left out)."""
    specs: dict[str, ExternalToolSpec] = {}
    notes: list[str] = []
    if mcp is not None and settings.mcp_servers:
        try:
            found, more = await mcp.tools_for_run(disabled, TAKEN, settings.auto_approve)
            specs.update(found)
            notes += more
        except Exception:  # a help, never a reason to fail the run
            log.exception("MCP tools could not be gathered")
    if env is not None:
        found, more = await notebook_tools(env, TAKEN | specs.keys(), settings)
        specs.update(found)
        notes += more
    return _within_budget(specs, notes)


def _within_budget(
    specs: dict[str, ExternalToolSpec], notes: list[str]
) -> tuple[dict[str, ExternalToolSpec], list[str]]:
    """The first tools that fit the per-run budget (count and schema size); a note names how many did not."""
    kept: dict[str, ExternalToolSpec] = {}
    size = 0
    for name, spec in specs.items():
        size += len(json.dumps(spec.parameters)) + len(spec.description)
        if len(kept) >= MAX_EXTERNAL_TOOLS or size > MAX_SCHEMA_CHARS_TOTAL:
            break
        kept[name] = spec
    if len(kept) < len(specs):
        notes = [
            *notes,
            f"{len(specs) - len(kept)} tools from MCP servers or the notebook were left out: a run offers "
            f"at most {MAX_EXTERNAL_TOOLS} (disable servers this thread does not need).",
        ]
    return kept, notes
