"""`@tool` for notebooks: `from agent_core import tool`, then `@tool` or `@tool(read_only=True)` on a
function registers it in this kernel for Cellwright's agent (name, docstring, an argument schema from
the type hints). Runs in the user's kernel: standard library only, and nothing heavy at import.
The server reads the registry with `_discover()` and calls a tool with `_call()`; a kernel restart
forgets every registration."""

from __future__ import annotations

import inspect
import json
import traceback
import types
import typing
from collections.abc import Callable
from typing import Any, TypedDict

from agent_core.json_types import JsonObject, json_items


class _Entry(TypedDict):
    fn: Callable[..., object]
    spec: JsonObject


_REGISTRY: dict[str, _Entry] = {}
MAX_TOOLS = 50
MAX_RESULT_CHARS = 8000
DATAFRAME_NOTE = "the name of a pandas DataFrame variable in the kernel"


def tool(fn: Callable[..., Any] | None = None, *, read_only: bool = False) -> Any:
    """Register `fn` as a tool of Cellwright's agent in this kernel; returns `fn` unchanged."""

    def register(func: Callable[..., Any]) -> Callable[..., Any]:
        if not callable(func) or not getattr(func, "__name__", "").isidentifier():
            raise TypeError("@tool goes on a named function")
        if func.__name__ not in _REGISTRY and len(_REGISTRY) >= MAX_TOOLS:
            raise ValueError(f"at most {MAX_TOOLS} @tool functions per kernel")
        _REGISTRY[func.__name__] = {"fn": func, "spec": _spec(func, read_only)}
        return func

    return register(fn) if fn is not None else register


def _spec(func: Callable[..., Any], read_only: bool) -> JsonObject:
    try:
        hints = typing.get_type_hints(func)
    except Exception:  # an annotation that does not resolve: treated as untyped
        hints = {}
    properties: JsonObject = {}
    required: list[str] = []
    frames: list[str] = []
    for name, param in inspect.signature(func).parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        schema, is_frame = _schema_of(hints.get(name, Any))
        if is_frame:
            frames.append(name)
        if param.default is param.empty:
            required.append(name)
        elif _json_value(param.default):
            schema = {**schema, "default": param.default}
        properties[name] = schema
    code = getattr(func, "__code__", None)
    return {
        "name": func.__name__,
        "description": inspect.getdoc(func) or func.__name__,
        "schema": {"type": "object", "properties": properties, "required": required, "additionalProperties": False},
        "read_only": bool(read_only),
        "file": getattr(code, "co_filename", ""),
        "line": getattr(code, "co_firstlineno", 0),
        "dataframes": frames,
    }


def _json_value(value: object) -> bool:
    try:
        json.dumps(value)
        return True
    except (TypeError, ValueError):
        return False


def _is_dataframe_type(kind: object) -> bool:
    return (
        isinstance(kind, type)
        and kind.__name__ == "DataFrame"
        and kind.__module__.split(".")[0] in ("pandas", "polars")
    )


def _schema_of(kind: object) -> tuple[JsonObject, bool]:
    """The JSON Schema of a type hint, and whether it is a DataFrame (passed by variable name)."""
    simple = {int: "integer", float: "number", str: "string", bool: "boolean", list: "array", dict: "object"}
    if kind in simple:
        return {"type": simple[kind]}, False
    if _is_dataframe_type(kind):
        return {"type": "string", "description": DATAFRAME_NOTE}, True
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin is typing.Literal:
        return {"enum": [a for a in args if _json_value(a)]}, False
    if origin in (typing.Union, getattr(types, "UnionType", None)):
        kept = [a for a in args if a is not type(None)]
        if len(kept) == 1:
            schema, is_frame = _schema_of(kept[0])
            if len(args) > 1 and isinstance(schema.get("type"), str) and not is_frame:  # Optional[X]: X or null
                schema = {**schema, "type": [schema["type"], "null"]}
            return schema, is_frame
        return {"anyOf": [_schema_of(a)[0] for a in kept]}, False
    if origin in (list, tuple, set, frozenset):
        return ({"type": "array", "items": _schema_of(args[0])[0]} if args else {"type": "array"}), False
    if origin is dict:
        return {"type": "object"}, False
    return {}, False  # anything: the model is shown no type


def _discover() -> str:
    """The registered tools, as JSON (no function objects, no user code run)."""
    return json.dumps([entry["spec"] for entry in _REGISTRY.values()], default=str)


def _call(name: str, args_json: str, namespace: JsonObject) -> str:
    """Run tool `name` with the JSON arguments; DataFrame arguments are names looked up in `namespace`.
    Answers JSON: {"ok": bool, "result" | "error": text}."""
    entry = _REGISTRY.get(name)
    if entry is None:
        return json.dumps({"ok": False, "error": f"no @tool named {name!r} in this kernel (was it restarted?)"})
    args = json.loads(args_json)
    for arg in json_items(entry["spec"]["dataframes"]):
        if arg in args:
            value = namespace.get(args[arg]) if isinstance(args[arg], str) else None
            if value is None or not _is_dataframe_type(type(value)):
                return json.dumps(
                    {"ok": False, "error": f"{arg}: {args[arg]!r} is not a DataFrame variable in the kernel"}
                )
            args[arg] = value
    try:
        result = entry["fn"](**args)
    except Exception as exc:
        lines = traceback.format_exception(type(exc), exc, exc.__traceback__)
        return json.dumps({"ok": False, "error": _bounded("".join(lines[-6:]))})
    return json.dumps({"ok": True, "result": _bounded(_shown(result))})


def _shown(value: Any) -> str:
    if _is_dataframe_type(type(value)):
        text = value.head(50).to_string()
        return text + (f"\n[{len(value)} rows in all]" if len(value) > 50 else "")
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, default=str)[: MAX_RESULT_CHARS * 2]
    except (TypeError, ValueError):
        return repr(value)


def _bounded(text: str) -> str:
    if len(text) <= MAX_RESULT_CHARS:
        return text
    head = MAX_RESULT_CHARS * 2 // 3
    return (
        f"{text[:head]}\n[... {len(text) - MAX_RESULT_CHARS} characters cut ...]\n{text[-(MAX_RESULT_CHARS - head) :]}"
    )
