"""A thread as people see it: its title, what its saved state says (the approval it waits for, its
mode), and its messages as GET threads/{id} shows them."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast, get_args

from agent_core.contract.choices import Autonomy, Mode
from agent_core.contract.event_fields import ApprovalRequiredFields
from agent_core.json_types import JsonObject, json_items, json_object
from agent_core.loop.state import parse_args
from agent_core.messages import CONTEXT_KEY, Message

if TYPE_CHECKING:
    from langgraph.types import StateSnapshot


def has_call(values: JsonObject, call_id: str) -> bool:
    """Whether the thread's messages (its saved state's values) hold a tool call with this id."""
    return any(
        json_object(call).get("id") == call_id
        for message in json_items(values.get("messages"))
        for call in json_items(json_object(message).get("tool_calls"))
    )


def view_message(message: Message) -> JsonObject:
    """A state message as GET threads/{id} shows it."""
    view: JsonObject = {"role": message.get("role"), "content": message.get("content") or ""}
    if message.get("tool_calls"):
        view["tool_calls"] = [
            {"id": c["id"], "name": c["function"]["name"], "args": parse_args(c["function"]["arguments"])[0]}
            for c in message["tool_calls"]
        ]
    if message.get("tool_call_id"):
        view["tool_call_id"] = message["tool_call_id"]
    return view


def visible_messages(messages: list[Message]) -> list[JsonObject]:
    """A conversation as GET threads/{id} shows it: without the context Cellwright attached."""
    return [view_message(m) for m in messages if not m.get(CONTEXT_KEY)]


def title_from(message: str) -> str:
    line = " ".join(message.split())
    return line if len(line) <= 60 else line[:57] + "..."


class PendingApproval(ApprovalRequiredFields, total=False):
    """The approval card a thread waits for: graph.py's interrupt value, and the interrupt's id."""

    agent: str
    interrupt_id: str


def pending_approval(snapshot: StateSnapshot) -> PendingApproval | None:
    """The approval the thread waits for, if any (also one raised inside a sub-agent)."""
    for interrupt in snapshot.interrupts:
        if isinstance(interrupt.value, dict) and "id" in interrupt.value:
            # LangGraph types an interrupt's value Any: graph.py raises an ApprovalRequest as a dict
            return cast("PendingApproval", {**interrupt.value, "interrupt_id": interrupt.id})
    return None


def stuck(snapshot: StateSnapshot) -> bool:
    """A crash between saving the model's step and raising its approval interrupt leaves a
    tools step with no interrupt: driving the thread again (input None) asks for approval."""
    return snapshot.next == ("tools",) and not snapshot.interrupts


def mode_of(snapshot: StateSnapshot) -> Mode:
    mode = (snapshot.values or {}).get("mode")
    return "multi" if mode == "multi" else "single"


def autonomy_of(snapshot: StateSnapshot) -> Autonomy:
    autonomy = (snapshot.values or {}).get("autonomy")
    for known in get_args(Autonomy.__value__):
        if autonomy == known:
            return known
    return "agent"


def driver_of(snapshot: StateSnapshot) -> str:
    """Who drives the thread's current run: an outside agent's name, or "" for the model."""
    values = snapshot.values or {}
    return str(values.get("outside_client") or "") if values.get("outside_call") else ""
