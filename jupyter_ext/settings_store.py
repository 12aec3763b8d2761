"""Settings changed at run time (PUT config), kept in the Jupyter data directory.

The file may hold the API key, so it is written readable by the owner only."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from agent_core.kernel.kernel_settings import RUNTIME_EDITABLE as EDITABLE
from agent_core.kernel.kernel_settings import runtime_values
from agent_core.private_storage import private_dir
from agent_core.tools import TOOL_NAMES

from .errors import BadRequest


def validate_changes(body: Any) -> dict[str, Any]:
    """The accepted changes of a PUT config body, or BadRequest saying what is wrong."""
    if not isinstance(body, dict) or not body:
        raise BadRequest(f"Send a JSON object with any of {list(EDITABLE)}.")
    unknown = sorted(set(body) - set(EDITABLE))
    if unknown:
        raise BadRequest(f"Unknown settings {unknown}; editable ones are {list(EDITABLE)}.")
    for name in ("model", "base_url", "api_key"):
        if name in body and not isinstance(body[name], str):
            raise BadRequest(f"{name!r} must be a string.")
    if "tool_calling" in body and body["tool_calling"] not in ("native", "prompt", "auto"):
        raise BadRequest('"tool_calling" must be "native", "prompt" or "auto".')
    if "auto_approve" in body:
        names = body["auto_approve"]
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise BadRequest('"auto_approve" must be a list of tool names.')
        unknown_tools = sorted(set(names) - set(TOOL_NAMES))
        if unknown_tools:
            raise BadRequest(f"Unknown tools in auto_approve: {unknown_tools}.")
    return dict(body)


class SettingsStore:
    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> dict[str, Any]:
        return runtime_values(self.path)  # the kernel-side magic reads the same file the same way

    def save(self, changes: dict[str, Any]) -> None:
        data = {**self.load(), **changes}
        private_dir(self.path.parent)
        tmp = self.path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=1)
        os.replace(tmp, self.path)
