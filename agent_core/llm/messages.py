"""The shapes of the OpenAI-format chat messages, tool calls and tool schemas the thread's state holds
and the adapter sends: one TypedDict each, in place of `dict[str, Any]` at every seam they cross.

Ours rather than the SDK's `ChatCompletionMessageParam`: that is a union by role (reading
`tool_calls` of any message does not type-check) and has no room for the keys Cellwright keeps on
a message in the state and strips before it is sent (see agent_core.loop.mentions.for_the_model)."""

from __future__ import annotations

from typing import TypedDict

from agent_core.undo.preimages import Preimage


class FunctionCall(TypedDict):
    name: str
    arguments: str  # the JSON text as the model wrote it (it may not parse)


class ToolCall(TypedDict):
    id: str
    type: str  # "function"
    function: FunctionCall


class ImageUrl(TypedDict):
    url: str  # a data: URL


class ContentPart(TypedDict, total=False):
    """One part of a message's content list: {"type": "text", "text"} or {"type": "image_url", "image_url"}."""

    type: str
    text: str
    image_url: ImageUrl


class Message(TypedDict, total=False):
    """A chat message as the state keeps it. Total=False: which keys are there depends on the role
    (a tool result has `tool_call_id`, an assistant turn may have `tool_calls`)."""

    role: str  # "system", "user", "assistant" or "tool"
    content: str | list[ContentPart] | None
    tool_calls: list[ToolCall]
    tool_call_id: str
    # Cellwright's own keys, never sent (agent_core.loop.mentions.for_the_model strips them):
    context: bool  # CONTEXT_KEY: a note Cellwright attached to the user's message
    images: list[dict[str, str]]  # IMAGES_KEY: a tool result's images, {"mime", "data" (base64)}
    preimage: Preimage  # PREIMAGE_KEY: the file a write step replaced


class FunctionSchema(TypedDict):
    name: str
    description: str
    parameters: dict[str, object]  # the argument model's JSON Schema


class ToolSchema(TypedDict):
    """A tool as the model is offered it (the request's `tools`)."""

    type: str  # "function"
    function: FunctionSchema
