"""Types for values that really are arbitrary JSON (parsed from the model, a tool, a kernel or a
file): `JSON` where a value is walked, `JsonObject` where an object is only passed through or
stored. Not for shapes we know: those have TypedDicts (agent_core.messages) or models."""

from __future__ import annotations

from typing import TypeAlias

JSON: TypeAlias = dict[str, "JSON"] | list["JSON"] | str | int | float | bool | None
JsonObject: TypeAlias = dict[str, object]


def json_object(value: object) -> JsonObject:
    """A JSON object, e.g. `json_object(cell.get("metadata")).get("name")`; empty when the value is
    absent or not an object."""
    return value if isinstance(value, dict) else {}


def json_items(value: object) -> list[object]:
    """A JSON array's items, e.g. `json_items(answer.get("names"))`; none when the value is absent or
    not an array."""
    return value if isinstance(value, list) else []
