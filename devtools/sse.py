"""Reading a Server-Sent Events body the way the panel does (API.md, "Events")."""

from __future__ import annotations

import json
from typing import Any


def parse_sse(text: str, live: bool = False) -> list[dict[str, Any]]:
    """The stored events of an SSE body (with `live`, also the live-only ones, which have no id)."""
    events = []
    for block in text.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if line and not line.startswith(":"))
        if "data" in fields and "id" not in fields:
            if live:
                events.append(json.loads(fields["data"]))
            continue
        if "data" in fields:
            event = json.loads(fields["data"])
            assert int(fields["id"]) == event["seq"] and fields["event"] == event["type"]
            events.append(event)
    return events
