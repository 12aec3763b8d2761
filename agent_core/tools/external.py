"""Tools from outside Cellwright: an MCP server's, or a function the notebook registered with @tool.
They arrive per run, each with a JSON Schema instead of an argument model; the built-ins stay in the
static registry. Every one needs approval (a server's or a function's claim to be read-only is shown,
never trusted), and none counts as read-only for Ask mode."""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agent_core.json_types import JsonObject
from agent_core.tools.arguments import ToolArgs
from agent_core.tools.base import ToolContext, ToolInputError, ToolOutcome, ToolSpec

MAX_DESCRIPTION_CHARS = 2_000
MAX_SCHEMA_CHARS = 20_000
MAX_ARGS_CHARS = 200_000  # a call's arguments, as JSON
# What a tool name may be: OpenAI's function-name rule. Anything else is skipped with a note.
NAME_RULE = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")


class _NoArgs(ToolArgs):
    """Placeholder: an external tool's arguments are checked against its JSON Schema."""


ExternalAction = Callable[[JsonObject, ToolContext], Awaitable[ToolOutcome]]


def _call_action(spec: ExternalToolSpec) -> Callable[[Any, ToolContext], Awaitable[ToolOutcome]]:
    async def act(args: Any, ctx: ToolContext) -> ToolOutcome:
        if spec.call is None:  # make() always sets it
            raise ToolInputError("this tool has no action")
        return await spec.call(dict(args), ctx)

    return act


@dataclass(frozen=True)
class ExternalToolSpec(ToolSpec[Any]):
    """A ToolSpec whose arguments are a JSON object checked against `schema`."""

    schema: Mapping[str, object] = field(default_factory=dict)  # a JSON Schema (usable_schema checked it)
    origin: Mapping[str, object] = field(default_factory=dict)  # the approval card's `origin`
    call: ExternalAction | None = None  # always set by make()
    auto_approvable: bool = False  # the user listed it and its kind allows that (see needs_approval)

    @classmethod
    def make(
        cls,
        name: str,
        description: str,
        schema: Mapping[str, object],
        origin: Mapping[str, object],
        call: ExternalAction,
        auto_approvable: bool = False,
    ) -> ExternalToolSpec:
        spec = cls(
            name=name,
            description=bounded_description(description),
            args=_NoArgs,
            action=_unset,
            touches="outside",  # what a server or a function does is not known, so never trusted to be nothing
            needs_approval=True,
            read_only=False,
            recorded=True,
            schema=schema,
            origin=dict(origin),
            call=call,
            auto_approvable=auto_approvable,
        )
        object.__setattr__(spec, "action", _call_action(spec))
        object.__setattr__(spec, "describe", lambda args: describe_external(spec, args))
        return spec

    @property
    def parameters(self) -> JsonObject:
        return dict(self.schema)

    def check_args(self, args: object) -> str | None:
        return schema_problem(self.name, self.schema, args)

    def parse(self, args: Any) -> Any:
        problem = self.check_args(args)
        if problem:
            raise ToolInputError(problem)
        return dict(args)


async def _unset(args: object, ctx: ToolContext) -> ToolOutcome:  # replaced in make()
    raise ToolInputError("this tool has no action")


def origin_fields(spec: ToolSpec) -> JsonObject:
    """The approval card's `origin` for an external tool; nothing for a built-in one."""
    return {"origin": dict(spec.origin)} if isinstance(spec, ExternalToolSpec) else {}


def describe_external(spec: ExternalToolSpec, args: Mapping[str, object]) -> str:
    origin = spec.origin
    if origin.get("kind") == "mcp":
        return f"Call {origin.get('tool')!r} on the MCP server {origin.get('server')!r}"
    where = f" ({origin.get('file')}:{origin.get('line')})" if origin.get("file") else ""
    return f"Run the notebook's function {origin.get('tool')}(){where} in the kernel"


def bounded_description(text: str) -> str:
    text = " ".join(str(text or "").split())
    return text if len(text) <= MAX_DESCRIPTION_CHARS else text[: MAX_DESCRIPTION_CHARS - 3] + "..."


def usable_schema(schema: object) -> tuple[JsonObject | None, str]:
    """`schema` as a tool's parameters, or None and why it cannot be offered (too big, not an object
    schema, not a valid JSON Schema)."""
    # jsonschema loads with the first outside tool: %load_ext agent_core does not load it
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    if not isinstance(schema, dict):
        return None, "its input schema is not a JSON object"
    try:
        text = json.dumps(schema)
    except (TypeError, ValueError):
        return None, "its input schema is not JSON"
    if len(text) > MAX_SCHEMA_CHARS:
        return None, f"its input schema is {len(text)} characters (at most {MAX_SCHEMA_CHARS})"
    if schema.get("type", "object") != "object":
        return None, "its input schema does not describe an object"
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        return None, f"its input schema is invalid: {exc.message[:200]}"
    cleaned = {k: v for k, v in schema.items() if k not in ("title", "$schema")}
    cleaned.setdefault("type", "object")
    cleaned.setdefault("properties", {})
    return cleaned, ""


def schema_problem(tool: str, schema: Mapping[str, object], args: object) -> str | None:
    """One sentence for the model when `args` do not fit `schema`, else None."""
    from jsonschema import Draft202012Validator

    if not isinstance(args, dict):
        return f"{tool} takes a JSON object of arguments"
    try:
        size = len(json.dumps(args))
    except (TypeError, ValueError):
        return f"{tool}: the arguments are not JSON"
    if size > MAX_ARGS_CHARS:
        return f"{tool}: the arguments are {size} characters; at most {MAX_ARGS_CHARS}"
    errors = sorted(Draft202012Validator(dict(schema)).iter_errors(args), key=lambda e: (len(e.path), e.message))
    if not errors:
        return None
    error = errors[0]
    where = ".".join(str(p) for p in error.path)
    message = error.message if len(error.message) <= 300 else error.message[:297] + "..."
    return f"{tool}: {where + ': ' if where else ''}{message}"


def valid_name(name: str, taken: set[str] | frozenset[str]) -> str:
    """Why `name` cannot be a tool's name ("" when it can): OpenAI's name rule, and no built-in's name."""
    if not NAME_RULE.match(name):
        return f"{name[:80]!r} is not a valid tool name (letters, digits, _ and -, at most 64)"
    if name in taken:
        return f"{name!r} is the name of a tool Cellwright already has"
    return ""
