"""`<data_dir>/settings.json`: the settings PUT config changed at run time. The server writes it; the
server at start and every `%agent` call read it, over the Jupyter config. It may hold the API key,
so it is owner-only (agent_core.private_files)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from agent_core.json_types import JsonObject
from agent_core.private_files import private_file


def read(path: Path) -> JsonObject:
    """What was saved; a missing or damaged file reads as nothing saved (the config still applies)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def write(path: Path, values: JsonObject) -> None:
    # Replaced whole, so a reader (a kernel's %agent) never sees half a file.
    tmp = private_file(path.with_suffix(".tmp"))
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(values, handle, indent=1)
    os.replace(tmp, path)
