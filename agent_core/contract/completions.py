"""Inline completion (issue 27): the body of `POST completions`, the lines of its streamed answer
(NDJSON, one CompletionChunk a line) and the server's completion usage."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from agent_core.contract.bodies import MAX_ID_CHARS, MAX_PATH_CHARS, Body
from agent_core.contract.shared import WireModel

MAX_SIDE_CHARS = 100_000  # prefix or suffix as sent; the prompt keeps much less (agent_core/completion/prompt.py)
MAX_CELLS_ABOVE = 50
MAX_CELL_CHARS = 20_000


class CompletionRequest(Body):
    path: str = Field(
        min_length=1, max_length=MAX_PATH_CHARS, description="The notebook or file, relative to the root."
    )
    cell_id: str | None = Field(default=None, max_length=MAX_ID_CHARS, description="The code cell typed in.")
    prefix: str = Field(max_length=MAX_SIDE_CHARS, description="The text before the cursor (the cell's or file's).")
    suffix: str = Field(default="", max_length=MAX_SIDE_CHARS, description="The text after the cursor.")
    language: str | None = Field(default=None, max_length=50, description='Default "python".')
    kernel_id: str | None = Field(
        default=None, max_length=MAX_ID_CHARS, description="The notebook's kernel; else the kernel of its session."
    )
    execution_count: int | None = Field(
        default=None,
        ge=0,
        description="The notebook's latest execution count: the kernel's names are read again when it changes "
        "(without it, at most every few seconds).",
    )
    cells_above: list[str] | None = Field(
        default=None,
        max_length=MAX_CELLS_ABOVE,
        description="The code cells above the cursor's cell as the browser has them, nearest first (bounded here, "
        "and cut to the prompt's budget by the server).",
    )


class CompletionChunk(WireModel):
    """One line of the streamed answer: `delta` pieces of the suggestion, then one `done` (or `error`)."""

    type: Literal["delta", "done", "error"]
    text: str = Field(
        default="",
        description="delta: the next piece; done: the whole suggestion as kept (empty when dropped: the panel "
        "clears what the deltas showed).",
    )
    dropped: str | None = Field(default=None, description="done: why the suggestion was dropped (it did not parse).")
    cached: bool = Field(default=False, description="done: served from the server's short cache, no request made.")
    fim: bool | None = Field(default=None, description="done: asked by fill-in-the-middle (false: a chat prompt).")
    kind: str | None = Field(default=None, description="error: what failed (e.g. llm_unreachable).")
    message: str | None = Field(default=None, description="error: what went wrong and what to do.")


class CompletionUsage(WireModel):
    """Completions of this server since it started (no thread owns them): requests, tokens, the cache."""

    requests: int = Field(description="Requests sent to the endpoint.")
    cached: int = Field(description="Completions answered from the cache, without a request.")
    cancelled: int = Field(description="Requests closed before their end (a new keystroke, or a boundary reached).")
    dropped: int = Field(description="Suggestions dropped because they did not parse with the suffix.")
    prompt_tokens: int
    completion_tokens: int
    estimated: bool = Field(description="Some figures are estimates (4 characters a token): the endpoint sent none.")
