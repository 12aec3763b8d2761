"""Every named schema of the contract in one JSON Schema `$defs` table: the route bodies and answers,
the stream's events and the tools' arguments. The OpenAPI document and the TypeScript types are both
written from this table, so they cannot disagree with each other."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, TypeAdapter
from pydantic.json_schema import JsonSchemaMode

from agent_core.contract.answers import ErrorBody
from agent_core.contract.events import CellwrightEvent, StreamEvent
from agent_core.contract.routes import ROUTES, Lines
from agent_core.json_types import JsonObject
from agent_core.tools import TOOLS


def tool_args() -> dict[str, type[BaseModel]]:
    """Each tool's argument model, by tool name, in the registry's order."""
    return {name: spec.args for name, spec in TOOLS.items()}


def _named_types() -> list[Any]:
    types: list[Any] = [StreamEvent, CellwrightEvent, ErrorBody]
    for route in ROUTES:
        types += [route.body] if route.body is not None else []
        types += [answer for answer in route.answers.values() if isinstance(answer, type)]
        types += [answer.model for answer in route.answers.values() if isinstance(answer, Lines)]
    types += list(tool_args().values())
    return list(dict.fromkeys(types))


def definitions(ref_template: str) -> dict[str, JsonObject]:
    """name -> JSON Schema, with references written as `ref_template` (e.g. "#/$defs/{model}")."""
    inputs: list[tuple[int, JsonSchemaMode, TypeAdapter[Any]]] = [
        (index, "validation", TypeAdapter(named)) for index, named in enumerate(_named_types())
    ]
    _, top = TypeAdapter.json_schemas(inputs, ref_template=ref_template)
    defs: dict[str, JsonObject] = top["$defs"]
    return {name: without_titles(schema) for name, schema in sorted(defs.items())}


def ref(name: str, ref_template: str) -> dict[str, str]:
    return {"$ref": ref_template.format(model=name)}


def without_titles(node: object) -> Any:
    """pydantic's generated titles ("Thread Id") say nothing the names do not; a property called
    "title" is kept."""
    if isinstance(node, list):
        return [without_titles(item) for item in node]
    if not isinstance(node, dict):
        return node
    cleaned = {}
    for key, value in node.items():
        if key == "title":
            continue
        if key == "properties":
            cleaned[key] = {name: without_titles(schema) for name, schema in value.items()}
        else:
            cleaned[key] = without_titles(value)
    return cleaned
