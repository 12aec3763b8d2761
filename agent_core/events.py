"""Every event the agent and the server emit: the single definition (mirrored in labextension_src/tokens.ts)."""
from __future__ import annotations

from typing import Any, Literal, TypedDict, get_args

EventType = Literal[
    "run_started",
    "token",
    "tool_call",
    "approval_required",
    "cell_started",
    "cell_output",
    "cell_finished",
    "tool_result",
    "todos",
    "agent_switch",
    "final",
    "error",
    "run_finished",
]
EVENT_TYPES: tuple[str, ...] = get_args(EventType)

RunStatus = Literal["completed", "awaiting_approval", "cancelled", "failed"]
CellStatus = Literal["ok", "error", "aborted"]
ToolStatus = Literal["ok", "error", "rejected"]


class Todo(TypedDict):
    content: str
    status: Literal["pending", "in_progress", "completed"]


class NextItem(TypedDict):
    title: str
    prompt: str


class Event(TypedDict, total=False):
    """An event as stored and streamed. `type`, `seq`, `thread_id`, `run_id`, `agent` are always set
    by the run manager; the rest depends on `type` (see API.md)."""

    type: EventType
    seq: int
    thread_id: str
    run_id: str
    agent: str


def make_event(type_: EventType, **fields: Any) -> dict[str, Any]:
    """An event body as emitted by the agent; the run manager stamps seq/thread/run/agent."""
    if type_ not in EVENT_TYPES:
        raise ValueError(f"unknown event type {type_!r}")
    return {"type": type_, **fields}
