"""The "Always allow" a user gave in an outside agent's thread (jupyter_ext.acp_host), kept in the data
folder (owner-only) so that it holds after a server restart, as the card promised: "in this thread,
until cleared". It belongs to the agent program it was given to: the same thread's agent re-pointed
to another command or args (acp_agents edited) asks again. Loaded without the ACP SDK: a thread's
detail reads it before any agent process is started."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING

from agent_core.config import saved_settings as json_file

if TYPE_CHECKING:
    from agent_core.config.acp_agents import AcpAgentConfig

MAX_THREADS = 1000  # threads remembered; the oldest is forgotten first
MAX_KINDS = 20  # kinds per thread (ACP has ten tool kinds; an agent's own names are bounded too)
MAX_KIND_CHARS = 60


def program_of(config: AcpAgentConfig) -> str:
    """What an "always" was given to: the agent's name and the program that starts it (not its env)."""
    return hashlib.sha256(json.dumps([config.name, config.command, list(config.args)]).encode()).hexdigest()


class AlwaysAllowed:
    """thread id -> {"program": program_of(agent), "kinds": [...]}, in one small JSON file."""

    def __init__(self, path: Path) -> None:
        self._path = path

    def kinds(self, thread_id: str, config: AcpAgentConfig) -> list[str]:
        """The kinds allowed unasked in this thread, for this agent program (none for another's)."""
        entry = json_file.read(self._path).get(thread_id)
        if not isinstance(entry, dict) or entry.get("program") != program_of(config):
            return []
        kinds = entry.get("kinds")
        return sorted(k for k in kinds if isinstance(k, str)) if isinstance(kinds, list) else []

    def add(self, thread_id: str, config: AcpAgentConfig, kind: str) -> None:
        kinds = self.kinds(thread_id, config)
        if kind in kinds or len(kinds) >= MAX_KINDS:
            return
        saved = json_file.read(self._path)
        saved.pop(thread_id, None)  # re-added last: the newest
        saved[thread_id] = {"program": program_of(config), "kinds": sorted([*kinds, kind[:MAX_KIND_CHARS]])}
        while len(saved) > MAX_THREADS:
            saved.pop(next(iter(saved)))
        json_file.write(self._path, saved)

    def clear(self, thread_id: str) -> None:
        saved = json_file.read(self._path)
        if saved.pop(thread_id, None) is not None:
            json_file.write(self._path, saved)
