"""A thread's conversation as a tree of LangGraph checkpoints (issue 25): the current branch is the
newest checkpoint and its ancestors; a rewind forks a new head from an older checkpoint of that
chain, so the steps gone back over stay readable as another branch (a leaf of the tree). Nothing
here touches the kernel or files: agent_core.rewind.rewind does, and calls this for the conversation."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from agent_core.json_types import JsonObject
from agent_core.loop.state import appended
from agent_core.messages import CONTEXT_KEY, Message

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig
    from langgraph.types import StateSnapshot

    from agent_core.loop.graph import AgentGraph

REWOUND_FROM = "cellwright_rewound_from"  # checkpoint metadata of a rewind's head: the head it left
MAX_CHECKPOINTS = 20_000  # of one thread read to find branches (their ids and parents only)
MAX_BRANCHES = 50  # listed, newest first


class NoSuchStep(LookupError):
    """The current branch has no such step (or no checkpoint before it)."""


@dataclass(frozen=True)
class ForkPoint:
    snapshot: StateSnapshot
    later: list[Message]  # the current branch's messages after the fork point


def _config(thread_id: str, checkpoint_id: str | None = None, **metadata: str) -> RunnableConfig:
    configurable: JsonObject = {"thread_id": thread_id, "checkpoint_ns": ""}
    if checkpoint_id is not None:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable, "metadata": dict(metadata)}


def checkpoint_id(snapshot: StateSnapshot) -> str:
    return str(snapshot.config["configurable"]["checkpoint_id"])


def messages_of(snapshot: StateSnapshot) -> list[Message]:
    return list((snapshot.values or {}).get("messages") or [])


async def _ancestry(graph: AgentGraph, thread_id: str) -> tuple[list[str], dict[str, str | None]]:
    """The current branch's checkpoint ids (the newest checkpoint and its ancestors, newest first), and
    every checkpoint's parent. Read from the saver's tuples: no state is rebuilt (a state's messages
    are rebuilt from their deltas, so rebuilding every checkpoint's would cost the square of its length)."""
    assert graph.checkpointer is not None and not isinstance(graph.checkpointer, bool)
    parents: dict[str, str | None] = {}
    async for saved in graph.checkpointer.alist(_config(thread_id), limit=MAX_CHECKPOINTS):  # newest first
        parent = saved.parent_config["configurable"].get("checkpoint_id") if saved.parent_config else None
        parents[str(saved.config["configurable"]["checkpoint_id"])] = str(parent) if parent else None
    chain: list[str] = []
    node = next(iter(parents), None)
    while node is not None and node in parents:
        chain.append(node)
        node = parents[node]
    return chain, parents


async def state_at(graph: AgentGraph, thread_id: str, checkpoint: str) -> StateSnapshot:
    return await graph.aget_state(_config(thread_id, checkpoint))


def step_index(messages: list[Message], call_id: str | None, user_message: int | None) -> int:
    """Where the conversation is cut: the index of the assistant message that made call `call_id`,
    or of the context before the user's message number `user_message`."""
    if call_id is not None:
        for index, message in enumerate(messages):
            if any(call.get("id") == call_id for call in message.get("tool_calls") or []):
                return index
        raise NoSuchStep(f"this thread's current branch has no step {call_id[:200]!r}")

    users = [i for i, m in enumerate(messages) if m.get("role") == "user" and not m.get(CONTEXT_KEY)]
    if user_message is None or user_message >= len(users):
        raise NoSuchStep(f"this thread has {len(users)} messages of yours; number {user_message} is not one of them")
    index = users[user_message]
    while index > 0 and messages[index - 1].get(CONTEXT_KEY):  # the notes Cellwright sent with it go too
        index -= 1
    return index


async def fork_point(graph: AgentGraph, thread_id: str, call_id: str | None, user_message: int | None) -> ForkPoint:
    """The newest checkpoint of the current branch from before the step (durability "async" saves
    one after every node, so the conversation just before any model turn or user message is one).
    Messages only grow along a branch: a binary search rebuilds a handful of states, not all."""
    chain, _ = await _ancestry(graph, thread_id)
    if not chain:
        raise NoSuchStep("this thread has no conversation yet")
    states: dict[int, StateSnapshot] = {}

    async def count(index: int) -> int:
        if index not in states:
            states[index] = await state_at(graph, thread_id, chain[index])
        return len(messages_of(states[index]))

    await count(0)
    messages = messages_of(states[0])
    cut = step_index(messages, call_id, user_message)
    low, high = 0, len(chain) - 1
    if await count(high) > cut:
        raise NoSuchStep("no saved state from before that step is left")
    while low < high:  # the first (newest) index whose conversation ends before the cut
        middle = (low + high) // 2
        if await count(middle) <= cut:
            high = middle
        else:
            low = middle + 1
    return ForkPoint(states[low], messages[await count(low) :])


async def fork(graph: AgentGraph, thread_id: str, at: str, **metadata: str) -> str:
    """A new head of the thread from checkpoint `at`, finished (a next message starts a new run,
    nothing is re-driven); its id. The former head stays as it was: another branch."""
    config = await graph.aupdate_state(_config(thread_id, at, **metadata), {"done": True}, as_node="tools")
    return str(config["configurable"]["checkpoint_id"])


async def copy_into(graph: AgentGraph, snapshot: StateSnapshot, thread_id: str, forked_from: str) -> None:
    """A new thread's first state: `snapshot`'s values, finished, saying where it came from."""
    values = dict(snapshot.values or {})
    messages = values.pop("messages", [])
    update = {**values, "messages": appended(*messages), "done": True, "forked_from": forked_from}
    await graph.aupdate_state(_config(thread_id), update, as_node="tools")


def _common_prefix(a: list[Message], b: list[Message]) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def call_ids(messages: list[Message]) -> list[str]:
    return [str(c.get("id")) for m in messages for c in m.get("tool_calls") or []]


async def branches(graph: AgentGraph, thread_id: str) -> list[JsonObject]:
    """The leaves of the checkpoint tree (at most MAX_BRANCHES): the current branch first, then the
    others newest first."""
    chain, parents = await _ancestry(graph, thread_id)
    if not chain:
        return []
    inner = {parent for parent in parents.values() if parent}
    leaves = [checkpoint for checkpoint in parents if checkpoint not in inner][:MAX_BRANCHES]
    current = messages_of(await state_at(graph, thread_id, chain[0]))
    found = []
    for leaf in leaves:
        snapshot = await state_at(graph, thread_id, leaf)
        messages = messages_of(snapshot)
        is_current = leaf == chain[0]
        own = call_ids(messages if is_current else messages[_common_prefix(messages, current) :])
        found.append(
            {
                "branch": leaf,
                "current": is_current,
                "from_tool_call_id": own[0] if own else None,
                "created_at": str(snapshot.created_at or ""),
                "steps": len(call_ids(messages)),
            }
        )
    return found


async def read_branch(graph: AgentGraph, thread_id: str, branch: str) -> StateSnapshot | None:
    """The checkpoint `branch` of this thread, or None."""
    snapshot = await graph.aget_state(_config(thread_id, branch))
    return snapshot if snapshot.created_at else None
