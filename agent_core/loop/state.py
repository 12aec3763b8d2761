"""The graph's state: OpenAI-format messages in a delta channel, the run's counters and modes, and
what a new run starts with."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Annotated, TypedDict

from langgraph.channels.delta import DeltaChannel

from agent_core.json_types import JsonObject
from agent_core.loop import usage as token_usage
from agent_core.messages import Message, ToolCall


class MessagesAppend(TypedDict):
    """A node's write to `messages`: the messages to add (see appended)."""

    append: list[Message]


def appended(*messages: Message) -> MessagesAppend:
    """A write to `messages`. Wrapped, because LangGraph turns bare message dicts written to a delta
    channel into LangChain message objects, and the state holds OpenAI-format dicts."""
    return {"append": list(messages)}


def append_messages(current: list[Message], writes: Sequence[MessagesAppend | list[Message]]) -> list[Message]:
    merged = list(current)
    for write in writes:
        merged.extend(write["append"] if isinstance(write, dict) else write)
    return merged


class _StateMessages(TypedDict, total=False):
    # A delta channel: each checkpoint stores the new messages, not the whole list again, so a long
    # thread grows linearly on disk instead of with the square of its turns.
    messages: Annotated[list[Message], DeltaChannel(append_messages, snapshot_frequency=100)]


class Failure(TypedDict, total=False):
    """Consecutive identical failures: {} after a success."""

    call: str  # the failing call's fingerprint (its name and canonical arguments)
    count: int


class _StateFields(TypedDict, total=False):
    """The state's fields but `messages`, which a node reads as a list and writes as MessagesAppend."""

    todos: list[dict[str, str]]
    model_calls: int  # per run: reset by each new user message
    done: bool
    deferred: list[str]  # calls cut from the last turn, to tell the model they did not run
    failure: Failure
    summary: str
    summary_upto: int  # messages before this index are covered by `summary`
    mode: str  # "single" or "multi": which agent answers the user
    vision_refused: bool  # the endpoint refused image parts: descriptions only, for the rest of the thread
    autonomy: str  # "ask", "plan" or "agent": the tools this run offers (agent_core.loop.autonomy)
    plan_approved: bool  # Plan mode: the user approved this run's plan, every tool is offered now
    usage: JsonObject  # the thread's token totals (agent_core.loop.usage)
    run_usage: JsonObject  # this run's, reset by each new user message
    kernel_identity: str  # the kernel process the last cell ran in: a restart since then is told to the model
    disabled_mcp_servers: list[str]  # MCP servers this thread does not use (agent_core.tools.gathering)
    notebook_tools: list[str]  # the kernel's @tool functions at the last run's start: told when they are gone
    # The call an outside agent (an MCP client) asked for: it stands for the model's turn of this run
    # (agent_core.loop.graph), and the run ends with its result. None: Cellwright's model answers.
    outside_call: ToolCall | None
    outside_client: str  # who asked for it ("Claude Code via MCP"): named where a cell names its model
    forked_from: str  # "<thread id>:<tool call id>" a forked thread continues from (agent_core.loop.branches)
    data_policy: str  # the narrower data policy a run asked for, kept for the thread's later runs (agent_core.privacy)
    background_after: float | None  # what this run asked for (POST runs), else None: the server's (issue 38)


class AgentState(_StateMessages, _StateFields, total=False):
    """The graph's state, as a node reads it (the channels: `messages` first, then the other fields)."""


class AgentUpdate(_StateFields, total=False):
    """What a node returns: the fields it changes, and the messages it adds."""

    messages: MessagesAppend


def new_run_input(
    message: str,
    mode: str = "single",
    context: list[Message] | None = None,
    autonomy: str = "agent",
    data_policy: str | None = None,
    background_after: float | None = None,
) -> AgentUpdate:
    """A run's input: the user's message, after the context Cellwright attached to it (if any); a
    narrower data policy it asked for is kept in the state for the thread's later runs, the
    background_after it asked for for this run's segments."""
    messages: list[Message] = [*(context or []), {"role": "user", "content": message}]
    kept: AgentUpdate = {"data_policy": data_policy} if data_policy else {}
    return {
        **kept,
        "messages": appended(*messages),
        "model_calls": 0,
        "done": False,
        "failure": {},
        "mode": mode,
        "autonomy": autonomy,
        "plan_approved": False,
        "run_usage": token_usage.zero(),
        "outside_call": None,
        "outside_client": "",
        "background_after": background_after,
    }


def outside_call_input(call_id: str, name: str, arguments: JsonObject, autonomy: str, client: str) -> AgentUpdate:
    """A run that is one tool call of an outside agent: no user message, no model call; the call goes
    through the tools node as the model's would (policy, approval, ledger, undo), then the run ends."""
    call: ToolCall = {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
    return {
        "model_calls": 0,
        "done": False,
        "failure": {},
        "autonomy": autonomy,
        "plan_approved": False,
        "run_usage": token_usage.zero(),
        "outside_call": call,
        "outside_client": client,
        "background_after": None,  # the server's: what an earlier run asked for was for that run
    }


def parse_args(raw: str | JsonObject | None) -> tuple[JsonObject | None, str | None]:
    if isinstance(raw, dict):
        return raw, None
    try:
        value = json.loads(raw or "{}")
    except json.JSONDecodeError as exc:
        return None, f"the arguments are not valid JSON ({exc.msg} at position {exc.pos}); send a JSON object"
    if not isinstance(value, dict):
        return None, "the arguments must be a JSON object"
    return value, None
