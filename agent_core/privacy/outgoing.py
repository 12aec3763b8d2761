"""The one place a model request's messages and tools are made fit to leave under the thread's
data policy (called by the LLM adapter, agent_core.llm.client, for every kind of request): values
masked (schema_only), secrets and personal data replaced (redact, and schema_only too), and what
each part came from, for the record."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from typing import cast

from agent_core.contract.choices import DataPolicy
from agent_core.json_types import JSON, JsonObject
from agent_core.messages import PREAMBLE, ContentPart, Message, ToolCall, ToolSchema
from agent_core.privacy import shapes
from agent_core.privacy.patterns import Pattern, Redactor, compile_patterns, forget_searched

WIDTH: dict[str, int] = {"full": 0, "redact": 1, "schema_only": 2}  # how much of the data may leave, inverted
Source = dict[str, str]  # {"kind", "name"}
NAME_CHARS = 120


def narrowest(*policies: DataPolicy) -> DataPolicy:
    return max(policies, key=lambda policy: WIDTH[policy])


def allowed_under(server: DataPolicy) -> list[str]:
    """The policies a thread may ask for on a server whose policy is `server`: it or a narrower one."""
    return [policy for policy, width in WIDTH.items() if width >= WIDTH[server]]


@dataclass(frozen=True)
class Outgoing:
    messages: list[Message]
    tools: list[ToolSchema]
    redactions: int
    sources: list[Source]


@lru_cache(maxsize=16)
def _custom(patterns: tuple[str, ...]) -> tuple[Pattern, ...]:
    return compile_patterns(patterns)


def prepare(
    messages: list[Message], tools: list[ToolSchema], policy: DataPolicy, patterns: tuple[str, ...] = ()
) -> Outgoing:
    """`messages` and `tools` as they may leave under `policy` (new values: the state is not touched)."""
    calls = _calls(messages)
    sources = _sources(messages, calls)
    if policy == "full":
        return Outgoing(messages, tools, 0, sources)
    redactor = Redactor(_custom(patterns))
    out = [_message(m, calls, policy, redactor) for m in messages]
    # The walk keeps every key and only rewrites description strings: each result is still a ToolSchema.
    schemas = [cast(ToolSchema, _tool_schema(t, redactor)) for t in tools]
    return Outgoing(out, schemas, redactor.count, sources)


def tool_result_leaving(
    messages: list[Message], call_id: str, policy: DataPolicy, patterns: tuple[str, ...]
) -> str | None:
    """Call `call_id`'s result as it may leave under `policy` when it is answered to another program
    (an MCP client, whose own model reads it): what `prepare` would send of it. None: no result yet."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.get("role") == "tool" and message.get("tool_call_id") == call_id:
            asked = [m for m in messages[:index] if any(c.get("id") == call_id for c in m.get("tool_calls") or ())]
            content = prepare([*asked[-1:], message], [], policy, patterns).messages[-1].get("content")
            return content if isinstance(content, str) else str(content)
    return None


def forget() -> None:
    """Forget the texts already searched and shaped (a benchmark's cold start)."""
    forget_searched()
    shapes.forget_shaped()


def redacted_texts(texts: list[str], patterns: tuple[str, ...] = ()) -> list[str]:
    """Texts that leave outside a chat request (embeddings of documents), redacted."""
    redactor = Redactor(_custom(patterns))
    return [redactor.text(text) for text in texts]


Calls = dict[str, tuple[str, JsonObject]]  # each tool call's name and (parsed) arguments, by call id


def _calls(messages: list[Message]) -> Calls:
    """Each tool call's name and (parsed) arguments, by call id."""
    found: Calls = {}
    for message in messages:
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            try:
                args = json.loads(function.get("arguments") or "{}")
            except ValueError:
                args = {}
            found[str(call.get("id"))] = (str(function.get("name") or ""), args if isinstance(args, dict) else {})
    return found


def _message(message: Message, calls: Calls, policy: DataPolicy, redactor: Redactor) -> Message:
    content = message.get("content")
    if policy == "schema_only":
        if message.get("role") == "tool" and isinstance(content, str):
            name, args = calls.get(str(message.get("tool_call_id")), ("", {}))
            content = shapes.tool_result(name, args, content)
        elif isinstance(content, str) and content.startswith(PREAMBLE):
            content = shapes.context_message(content, PREAMBLE)
        elif isinstance(content, list):
            content = [_without_image(part) for part in content]
    out = message.copy()
    if isinstance(content, str):
        out["content"] = redactor.text(content)
    elif isinstance(content, list):
        out["content"] = [
            {**part, "text": redactor.text(part["text"])} if isinstance(part.get("text"), str) else part
            for part in content
            if isinstance(part, dict)
        ]
    if message.get("tool_calls"):
        out["tool_calls"] = [_call(call, redactor) for call in message["tool_calls"]]
    return out


def _without_image(part: ContentPart) -> ContentPart:
    if isinstance(part, dict) and part.get("type") == "image_url":
        return {"type": "text", "text": f"[an image output, {shapes.WITHHELD}]"}
    return part


def _call(call: ToolCall, redactor: Redactor) -> ToolCall:
    """A tool call with secrets in its argument values replaced; its arguments' text kept as the model
    wrote it when there were none."""
    function = call.get("function") or {}
    raw = function.get("arguments")
    if not isinstance(raw, str):
        return call
    before = redactor.count
    try:
        args = json.loads(raw)
    except ValueError:
        redacted = redactor.text(raw)
    else:
        walked = _walk(args, redactor)
        redacted = json.dumps(walked, ensure_ascii=False) if redactor.count > before else raw
    return call if redacted == raw else {**call, "function": {**function, "arguments": redacted}}


def _walk(value: JSON, redactor: Redactor) -> JSON:
    if isinstance(value, str):
        return redactor.text(value)
    if isinstance(value, list):
        return [_walk(v, redactor) for v in value]
    if isinstance(value, dict):
        return {k: _walk(v, redactor) for k, v in value.items()}
    return value


def _tool_schema(schema: object, redactor: Redactor) -> object:
    """A tool's schema with its descriptions redacted (a notebook tool's docstring may hold a key);
    names, types and enums are the tool's interface and stay."""
    if isinstance(schema, list):
        return [_tool_schema(v, redactor) for v in schema]
    if not isinstance(schema, dict):
        return schema
    return {
        k: redactor.text(v) if k == "description" and isinstance(v, str) else _tool_schema(v, redactor)
        for k, v in schema.items()
    }


# -- where the parts came from


def _name(value: object) -> str:
    text = str(value or "").strip().splitlines()
    return text[0][:NAME_CHARS] if text else ""


def _source_of_call(name: str, args: JsonObject) -> Source | None:
    if name in ("run_cell", "edit_cell"):
        return {"kind": "cell_output", "name": _name(args.get("description") or args.get("code") or args.get("source"))}
    if name == "read_file":
        return {"kind": "file", "name": _name(args.get("path"))}
    if name == "read_notebook":
        return {"kind": "notebook", "name": _name(args.get("path")) or "(the thread's notebook)"}
    if name == "sql_query":
        return {"kind": "sql_result", "name": _name(args.get("database"))}
    if name.startswith("mcp__"):
        return {"kind": "mcp_result", "name": name}
    if name == "execute_command":
        return {"kind": "command_output", "name": _name(args.get("command"))}
    if name in ("search_workspace", "search_notebooks", "search_knowledge"):
        return {"kind": "search_result", "name": _name(args.get("pattern") or args.get("query"))}
    if name == "task":
        return {"kind": "agent_report", "name": _name(args.get("agent"))}
    if name in ("check_resource", "list_files"):
        return {"kind": "listing", "name": name}
    if name in shapes.SAFE_TOOLS:
        return None  # the agent's own actions: nothing read from the user's data
    return {"kind": "tool_result", "name": name}


def _sources(messages: list[Message], calls: Calls) -> list[Source]:
    found: list[Source] = []
    for message in messages:
        content = message.get("content")
        if message.get("role") == "tool":
            name, args = calls.get(str(message.get("tool_call_id")), ("", {}))
            source = _source_of_call(name, args)
            found += [source] if source else []
        elif isinstance(content, str) and content.startswith(PREAMBLE):
            found += _context_sources(content)
        elif isinstance(content, list) and any(isinstance(p, dict) and p.get("type") == "image_url" for p in content):
            found.append({"kind": "image", "name": "cell output image"})
    unique = {(s["kind"], s["name"]): s for s in found}
    return list(unique.values())


def _context_sources(text: str) -> list[Source]:
    if "The user's kernel namespace: " in text:
        return [{"kind": "variables", "name": "kernel namespace snapshot"}]
    found = []
    for line in text.splitlines():
        if not line.startswith("@") or ": " not in line:
            continue
        name, _, rest = line[1:].partition(": ")
        kind = "file" if rest.startswith("file ") else "notebook" if rest.startswith("notebook ") else "variable"
        if rest.split(",", 1)[0].endswith("DataFrame"):  # pandas.DataFrame, polars.DataFrame
            kind = "dataframe"
        found.append({"kind": kind, "name": name[:NAME_CHARS]})
    return found
