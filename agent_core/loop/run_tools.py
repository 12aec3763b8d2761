"""What a segment of a run starts with besides the graph's state: the run's outside tools (MCP
servers' and the notebook's @tool functions), gathered at a run's start and kept per thread, so a
segment an approval (or a cell's end) resumes offers the same; and a new run's graph input."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

from agent_core.config.agent_settings import AgentSettings
from agent_core.environment import AsksAhead
from agent_core.json_types import JsonObject, json_items
from agent_core.kernel_probes.introspection import snapshot_expression
from agent_core.loop.mentions import parse_mentions, run_context_notes
from agent_core.loop.segments import with_tool_notes
from agent_core.loop.state import new_run_input
from agent_core.tools.gathering import gather_tools
from agent_core.tools.notebook_functions import discovery_expression
from agent_core.undo.book import UndoBook
from agent_core.undo.steps import pending_notes

if TYPE_CHECKING:
    from agent_core.contract.bodies import StartRun
    from agent_core.loop.mentions import MentionView
    from agent_core.loop.state import AgentUpdate
    from agent_core.mcp.manager import McpManager
    from agent_core.tools import ToolEnvironment
    from agent_core.tools.external import ExternalToolSpec

McpSource = Callable[[], "McpManager | None"]  # the MCP servers' connections, made on first use (None: none yet)
OutsideTools = tuple[dict[str, "ExternalToolSpec"], list[str]]  # the tools, and notes about them for the model
RUN_TOOLS_KEPT = 256  # threads whose outside tools are remembered for their resumed segments


class RunTools:
    """Each thread's outside tools as its run's first segment found them: a resumed segment offers
    the same (asking the kernel again sat between Approve and the cell)."""

    def __init__(self, mcp: McpSource | None) -> None:
        self._mcp = mcp
        self._kept: dict[str, OutsideTools] = {}

    async def of(
        self, thread_id: str, disabled: list[str], env: ToolEnvironment, settings: AgentSettings, fresh: bool
    ) -> OutsideTools:
        """This segment's MCP and notebook tools (and notes about them, for a new run): gathered at
        the start of each run, and for a resumed segment this process did not start the run of."""
        if not fresh and thread_id in self._kept:
            return self._kept[thread_id]
        mcp = self._mcp() if self._mcp is not None and settings.mcp_servers else None
        found = await gather_tools(mcp, env, settings, disabled)
        self._kept.pop(thread_id, None)
        if len(self._kept) >= RUN_TOOLS_KEPT:
            del self._kept[next(iter(self._kept))]
        self._kept[thread_id] = found
        return found

    async def first_segment(
        self,
        thread_id: str,
        request: StartRun,
        env: ToolEnvironment,
        settings: AgentSettings,
        prior: JsonObject,
        undo: UndoBook,
    ) -> tuple[AgentUpdate, list[MentionView], dict[str, ExternalToolSpec]]:
        """A new run's graph input (the message after its context and notes), the mentions for
        `run_started`, and its outside tools. The notebook's @tool functions and the run's context
        are both read from the kernel: asked at once, it answers one after the other with no round
        trip in between."""
        disabled = request.disabled_mcp_servers
        (extra, notes), (context, mentions, told) = await asyncio.gather(
            self.of(
                thread_id,
                disabled if disabled is not None else [str(n) for n in json_items(prior.get("disabled_mcp_servers"))],
                env,
                settings,
                fresh=True,
            ),
            run_context_notes(
                request.message,
                env,
                settings,
                _str_or_none(prior.get("kernel_identity")),
                pending_notes(undo, thread_id),
            ),
        )
        graph_input: AgentUpdate = {
            **new_run_input(
                request.message, request.mode, context, request.autonomy, request.data_policy, request.background_after
            ),
            **told,
        }
        if disabled is not None:  # kept with the thread (in its state) until another list comes
            graph_input["disabled_mcp_servers"] = list(disabled)
        return with_tool_notes(graph_input, extra, notes, prior), mentions, extra


def _str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None


def ask_probes_ahead(env: ToolEnvironment, message: str, settings: AgentSettings) -> None:
    """Where the environment can (AsksAhead), send now the kernel evaluations a new run's
    `first_segment` makes (notebook_tools' @tool discovery; context_for's namespace snapshot when the
    message @mentions nothing): they leave while the run's request is answered and its lease taken,
    not a few turns of the loop later, and the kernel's answer is there when the run asks (issue 41)."""
    if not isinstance(env, AsksAhead):
        return
    probes: list[str] = [discovery_expression()]
    if settings.namespace_snapshot and not parse_mentions(message):
        probes.append(snapshot_expression())
    env.ask_ahead(probes)
