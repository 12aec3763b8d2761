"""What a run segment starts with (Segment, and the notes on its tools from outside), what the driver
hands its caller (PreparedRun), and the approval event an interrupt becomes: the values ThreadRunner
passes around."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from agent_core.contract import make_event
from agent_core.contract.choices import Autonomy, Mode
from agent_core.contract.event_fields import ApprovalRequiredEventDict
from agent_core.json_types import JsonObject, json_items
from agent_core.loop.thread_policy import narrowed
from agent_core.messages import CONTEXT_KEY, Message
from agent_core.privacy.outgoing import tool_result_leaving
from agent_core.tools.external import ExternalToolSpec

Durability = Literal["async", "exit"]

if TYPE_CHECKING:
    from agent_core.config.agent_settings import AgentSettings
    from agent_core.contract.shared import LiveCell
    from agent_core.loop.mentions import MentionView
    from agent_core.loop.state import AgentUpdate


@dataclass
class PreparedRun:
    """A run segment the runner has accepted (checked under the caller's lock): `run_id` is known at
    once, `drive()` does the work (gathering its tools and context first) and returns the
    `run_finished` status. The server awaits `drive()` in a task of its own; the magic in place."""

    thread_id: str
    run_id: str
    drive: Callable[[], Awaitable[str]]
    appended: Appended | None = None  # an outside call's: the call and its result, once its tools node has it


@dataclass
class Appended:
    """Messages that hold an outside agent's call and its result, and the data policy the thread
    kept. An outside call's segment fills one as its tools node has the result: the call is answered
    from there, not from the thread's state read back (issue 41: a whole state read, ~4 ms on a short
    thread and more on a long one, for every MCP call) and not after the step's save."""

    thread_policy: object  # the state's "data_policy" (a narrower one a run asked for), or None
    messages: list[Message] = field(default_factory=list)

    def add(self, messages: list[Message]) -> None:
        """The call and its result (RunContext.call_answered)."""
        self.messages.extend(messages)

    def tool_result(self, call_id: str, settings: AgentSettings) -> str | None:
        """Call `call_id`'s result as it may leave to another program; None if this segment has none."""
        policy = narrowed(settings, self.thread_policy)
        return tool_result_leaving(self.messages, call_id, policy.data_policy, policy.redaction_patterns)


@dataclass(frozen=True)
class Segment:
    """What a run segment starts with, beside its thread and graph input."""

    mode: Mode
    autonomy: Autonomy
    message: str  # the user's message; "" for a segment an approval resumed
    notebook_cells: list[JsonObject] | None = None  # as the browser sent them
    driver: str = ""  # an outside agent's run: who asked (RunContext.driver)
    # When LangGraph saves the state: after every step, in the background while the next step goes on
    # ("async": the model is asked while the user's message is saved; the tools node waits for its
    # step's save before it acts, agent_core.storage.step_saves), or once, when the segment ends or
    # pauses for approval ("exit": an outside agent's one call, whose client waits for the answer;
    # a crash mid-call loses only a call its client saw fail, or one answered in the milliseconds
    # before that save: the tool ledger and the thread's events keep what ran).
    durability: Durability = "async"
    appended: Appended | None = None  # given: an outside call's result is handed there (RunContext.call_answered)


@dataclass(frozen=True)
class SegmentInput:
    """What a segment's graph is given and the tools it has beside the registry's: gathered (MCP
    servers, the kernel's @tool functions and context) while the segment takes its thread's lease."""

    graph_input: Any  # a new run's AgentUpdate, an approval's Command, None to drive on from the saved state
    extra: dict[str, ExternalToolSpec]
    mentions: list[MentionView] | None = None  # a new run's, for run_started


def browser_cells(cells: list[LiveCell] | None) -> list[JsonObject] | None:
    return None if cells is None else [cell.model_dump() for cell in cells]


def approval_event(payload: dict[str, Any]) -> ApprovalRequiredEventDict:
    """The approval card of an interrupt: `payload` is its value, an ApprovalRequest as a dict (LangGraph
    types an interrupt's value Any; make_event checks it against the contract)."""
    fields = {k: v for k, v in payload.items() if k != "agent"}
    event = make_event("approval_required", **fields)
    event["agent"] = payload.get("agent", "main")
    return event


def with_tool_notes(
    graph_input: AgentUpdate, tools: dict[str, ExternalToolSpec], notes: list[str], prior: JsonObject
) -> AgentUpdate:
    """A new run's input with the notes about external tools, before the user's message (hidden
    from the thread's view, as other context is), and the notebook tools it has, so that the next
    run can tell the model which of them are gone (a kernel restart forgets them)."""
    if not isinstance(graph_input, dict) or "messages" not in graph_input:
        return graph_input
    now = [name for name, spec in tools.items() if spec.origin.get("kind") == "notebook"]
    gone = [name for name in json_items(prior.get("notebook_tools")) if name not in now]
    if gone:
        notes = [
            *notes,
            f"The notebook's @tool functions {gone[:20]} are gone (the kernel restarted, or they were "
            "removed): do not call them; the cell that defines them must run again first.",
        ]
    graph_input = {**graph_input, "notebook_tools": now}
    if not notes:
        return graph_input
    text = "[Tools from outside Cellwright: " + " ".join(notes[:20])[:4000] + "]"
    messages = list(graph_input["messages"]["append"])
    messages.insert(len(messages) - 1, {"role": "user", "content": text, CONTEXT_KEY: True})
    return {**graph_input, "messages": {"append": messages}}
