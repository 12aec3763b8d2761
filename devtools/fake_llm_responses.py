"""The scripted model's replies in OpenAI's Responses API (POST /v1/responses, streamed), for agents
that speak only that API (Codex, and its ACP adapter codex-acp): the same script, one reply per
request, as its text and function calls in the Responses stream's events."""

from __future__ import annotations

import json
from typing import Any

from devtools.fake_llm_script import Reply

USAGE = {
    "input_tokens": 10,
    "output_tokens": 5,
    "total_tokens": 15,
    "input_tokens_details": {"cached_tokens": 0},
    "output_tokens_details": {"reasoning_tokens": 0},
}


def response_events(reply: Reply, calls: list[tuple[str, str, str | None]], number: int) -> list[dict[str, Any]]:
    """The stream of one reply: its text as one message item, then each function call (name,
    JSON arguments, call id), then `response.completed` (left out for a reply that hangs or drops)."""
    response_id = f"resp_fake_{number}"
    events: list[dict[str, Any]] = [{"type": "response.created", "response": {"id": response_id}}]
    index = 0
    content = reply.content if isinstance(reply.content, str) else "".join(reply.content or [])
    if content:
        message_id = f"msg_fake_{number}"
        item = {"type": "message", "id": message_id, "role": "assistant", "content": []}
        events.append({"type": "response.output_item.added", "output_index": index, "item": item})
        pieces = reply.content if isinstance(reply.content, list) else [content]
        for piece in pieces:
            events.append(
                {
                    "type": "response.output_text.delta",
                    "item_id": message_id,
                    "output_index": index,
                    "content_index": 0,
                    "delta": piece,
                }
            )
        done = {**item, "content": [{"type": "output_text", "text": content, "annotations": []}]}
        events.append({"type": "response.output_item.done", "output_index": index, "item": done})
        index += 1
    for name, arguments, call_id in calls:
        item = {"type": "function_call", "id": f"fc_{call_id}", "call_id": call_id, "name": name, "arguments": ""}
        events.append({"type": "response.output_item.added", "output_index": index, "item": item})
        events.append(
            {
                "type": "response.function_call_arguments.delta",
                "item_id": item["id"],
                "output_index": index,
                "delta": arguments,
            }
        )
        events.append(
            {"type": "response.output_item.done", "output_index": index, "item": {**item, "arguments": arguments}}
        )
        index += 1
    if not (reply.hang or reply.drop):
        events.append({"type": "response.completed", "response": {"id": response_id, "usage": USAGE}})
    return events


def sse(event: dict[str, Any]) -> bytes:
    return f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()
