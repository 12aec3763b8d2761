"""Prompt-based tool calling, for models served without function calling.

The tools are described in the system prompt; replies are parsed for `Action:` + `Action Input:`
JSON, `<tool_call>` tags or a JSON code block, and `Final Answer:` ends the run. The same parser
rescues tool calls that a native-mode model wrote as JSON in its text."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from agent_core.messages import Message, ToolSchema

ACTION = re.compile(r"Action:\s*`?([\w.-]+)`?\s*\n+\s*Action Input:\s*(.*)", re.S)
TAGGED = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.S)
TAGGED_INPUT = re.compile(r"<tool_input>\s*(.*?)\s*(?:</tool_input>|$)", re.S)
FENCED = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.S)
FINAL = re.compile(r"Final Answer:\s*(.*)", re.S)
# Where visible text ends: what follows is machinery, not prose for the user.
MARKERS = ("Action:", "<tool_call>", "```json", "Final Answer:")


@dataclass
class ParsedReply:
    visible: str = ""
    tool_calls: list[tuple[str, str]] = field(default_factory=list)  # (name, raw JSON arguments)
    final_answer: str | None = None


def _first_json_object(text: str) -> tuple[object, str] | None:
    """The first JSON value at the start of `text` (ignoring trailing prose), and its raw text."""
    text = text.strip().removeprefix("```json").removeprefix("```").strip()
    try:
        value, end = json.JSONDecoder().raw_decode(text)
    except json.JSONDecodeError:
        return None
    return value, text[:end]


def _call_from_object(value: object) -> tuple[str, str] | None:
    """{"name", "arguments"} (OpenAI-like), {"action", "action_input"} or {"tool", "args"}."""
    if not isinstance(value, dict):
        return None
    for name_key, args_key in (
        ("name", "arguments"),
        ("action", "action_input"),
        ("tool", "args"),
        ("name", "parameters"),
    ):
        name = value.get(name_key)
        if isinstance(name, str) and args_key in value:
            args = value[args_key]
            return name, args if isinstance(args, str) else json.dumps(args)
    return None


MAX_RESCUE_SCAN_CHARS = 64_000  # a reply longer than this is prose; scanning it all would be slow
MAX_RESCUE_CANDIDATES = 200
Validate = Callable[[str, object], "str | None"]  # (tool name, arguments) -> what is wrong, or None


@dataclass
class Rescue:
    call: tuple[str, str] | None = None  # (name, raw JSON arguments)
    near_miss: str = ""  # why a call-like object in the text was not run


def rescue_call(text: str, validate: Validate) -> Rescue:
    """The first JSON object anywhere in `text` that names a tool with arguments that validate.
    A native-mode model sometimes writes its call as JSON after some prose; the first call-like
    object that does not validate is reported, so the model can be told why nothing ran."""
    rescue = Rescue()
    decoder = json.JSONDecoder()
    position, tried = 0, 0
    scanned = text[:MAX_RESCUE_SCAN_CHARS]
    while tried < MAX_RESCUE_CANDIDATES and (start := scanned.find("{", position)) >= 0:
        tried += 1
        try:
            value, end = decoder.raw_decode(scanned, start)
        except (json.JSONDecodeError, RecursionError):
            position = start + 1
            continue
        call = _call_from_object(value)
        if call is None:
            position = start + 1  # a wrapper object may hold the call inside it
            continue
        problem = validate(call[0], _loads_or_none(call[1]))
        if problem is None:
            rescue.call = call
            return rescue
        rescue.near_miss = rescue.near_miss or f"{call[0]}: {problem}"
        position = end
    return rescue


def _loads_or_none(raw: str) -> object:
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return None


def parse_reply(text: str, known_tools: set[str] | None = None) -> ParsedReply:
    """Find the first tool call (or the final answer) in a model's text reply."""
    reply = ParsedReply(visible=visible_text(text))
    action = ACTION.search(text)
    if action:
        found = _first_json_object(action.group(2))
        raw = found[1] if found else action.group(2).strip().split("\n")[0]
        reply.tool_calls.append((action.group(1), raw))
        return reply
    for tagged in TAGGED.finditer(text):
        found = _first_json_object(tagged.group(1))
        call = _call_from_object(found[0]) if found else None
        if call is None and not found:
            name = tagged.group(1).split("<", 1)[0].strip()
            tool_input = TAGGED_INPUT.search(text)
            if name and tool_input:
                call = (name, tool_input.group(1).strip())
        if call:
            reply.tool_calls.append(call)
            return reply
    candidates = [m.group(1) for m in FENCED.finditer(text)] + [text]
    for candidate in candidates:
        found = _first_json_object(candidate)
        call = _call_from_object(found[0]) if found else None
        if call and (known_tools is None or call[0] in known_tools):
            reply.tool_calls.append(call)
            return reply
    final = FINAL.search(text)
    if final:
        reply.final_answer = final.group(1).strip()
    return reply


def visible_text(text: str) -> str:
    cut = min((i for i in (text.find(m) for m in MARKERS) if i >= 0), default=len(text))
    return text[:cut].strip()


class VisibleTokens:
    """Forwards streamed text until a marker starts, holding back just enough to see it coming."""

    def __init__(self, forward: Callable[[str], None]) -> None:
        self._forward = forward
        self._pending = ""
        self._stopped = False
        self._hold = max(len(m) for m in MARKERS)

    def feed(self, text: str) -> None:
        if self._stopped:
            return
        self._pending += text
        cut = min((i for i in (self._pending.find(m) for m in MARKERS) if i >= 0), default=-1)
        if cut >= 0:
            self._emit(self._pending[:cut])
            self._stopped = True
            return
        safe = len(self._pending) - self._hold
        if safe > 0:
            self._emit(self._pending[:safe])
            self._pending = self._pending[safe:]

    def close(self) -> None:
        if not self._stopped:
            self._emit(self._pending)
        self._pending = ""

    def _emit(self, text: str) -> None:
        if text:
            self._forward(text)


def tools_section(tools: list[ToolSchema]) -> str:
    """The system-prompt text that describes the tools (the catalog only; REPLY_FORMAT says how to call them)."""
    lines = ["You can use these tools:"]
    for tool in tools:
        fn = tool["function"]
        lines.append(f"- {fn['name']}: {fn['description']}\n  arguments (JSON schema): {json.dumps(fn['parameters'])}")
    return "\n".join(lines)


REPLY_FORMAT = (
    "To use a tool, reply with exactly:\nThought: <why>\nAction: <tool name>\nAction Input: <JSON object of arguments>\n"
    "Then stop and wait: the result comes back as an Observation. Use one tool per reply.\n"
    "When you are done, reply with:\nFinal Answer: <your answer in Markdown>"
)


def prompt_mode_system(system: str, tools: list[ToolSchema]) -> str:
    """The system message of prompt tool calling. The tool catalog (most of the prompt: ~3,500 tokens
    for our tools) comes first, before the instructions, which end with what changes from run to run
    (the notebook's path, the rules): a server that caches prompt prefixes (llama.cpp, vLLM, Ollama, a
    hosted API) then reuses the catalog across notebooks and threads instead of evaluating it again.
    The reply format comes last, short and nearest the conversation."""
    return f"{tools_section(tools)}\n\n{system}\n\n{REPLY_FORMAT}"


def as_prompt_messages(messages: list[Message]) -> list[Message]:
    """Canonical (OpenAI tool-call) history as plain chat: calls stay in the assistant's text,
    results come back as user observations."""
    out: list[Message] = []
    for message in messages:
        role = message.get("role")
        if role == "tool":
            out.append({"role": "user", "content": f"Observation: {message.get('content', '')}"})
        elif role == "assistant" and message.get("tool_calls"):
            text = message.get("content") or ""
            if "Action:" not in text:  # a call rescued or cut: write it out the prompt way
                call = message["tool_calls"][0]["function"]
                text = f"{text}\nAction: {call['name']}\nAction Input: {call['arguments']}".strip()
            out.append({"role": "assistant", "content": text})
        else:  # role and content only: Cellwright's own keys stay behind
            plain: Message = {}
            if "role" in message:
                plain["role"] = message["role"]
            if "content" in message:
                plain["content"] = message["content"]
            out.append(plain)
    return out
