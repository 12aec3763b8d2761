"""What a test scripts the fake LLM to answer: text, a tool call, or an error, each a Reply."""

from __future__ import annotations

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
