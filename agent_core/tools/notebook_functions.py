"""The notebook's @tool functions (agent_core.kernel_side.tool_decorator, in the kernel) as tools of a run:
discovered silently at the start of each segment (one side-effect-free evaluation, no history, no
execution count), called in the kernel after approval. The kernel is asked nothing while it is busy."""

from __future__ import annotations

import json
from typing import Any

from agent_core.config.agent_settings import AgentSettings
from agent_core.json_types import JsonObject
from agent_core.kernel_probes.introspection import KernelBusy, _evaluate
from agent_core.kernel_probes.probe import ReadOnlyExpression
from agent_core.tools.base import ToolContext, ToolEnvironment, ToolInputError, ToolOutcome
from agent_core.tools.external import ExternalToolSpec, usable_schema, valid_name

DISCOVERY_TIMEOUT = 3.0
_MODULE = "agent_core.kernel_side.tool_decorator"
# Looks up no global name (a user's variable called sys or __import__ would be found first).
_WITH_MODULE = (
    "(lambda f: (lambda m: {body})(f.__builtins__['__import__']('sys').modules.get({module!r})))((lambda: None))"
)


def discovery_expression() -> ReadOnlyExpression:
    # the registry's specs as JSON: no function of the user's is called
    return ReadOnlyExpression(_WITH_MODULE.format(body="m._discover() if m is not None else '[]'", module=_MODULE))


def call_expression(name: str, args: JsonObject) -> str:
    missing = json.dumps({"ok": False, "error": "no @tool functions in this kernel (was it restarted?)"})
    # name and arguments travel as string literals (repr of str), never as code
    body = f"m._call({name!r}, {json.dumps(args)!r}, f.__globals__) if m is not None else {missing!r}"
    return _WITH_MODULE.format(body=body, module=_MODULE)


async def notebook_tools(
    env: ToolEnvironment, taken: frozenset[str] | set[str], settings: AgentSettings
) -> tuple[dict[str, ExternalToolSpec], list[str]]:
    try:
        found = await _evaluate(env, discovery_expression(), DISCOVERY_TIMEOUT)
    except (KernelBusy, ToolInputError):
        return {}, []  # no kernel, or a busy one: no notebook tools this time, silently
    except Exception:
        return {}, []
    if not isinstance(found, list):
        return {}, []
    specs: dict[str, ExternalToolSpec] = {}
    notes: list[str] = []
    opted_in = frozenset(settings.auto_approve_notebook_tools)
    for entry in found[:50]:
        if not isinstance(entry, dict):
            continue
        name = str(entry.get("name", ""))
        problem = valid_name(name, frozenset(taken) | specs.keys())
        if not problem and (name.startswith("mcp__") or not name.isidentifier()):
            problem = f"{name[:80]!r} is not a Python function name outside the mcp__ namespace"
        schema, why = usable_schema(entry.get("schema")) if not problem else (None, problem)
        if schema is None:
            notes.append(f"The notebook's @tool {name[:80]!r} was left out: {why}.")
            continue
        read_only = entry.get("read_only") is True
        origin = {
            "kind": "notebook",
            "tool": name,
            "read_only_hint": read_only,
            "file": str(entry.get("file") or "")[:500] or None,
            "line": entry.get("line") if isinstance(entry.get("line"), int) else None,
        }
        description = f"[defined in the notebook] {entry.get('description') or name}"
        specs[name] = ExternalToolSpec.make(
            name, description, schema, origin, _caller(name), read_only and name in opted_in
        )
    return specs, notes


def _caller(name: str) -> Any:
    async def call(args: JsonObject, ctx: ToolContext) -> ToolOutcome:
        answer = await ctx.env.evaluate_json(call_expression(name, args))
        if not isinstance(answer, dict):
            raise ToolInputError("the kernel's answer was not understood")
        if not answer.get("ok"):
            return ToolOutcome("error", f"{name} raised an error in the kernel:\n{str(answer.get('error'))[:8000]}")
        return ToolOutcome("ok", str(answer.get("result"))[:10_000])

    return call
