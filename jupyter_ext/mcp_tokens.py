"""Tokens that open our MCP endpoint (cellwright/mcp) and nothing else, for the outside agents we host
(jupyter_ext.acp_host). An agent may write its MCP configuration to its own logs, so what it holds
must not be the Jupyter server's token, which opens every route of the server. Each token is minted
for one agent process and the owner of its thread, kept here only as its hash, and stops opening the
endpoint when the process ends (revoked, or found exited). Jupyter's identity provider does not know
these tokens, so every other route refuses them as it refuses any unknown token."""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass

PREFIX = "cwmcp_"  # says which kind of token a header carries, so Jupyter's is never compared with ours
_HEADER = re.compile(r"(?:token|bearer)\s+(" + PREFIX + r"[A-Za-z0-9_-]{1,200})\s*", re.IGNORECASE)


@dataclass(frozen=True)
class _Grant:
    owner: str
    alive: Callable[[], bool]  # the agent process still runs


class McpTokens:
    """The scoped tokens of one server's hosted agents."""

    def __init__(self) -> None:
        self._grants: dict[bytes, _Grant] = {}

    def mint(self, owner: str, alive: Callable[[], bool]) -> str:
        """A new token acting as `owner` on the MCP endpoint for as long as `alive()` says."""
        token = PREFIX + secrets.token_urlsafe(32)
        self._grants[_digest(token)] = _Grant(owner, alive)
        return token

    def owner_of(self, token: str) -> str | None:
        """Whom `token` acts for; None for a token never minted, revoked, or whose process ended."""
        grant = self._grants.get(_digest(token))
        if grant is None:
            return None
        if not grant.alive():  # died between turns, before anyone closed it
            self.revoke(token)
            return None
        return grant.owner

    def revoke(self, token: str) -> None:
        self._grants.pop(_digest(token), None)

    def __len__(self) -> int:
        return len(self._grants)


def presented(authorization: str) -> str | None:
    """The scoped token an Authorization header carries ("Bearer cwmcp_..." or "token cwmcp_..."), or
    None when it carries something else (Jupyter's token: the server's own checks apply)."""
    found = _HEADER.fullmatch(authorization.strip())
    return found.group(1) if found else None


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()
