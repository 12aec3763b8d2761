"""The `acp_agents` setting: outside coding agents (Claude Code, Codex, Gemini CLI, fast-agent) that
Cellwright hosts per thread over the Agent Client Protocol, each named by the command that starts
it. Operator settings: env values are secrets and never leave the server."""

from __future__ import annotations

import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from traitlets import Dict, Float, HasTraits, TraitError, validate

from agent_core.config.masked_secrets import MaskedSecretError, masked, with_kept_secrets
from agent_core.json_types import JsonObject

AGENT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 _.-]{0,63}$")
OWN_AGENT = "cellwright"
MAX_AGENTS = 32
MAX_ARGS = 100
MAX_VALUE_CHARS = 10_000
MAX_ENV = 100
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
# What to install for the commands the agents' own docs name, when the command is missing.
INSTALL_HINTS = {
    "npx": "install Node.js and npm (npx runs the agent's npm package)",
    "node": "install Node.js",
    "gemini": "install Gemini CLI: npm install -g @google/gemini-cli",
    "codex-acp": "install Codex's ACP adapter: npm install -g @zed-industries/codex-acp",
    "claude-code-acp": "install Claude Code's ACP adapter: npm install -g @zed-industries/claude-code-acp",
    "fast-agent-acp": "install fast-agent: pip install fast-agent-acp (Python 3.13 or newer)",
    "uvx": "install uv (pip install uv)",
}


@dataclass(frozen=True)
class AcpAgentConfig:
    name: str
    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)

    def executable(self) -> str | None:
        """The command's path, if it can be started here."""
        return shutil.which(self.command)

    def unavailable_reason(self) -> str | None:
        if self.executable() is not None:
            return None
        base = self.command.rsplit("/", 1)[-1]
        hint = INSTALL_HINTS.get(base, "install it or put it on the server's PATH")
        return f"{self.command!r} was not found: {hint}."


def parse_agents(value: Mapping[str, Any]) -> dict[str, AcpAgentConfig]:
    """Each entry checked, with an error that names the agent and the field (never an env value)."""
    if not isinstance(value, Mapping):
        raise TraitError('acp_agents must be an object: agent name -> {"command", "args"?, "env"?}.')
    if len(value) > MAX_AGENTS:
        raise TraitError(f"acp_agents: at most {MAX_AGENTS} agents.")
    return {name: _agent(name, entry) for name, entry in value.items()}


def _agent(name: object, entry: object) -> AcpAgentConfig:
    where = f"acp_agents[{str(name)[:100]!r}]"
    if not isinstance(name, str) or not AGENT_NAME.match(name) or name == OWN_AGENT:
        raise TraitError(f"{where}: a name of letters, digits, spaces, '_', '.', '-' (not {OWN_AGENT!r}).")
    if not isinstance(entry, Mapping) or set(entry) - {"command", "args", "env"}:
        raise TraitError(f'{where} must be {{"command": ..., "args"?: [...], "env"?: {{...}}}}.')
    command, args, env = entry.get("command"), entry.get("args") or [], entry.get("env") or {}
    if not isinstance(command, str) or not command.strip() or len(command) > MAX_VALUE_CHARS or _control(command):
        raise TraitError(f"{where}['command'] must be the program that starts the agent, e.g. \"npx\".")
    command = command.strip()
    if any(ch.isspace() for ch in command) and not Path(command).is_file():
        # "npx @zed-industries/codex-acp" typed as the command: no program has that name
        raise TraitError(
            f"{where}['command'] is one program, not a command line: put what follows it in 'args', e.g. "
            '{"command": "npx", "args": ["@zed-industries/codex-acp"]}.'
        )
    if not isinstance(args, list) or len(args) > MAX_ARGS or not all(_plain(a) for a in args):
        raise TraitError(f"{where}['args'] must be a list of strings (at most {MAX_ARGS}, no control characters).")
    if (
        not isinstance(env, Mapping)
        or len(env) > MAX_ENV
        or not all(isinstance(k, str) and ENV_NAME.match(k) and _plain(v) for k, v in env.items())
    ):
        raise TraitError(
            f"{where}['env'] must map variable names (letters, digits, '_') to strings (at most {MAX_ENV})."
        )
    return AcpAgentConfig(name, command, tuple(args), dict(env))


def _control(text: str) -> bool:
    """A NUL or other control character: no program, argument or variable can hold one (exec refuses)."""
    return any(ord(ch) < 32 or ord(ch) == 127 for ch in text)


def _plain(value: object) -> bool:
    return isinstance(value, str) and len(value) <= MAX_VALUE_CHARS and not _control(value)


class AcpAgentSettings(HasTraits):
    acp_agents = Dict(
        help='Outside agents hosted per thread over ACP, by name: {"command", "args"?, "env"?}, e.g. '
        '{"Codex": {"command": "npx", "args": ["@zed-industries/codex-acp"]}}. They use their own model and '
        "account; their file writes, commands and permission requests go through Cellwright's approvals. Env values "
        "are secrets: never shown (the settings form shows them masked and keeps them for the same command and args).",
    ).tag(config=True, runtime=True)

    acp_idle_timeout = Float(
        300.0,
        min=1.0,
        help="Seconds a hosted ACP agent may send nothing, with no approval card open and no tool call of its "
        "own under way, before its run ends as hung (its process is stopped; the next message starts it again).",
    ).tag(config=True)

    @validate("acp_agents")
    def _valid_agents(self, proposal: Any) -> JsonObject:
        parse_agents(proposal.value)
        return dict(proposal.value)

    def public_acp_agents(self) -> JsonObject:
        """GET config's acp_agents: each agent's command and args, its env's names with masked values."""
        return {
            agent.name: {"command": agent.command, "args": list(agent.args), "env": masked(agent.env)}
            for agent in parse_agents(self.acp_agents).values()
        }

    def acp_agents_from_form(self, value: object) -> object:
        """PUT config's acp_agents with the masked env values it sent back replaced by the saved ones, for
        an agent of the same name, command and args; TraitError (naming the agent and variable) otherwise."""
        if not isinstance(value, Mapping):
            return value  # the trait's check says what it must be
        try:
            return with_kept_secrets(value, self.acp_agents, "acp_agents", "agent")
        except MaskedSecretError as exc:
            raise TraitError(str(exc)) from None

    def acp_agent(self, name: str) -> AcpAgentConfig | None:
        return parse_agents(self.acp_agents).get(name)

    def agent_listing(self) -> list[JsonObject]:
        """GET agents: ours first, then each ACP agent with whether it could start (never its env)."""
        listing: list[JsonObject] = [{"name": OWN_AGENT, "kind": "cellwright", "available": True}]
        for agent in parse_agents(self.acp_agents).values():
            reason = agent.unavailable_reason()
            listing.append(
                {
                    "name": agent.name,
                    "kind": "acp",
                    "available": reason is None,
                    **({"reason": reason} if reason else {}),
                }
            )
        return listing
