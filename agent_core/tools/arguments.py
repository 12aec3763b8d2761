"""A tool's arguments as a Pydantic model: it validates what the model sends, its JSON Schema is
what the model is shown, and its errors become one sentence the model can act on."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic_core import ErrorDetails, PydanticCustomError

from agent_core.json_types import JsonObject, json_object

# What a mistyped argument should have been, in the words of the JSON Schema the model was shown.
_JSON_TYPE_OF_ERROR = {
    "string_type": "string",
    "int_type": "integer",
    "int_from_float": "integer",
    "float_type": "number",
    "bool_type": "boolean",
    "list_type": "array",
    "dict_type": "object",
    "model_type": "object",
}
_FIRST = {"missing": 0, "extra_forbidden": 1}  # a missing argument explains more than an extra one


class ToolArgs(BaseModel):
    """Strict (a string is not a number) and closed (an unknown argument is an error, so a
    misspelt optional argument is not silently dropped)."""

    model_config = ConfigDict(extra="forbid", strict=True)


def argument_error(message: str) -> PydanticCustomError:
    """Raise from a validator: `message` reaches the model as written."""
    return PydanticCustomError("tool_argument", "{message}", {"message": message})


ModelT = TypeVar("ModelT", bound=ToolArgs)


def validated(tool: str, model: type[ModelT], raw: object) -> tuple[ModelT | None, str | None]:
    """`raw` as the arguments of `tool`, or what is wrong with them in one sentence."""
    if not isinstance(raw, dict):
        return None, f"{tool} takes a JSON object of arguments"
    try:
        return model.model_validate(raw), None
    except ValidationError as exc:
        errors = sorted(exc.errors(include_url=False), key=lambda e: _FIRST.get(e["type"], 2))
        return None, _sentence(tool, model, errors[0])


def _sentence(tool: str, model: type[ToolArgs], error: ErrorDetails) -> str:
    loc, kind = error["loc"], error["type"]
    where = _where(loc)
    if kind == "missing":
        return f"{tool} needs the argument {where!r}"
    if kind == "extra_forbidden":
        if len(loc) == 1:
            return f"{tool} has no argument {where!r}; it takes {sorted(model.model_fields)}"
        return f"{tool}: {_where(loc[:-1])} has unknown keys [{str(loc[-1])!r}]"
    if kind == "tool_argument":
        return f"{tool}: {error['msg']}" if len(loc) <= 1 else f"{tool}: {where}: {error['msg']}"
    if kind in _JSON_TYPE_OF_ERROR:
        return f"{tool}: argument {where!r} must be of type {_JSON_TYPE_OF_ERROR[kind]}"
    return f"{tool}: argument {where!r}: {error['msg']}"


def _where(loc: tuple[int | str, ...]) -> str:
    """("edits", 0, "old") -> "edits[0].old"."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def llm_schema(model: type[ToolArgs]) -> JsonObject:
    """The JSON Schema the model is shown: inlined (some servers' grammar engines follow no $ref),
    without pydantic's titles, and an optional argument as its type rather than "type or null"."""
    schema = model.model_json_schema()
    defs = schema.pop("$defs", {})
    schema.pop("description", None)  # the model's docstring is for readers; the tool has its description
    return _clean(schema, defs)


def _clean(node: object, defs: JsonObject) -> Any:
    if isinstance(node, list):
        return [_clean(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        target = json_object(defs[node["$ref"].rsplit("/", 1)[-1]])
        return _clean({**target, **{k: v for k, v in node.items() if k != "$ref"}}, defs)
    branches = node.get("anyOf")
    if branches and len(branches) == 2 and {"type": "null"} in branches:
        kept = next(b for b in branches if b != {"type": "null"})
        return _clean({**{k: v for k, v in node.items() if k != "anyOf"}, **kept}, defs)
    cleaned = {}
    for key, value in node.items():
        if key == "title" or (key == "default" and value is None) or (key == "additionalProperties" and value is False):
            continue
        if key == "properties":  # argument names, not schema keywords: a property may be called "title"
            cleaned[key] = {name: _clean(schema, defs) for name, schema in value.items()}
        else:
            cleaned[key] = value if key in ("enum", "const", "default", "required") else _clean(value, defs)
    for name in cleaned.get("required", ()):  # asked for: a lenient default is not the model's business
        cleaned.get("properties", {}).get(name, {}).pop("default", None)
    return dict(sorted(cleaned.items(), key=lambda item: item[0] != "type"))  # "type" first, as people write it
