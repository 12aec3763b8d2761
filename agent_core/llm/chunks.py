"""A streamed chat completion's chunks, as the OpenAI streaming API documents them: their shapes (parsed
JSON, not validated: every field is read defensively, .get and isinstance, because servers differ), one
chunk parsed or the error the endpoint reported inside the stream, its deltas, whether a choice ended at a
length limit, and the tool calls assembled from their deltas."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any, TypedDict, cast

from agent_core import fast_json
from agent_core.messages import ToolCall


class ToolCallDelta(TypedDict, total=False):
    index: int
    id: str
    function: dict[str, str]  # pieces of {"name", "arguments"} to append


class Delta(TypedDict, total=False):
    """A chunk's `choices[i].delta`."""

    content: str | None
    tool_calls: list[ToolCallDelta]


class Choice(TypedDict, total=False):
    delta: Delta
    finish_reason: str | None


class Usage(TypedDict, total=False):
    prompt_tokens: int
    completion_tokens: int
    prompt_tokens_details: dict[str, int]  # {"cached_tokens"}


class Chunk(TypedDict, total=False):
    choices: list[Choice]
    usage: Usage | None
    error: object  # an error the endpoint reported inside the stream


def parse_chunk(data: str, request: Any) -> Chunk:  # the SDK's request: httpx's or httpx2's, by SDK version
    """One chunk, or the error the endpoint reported inside the stream (as the SDK raises it)."""
    import openai

    try:
        chunk: Chunk = fast_json.loads(data)
    except ValueError:
        raise openai.APIError(
            f"The endpoint sent a chunk that is not JSON: {data[:100]!r}", request, body=None
        ) from None
    if not isinstance(chunk, dict):
        raise openai.APIError(f"The endpoint sent a chunk that is not an object: {data[:100]!r}", request, body=None)
    error = chunk.get("error")
    if error:
        message = error.get("message") if isinstance(error, dict) else None
        raise openai.APIError(
            message if isinstance(message, str) and message else "An error occurred during streaming",
            request,
            body=error,
        )
    return chunk


def deltas(chunk: Chunk) -> Iterator[Delta]:
    """The chunk's non-empty deltas. A misshapen part (a choice or delta that is not an object) is
    skipped as an unknown field would be: the model's endpoint is not trusted to keep the format."""
    choices: object = chunk.get("choices")
    for choice in choices if isinstance(choices, list) else ():
        delta = choice.get("delta") if isinstance(choice, dict) else None
        if isinstance(delta, dict) and delta:
            yield cast(Delta, delta)  # an object: its fields are checked where they are read


def cut_at_length(chunk: Chunk) -> bool:
    """Whether a choice of the chunk ended at a length limit (the reply's cap or the context's end)."""
    choices: object = chunk.get("choices")
    if not isinstance(choices, list):
        return False
    return any(isinstance(choice, dict) and choice.get("finish_reason") == "length" for choice in choices)


def merge_tool_delta(calls: dict[int, ToolCall], delta: ToolCallDelta) -> None:
    if not isinstance(delta, dict):  # misshapen: skipped (see deltas)
        return
    index = delta.get("index")
    call = calls.setdefault(
        index if isinstance(index, int) else len(calls),
        {"id": "", "type": "function", "function": {"name": "", "arguments": ""}},
    )
    call_id = delta.get("id")
    if isinstance(call_id, str) and call_id:
        call["id"] = call_id
    fn = delta.get("function")
    if not isinstance(fn, dict):
        return
    name, arguments = fn.get("name"), fn.get("arguments")
    if isinstance(name, str) and name and name != call["function"]["name"]:
        # Some servers repeat the full name in every chunk: keep it once.
        call["function"]["name"] += name
    if isinstance(arguments, str) and arguments:
        call["function"]["arguments"] += arguments


def finished_calls(calls: dict[int, ToolCall]) -> list[ToolCall]:
    finished = []
    for index in sorted(calls):
        call = calls[index]
        if not call["function"]["name"] and not call["function"]["arguments"]:
            continue  # only misshapen pieces came for it: nothing the model asked for
        call["id"] = call["id"] or f"call_{uuid.uuid4().hex[:16]}"  # some servers send no ids
        finished.append(call)
    return finished
