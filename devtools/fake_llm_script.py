"""What a test scripts the fake LLM to answer: text, a tool call, or an error, each a Reply."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

ToolCallSpec = tuple  # (name, args) or (name, args, id); args: dict | str (raw) | None


@dataclass
class Reply:
    """One scripted answer of the model.

    content: text; a list of str is streamed as exactly those deltas.
    tool_calls: (name, args) or (name, args, id); args is a dict (JSON-encoded)
        or a str sent verbatim.
    raw_args: sent verbatim as the first tool call's arguments (invalid JSON tests).
    reasoning: streamed as ``reasoning_content`` deltas before the content.
    finish_reason: override ("length", ...); default "tool_calls" or "stop".
    status/error_body/headers: a non-200 status sends error_body as JSON.
    delay_before: seconds to wait before the response headers.
    chunk_delay: seconds to wait before each stream chunk.
    empty_stream: stream nothing but ``data: [DONE]`` (no chunk at all).
    hang: send headers (and any scripted chunks), then stall until server stop.
    drop: send the scripted content chunks, then close the connection mid-body (no [DONE]).
    omit_ids: tool-call deltas carry no "id".
    repeat_name: every argument delta repeats the function name (llama.cpp).
    split_args_into: argument pieces per tool call; 0 = arguments in the first delta.
    misshapen: stream chunks sent as given after the first one (an endpoint that breaks the format).
    """

    content: str | list[str] | None = None
    tool_calls: Sequence[ToolCallSpec] = ()
    raw_args: str | None = None
    reasoning: str | None = None
    finish_reason: str | None = None
    status: int = 200
    error_body: dict | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    delay_before: float = 0.0
    chunk_delay: float = 0.0
    empty_stream: bool = False
    hang: bool = False
    drop: bool = False
    omit_ids: bool = False
    repeat_name: bool = False
    split_args_into: int = 3
    misshapen: Sequence[object] = ()

    def __post_init__(self) -> None:
        for tc in self.tool_calls:
            if not isinstance(tc, (tuple, list)) or len(tc) not in (2, 3) or not isinstance(tc[0], str):
                raise ValueError(f"tool call must be (name, args) or (name, args, id), got {tc!r}")
        if self.raw_args is not None and not self.tool_calls:
            raise ValueError("raw_args needs at least one tool call")


ScriptItem = Reply | str | Callable[[dict], Reply | str]


def text(content: str | list[str], **opts: Any) -> Reply:
    """A plain assistant text reply."""
    return Reply(content=content, **opts)


def tool_call(name: str, args: dict | str | None = None, *, id: str | None = None, **opts: Any) -> Reply:
    """A reply with one native tool call (args: dict, or str sent verbatim)."""
    return Reply(tool_calls=[(name, args, id)], **opts)


_ERROR_DEFAULTS = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", None),
    404: ("invalid_request_error", "model_not_found"),
    429: ("requests", "rate_limit_exceeded"),
}


def error(
    status: int,
    message: str,
    *,
    type: str | None = None,
    code: str | None = None,
    retry_after: float | None = None,
    **opts: Any,
) -> Reply:
    """An HTTP error with an OpenAI-style body {"error": {message, type, code}}."""
    d_type, d_code = _ERROR_DEFAULTS.get(status, ("server_error", None))
    headers = dict(opts.pop("headers", {}))
    if retry_after is not None:
        headers["retry-after"] = f"{retry_after:g}"
    body = {"error": {"message": message, "type": type or d_type, "param": None, "code": code or d_code}}
    return Reply(status=status, error_body=body, headers=headers, **opts)


def error_body(message: str, type: str = "server_error", code: str | None = None) -> dict:
    return {"error": {"message": message, "type": type, "param": None, "code": code}}


# -- honest policies: a scripted model that knows only what the request showed it


class NotShown(LookupError):
    """An honest policy looked for a value that no tool result (nor the prompt) of the request holds:
    the product failed to tell the model something it needs, and the test must fail."""


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts (images for vision models): their text only
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


class Shown:
    """What one chat-completions request showed the model, and nothing else: the system prompt, the
    tools offered, and each tool result with the name of the call it answers (native tool calling,
    or prompt mode's "Observation:" turns).

    A policy that takes every argument from here cannot pass a value the product never showed: a
    test written with it fails when a tool's output lacks what its description tells the model to
    use. A policy that knows a value from the test's fixture (an id, a table name) tests the fake,
    not the product."""

    def __init__(self, body: Mapping[str, Any]) -> None:
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        self.system = "\n".join(_text(m.get("content")) for m in messages if m.get("role") == "system")
        # What the user (or, for a sub-agent, its task's description) asked, prompt mode's results aside.
        self.asked = "\n".join(
            text
            for m in messages
            if m.get("role") == "user" and not (text := _text(m.get("content"))).startswith("Observation: ")
        )
        self.tools = [
            str((t.get("function") or {}).get("name")) for t in body.get("tools") or [] if isinstance(t, dict)
        ]
        names: dict[str, str] = {}
        self._results: list[tuple[str, str]] = []  # (tool name, text), oldest first
        for m in messages:
            for call in m.get("tool_calls") or []:
                names[str(call.get("id"))] = str((call.get("function") or {}).get("name"))
            if m.get("role") == "tool":
                self._results.append((names.get(str(m.get("tool_call_id")), ""), _text(m.get("content"))))
            elif m.get("role") == "user" and _text(m.get("content")).startswith("Observation: "):
                self._results.append(("", _text(m.get("content"))[len("Observation: ") :]))

    def results(self, tool: str | None = None) -> list[str]:
        """The texts of the tool results (of calls to `tool` only, when given), oldest first."""
        return [text for name, text in self._results if tool is None or name == tool]

    def find(self, pattern: str, tool: str | None = None, group: int | str = 1, flags: int = 0) -> str:
        """`group` of the last match of `pattern` in the newest tool result (of `tool`) that has one."""
        for text in reversed(self.results(tool)):
            found = list(re.finditer(pattern, text, flags))
            if found:
                return found[-1].group(group)
        where = f"{tool!r} results" if tool else "tool results"
        raise NotShown(f"no {where} in the request match {pattern!r}: the model was never shown it")

    def find_in_prompt(self, pattern: str, group: int | str = 1, flags: int = 0) -> str:
        """`group` of the first match of `pattern` in the system prompt (what it lists: skills, ...),
        else in what the user asked (a sub-agent: its task's description)."""
        found = re.search(pattern, self.system, flags) or re.search(pattern, self.asked, flags)
        if found is None:
            raise NotShown(f"neither the system prompt nor the user's messages match {pattern!r}")
        return found.group(group)

    def tool_named(self, pattern: str) -> str:
        """The one offered tool whose name matches `pattern` (an MCP tool after discovery, ...)."""
        names = [name for name in self.tools if re.search(pattern, name)]
        if len(names) != 1:
            raise NotShown(f"the request offers {len(names)} tools matching {pattern!r} (of {self.tools})")
        return names[0]

    def cell(self, containing: str | None = None, index: int | None = None) -> dict[str, Any]:
        """A cell as the newest read_notebook result showed it: {"index", "id", "source", "header"},
        the first whose source contains `containing`, or the one at `index`."""
        text = next(reversed(self.results("read_notebook")), None)
        if text is None:
            raise NotShown("the request holds no read_notebook result")
        cells = [
            {"index": int(m["index"]), "id": m["id"], "header": m["header"], "source": m["source"]}
            for m in _READ_CELL.finditer(text)
        ]
        for cell in cells:
            if (index is None or cell["index"] == index) and (containing is None or containing in cell["source"]):
                return cell
        raise NotShown(f"read_notebook showed no cell {containing or index!r} with its id: {text[:500]!r}")


# read_notebook's cells: "--- cell <index>, id <id> (<facts>)" then the source up to the next header
# or the outputs; parsing it is what a real model does with that text.
_READ_CELL = re.compile(
    r"^--- cell (?P<index>\d+), id (?P<id>[A-Za-z0-9_-]+) \((?P<header>[^\n]*)\)\n"
    r"(?P<source>.*?)(?=^\[outputs\]$|^--- cell |\n\nRun order|\Z)",
    re.M | re.S,
)


def reading(policy: Callable[[Shown], Reply | str]) -> Callable[[dict], Reply | str]:
    """A script item whose reply is made from what the request showed (see Shown): e.g.
    ``reading(lambda seen: tool_call("edit_cell", {"cell_id": seen.cell("alpha")["id"], ...}))``.
    A value it cannot find answers the request with an error, which fails the run and the test."""

    def reply(body: dict) -> Reply | str:
        try:
            return policy(Shown(body))
        except NotShown as exc:
            return error(400, f"honest policy: {exc}", code="not_shown")  # 400: not retried, the run fails

    return reply
