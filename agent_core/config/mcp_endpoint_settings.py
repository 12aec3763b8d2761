"""The settings of Cellwright's MCP endpoint (jupyter_ext.mcp_endpoint), part of `c.Cellwright`:
whether it is served, and what each outside agent may do. Operator settings: not changed at run time."""

from __future__ import annotations

from typing import Any, TypedDict

from traitlets import Bool, Dict, Float, HasTraits, TraitError, validate

from agent_core.contract.choices import Autonomy
from agent_core.json_types import JsonObject

AUTONOMIES = ("ask", "plan", "agent")


class ClientRuleSettings(TypedDict, total=False):
    """One agent's entry of mcp_clients, as _valid_clients checked it."""

    autonomy: Autonomy
    auto_approve: list[str]


class McpEndpointSettings(HasTraits):
    serve_mcp = Bool(
        True,
        help="Serve the MCP endpoint at cellwright/mcp for outside agents (Claude Code, Codex, Cursor). It grants "
        "nothing a token holder lacks: every risky call waits for the user's approval in the panel.",
    ).tag(config=True)
    mcp_clients = Dict(
        help='Per outside agent, by the name its MCP client gives (clientInfo), or "*" for any: '
        '{"autonomy": "ask" | "plan" | "agent", "auto_approve": [tool names]}. Ask offers read-only tools only; '
        "auto_approve, when given, replaces the server's for that agent.",
    ).tag(config=True)
    mcp_approval_wait = Float(
        240.0,
        help="Seconds an MCP call waits for the user's decision before it answers that it is still waiting "
        "(the card stays; the agent calls wait_for_decision). Keep it under your agent's tool time-out.",
    ).tag(config=True)

    @validate("mcp_clients")
    def _valid_clients(self, proposal: Any) -> JsonObject:
        # loaded on first use: this module is read at the server's start (bench/server_start.py)
        from agent_core.contract.tool_names import TOOL_NAMES

        for name, rules in proposal.value.items():
            if not isinstance(rules, dict) or set(rules) - {"autonomy", "auto_approve"}:
                raise TraitError(f'mcp_clients[{name!r}] must be {{"autonomy": ..., "auto_approve": [...]}}.')
            if rules.get("autonomy", "agent") not in AUTONOMIES:
                raise TraitError(f"mcp_clients[{name!r}]['autonomy'] must be one of {', '.join(AUTONOMIES)}.")
            unknown = [t for t in rules.get("auto_approve", []) if t not in TOOL_NAMES]
            if unknown:
                raise TraitError(f"mcp_clients[{name!r}]['auto_approve'] names no tool: {unknown}.")
        return dict(proposal.value)

    def client_rules(self, client: str) -> ClientRuleSettings:
        """The rules of the agent named `client` (its own, else "*"'s, else none)."""
        rules: ClientRuleSettings = self.mcp_clients.get(client) or self.mcp_clients.get("*") or ClientRuleSettings()
        return rules
