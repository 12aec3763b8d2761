"""Which ACP session each hosted thread's agent was in, kept in the data folder (owner-only) so that
after a server restart a new agent process can take it up again with session/load. The session lives
in the agent's own storage on this machine, so this record is the server's, not the shared database's."""

from __future__ import annotations

import json
import os
from pathlib import Path

from agent_core.private_files import private_file

MAX_SESSIONS = 1000  # threads remembered; the oldest is forgotten first
MAX_ID_CHARS = 500  # an agent's session id is its own text: bounded


class SavedSessions:
    """thread id -> (agent name, session id), in one small JSON file."""

    def __init__(self, path: Path) -> None:
        self._path = path

    def get(self, thread_id: str, agent: str) -> str:
        """The session `agent` had in this thread, or "" (none, or another agent's)."""
        saved = self._read().get(thread_id)
        return str(saved[1]) if isinstance(saved, list) and len(saved) == 2 and saved[0] == agent else ""

    def put(self, thread_id: str, agent: str, session_id: str) -> None:
        saved = self._read()
        saved.pop(thread_id, None)  # re-added last: the newest
        saved[thread_id] = [agent, session_id[:MAX_ID_CHARS]]
        while len(saved) > MAX_SESSIONS:
            saved.pop(next(iter(saved)))
        self._write(saved)

    def drop(self, thread_id: str) -> None:
        saved = self._read()
        if saved.pop(thread_id, None) is not None:
            self._write(saved)

    def _read(self) -> dict[str, object]:
        try:
            data = json.loads(self._path.read_text(encoding="utf-8"))
        except (OSError, ValueError):  # none yet, or unreadable: nothing to load
            return {}
        return data if isinstance(data, dict) else {}

    def _write(self, saved: dict[str, object]) -> None:
        partial = private_file(self._path.with_suffix(".partial"))
        partial.write_text(json.dumps(saved), encoding="utf-8")
        os.replace(partial, self._path)  # whole or not at all
