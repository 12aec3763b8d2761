"""Whether a sandbox can be had (issue 37), as health and the approval card say it: apart from the
probes and the tools, which both import it."""

from __future__ import annotations

from dataclasses import dataclass

from agent_core.json_types import JsonObject

OFF_REASON = "the sandbox is off (c.Cellwright.sandbox = 'off'): every such step is approved"


@dataclass(frozen=True)
class SandboxStatus:
    available: bool
    mechanism: str = ""
    reason: str = ""

    def public(self) -> JsonObject:
        """As `GET health` and the approval card say it."""
        found: JsonObject = {"available": self.available}
        if self.mechanism:
            found["mechanism"] = self.mechanism
        if self.reason:
            found["reason"] = self.reason
        return found
