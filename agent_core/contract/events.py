"""Every event of a thread's stream (API.md, "Events"), once. `make_event` checks what an emitter
sends against the model of its type, so a misspelt or mistyped field fails the test that emits it
instead of reaching the panel."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Literal, get_args

from pydantic import Field, TypeAdapter
from typing_extensions import TypeAliasType

from agent_core.contract.model_requests import SentSummary
from agent_core.contract.notebook_graph import MakesStale
from agent_core.contract.review import Impact, Provenance, RewindResult, RewindUndone, UndoResult
from agent_core.contract.shared import (
    Autonomy,
    CellStatus,
    Diagnostic,
    EventErrorKind,
    Mode,
    NbOutput,
    NextItem,
    RunStatus,
    Todo,
    ToolStatus,
    Usage,
    WireModel,
)
from agent_core.json_types import JsonObject

MAX_PREVIOUS_SOURCE = 100_000  # characters of an edited cell's old source kept on its cell_started


class EventBase(WireModel):
    """Fields every stored event carries; the event log stamps `seq` and `thread_id`, the run's
    event sink `run_id` and `agent`."""

    seq: int = Field(description="Per-thread counter, strictly increasing by one, never reused; the SSE `id:`.")
    thread_id: str
    run_id: str
    agent: str = Field(description='"main" in single mode; "planner" or the sub-agent\'s name in multi mode.')
    task_id: str | None = Field(
        default=None, description="Set on every event of a sub-agent: the id of the `task` call that started it."
    )


class MentionInfo(WireModel):
    name: str
    kind: Literal["variable", "file"]
    ok: bool = Field(description="false: not found, refused or unreadable; the model is told why.")


class RunStartedEvent(EventBase):
    """A run, or the segment of a run that an approval decision resumed, starts."""

    type: Literal["run_started"]
    mode: Mode
    autonomy: Autonomy = Field(default="agent", description="ask: read-only tools; plan: the plan is approved first.")
    message: str
    mentions: list[MentionInfo] | None = Field(
        default=None, description="The message's @mentions as the server resolved them (absent without any)."
    )


class TokenEvent(EventBase):
    type: Literal["token"]
    seq: int | None = Field(default=None, description="Absent on a live_only preview: it is not stored.")  # type: ignore[assignment]
    text: str = Field(description="A piece of the assistant's visible answer.")
    live_only: bool = Field(
        default=False,
        description="A preview, sent only to readers that asked for `previews=1`, as the model's delta arrives and "
        "before its coalesced row is stored; no `id:`.",
    )
    stored_as: int | None = Field(
        default=None,
        description="On a preview: the seq of the stored token event that will carry this text again. A reader drops "
        "its previews of that seq when the stored event with that seq (or any later one) arrives.",
    )


class ToolCallEvent(EventBase):
    type: Literal["tool_call"]
    id: str
    name: str = Field(description="As the model wrote it: an unknown name gets an error result.")
    args: JsonObject
    needs_approval: bool


class ToolOrigin(WireModel):
    """Where a tool that is not built in comes from: an MCP server, or a function the notebook's kernel
    registered with @tool. Shown on the approval card; never a reason to skip approval."""

    kind: Literal["mcp", "notebook"]
    tool: str = Field(description="The tool's own name: the MCP server's, or the Python function's.")
    server: str | None = Field(default=None, description="mcp: the configured server's name.")
    read_only_hint: bool | None = Field(
        default=None,
        description="mcp: what the server's readOnlyHint annotation claims (not trusted); notebook: @tool(read_only=True).",
    )
    file: str | None = Field(default=None, description="notebook: the file the function was defined in.")
    line: int | None = Field(default=None, description="notebook: its first line there.")


class ApprovalRequest(WireModel):
    """A call waiting for the user's decision: the approval card, and `pending_approval` of a thread."""

    id: str = Field(description="The tool call's id: POST threads/{id}/approvals/{this}.")
    name: str
    args: JsonObject
    description: str = Field(description="One line for the card; a preview that found a problem says it here.")
    diagnostics: list[Diagnostic] = Field(
        default_factory=list, description="run_cell: the linter's findings on the code."
    )
    diff: str | None = Field(default=None, description="write_file / edit_file: the change as a unified diff.")
    command: str | None = Field(default=None, description="execute_command: the command line.")
    cwd: str | None = Field(
        default=None, description='execute_command: its folder, relative to the root ("." for the root).'
    )
    will_fail: bool = Field(default=False, description="The preview found that the call cannot succeed as it stands.")
    impact: Impact | None = Field(
        default=None, description="run_cell, edit_cell, execute_command: what the call will touch."
    )
    origin: ToolOrigin | None = Field(default=None, description="An MCP or notebook-defined tool: where it comes from.")
    makes_stale: MakesStale | None = Field(  # issue 42
        default=None, description="run_cell, edit_cell: the cells the change would leave stale (absent when none)."
    )
    sandbox_reason: str | None = Field(  # issue 37
        default=None, description="explore, execute_command: why this step is asked rather than run in the sandbox."
    )
    always: str | None = Field(
        default=None,
        description="An outside agent's request that offers to be always allowed: its kind (edit, execute, ...); "
        "approved with always=true, that kind runs unasked in this thread until the user clears it.",
    )
    agent: str = "main"
    task_id: str | None = None


class ApprovalRequiredEvent(EventBase, ApprovalRequest):
    type: Literal["approval_required"]


class CellStartedEvent(EventBase):
    type: Literal["cell_started"]
    id: str = Field(description="The tool call (run_cell, or execute_command streaming its output).")
    code: str
    notebook_path: str | None
    kernel_id: str | None
    cell_id: str | None = Field(
        default=None,
        description="The nbformat id of the notebook cell: the new cell's (insert it with this id), or with `edit` "
        "the existing cell whose source `code` replaces.",
    )
    edit: bool = Field(default=False, description="edit_cell: replace the source and outputs of cell `cell_id`.")
    previous_source: str | None = Field(
        default=None,
        max_length=MAX_PREVIOUS_SOURCE,
        description="With `edit`: the cell's source before the edit (absent when it was longer than the bound).",
    )
    waiting_for_kernel: bool = Field(
        default=False,
        description="The kernel is busy with another cell and this one waits (already sent to it when "
        "kernel_msg_id is present); a second cell_started with false follows when it starts.",
    )
    provenance: Provenance | None = Field(
        default=None, description="Where the cell came from; the panel keeps it in the cell's metadata as `cellwright`."
    )
    kernel_msg_id: str | None = Field(
        default=None,
        description="The msg_id of the cell's execute_request (once it is sent): after a server restart, the cell's "
        "messages are told by it from the kernel's others (issue 38).",
    )


class CellOutputEvent(EventBase):
    type: Literal["cell_output"]
    seq: int | None = Field(default=None, description="Absent on a live_only output: it is not stored.")  # type: ignore[assignment]
    id: str
    output: NbOutput
    live_only: bool = Field(
        default=False, description="Beyond what the server stores for a cell: streamed to live readers only, no `id:`."
    )
    overflow_summary: bool = Field(
        default=False,
        description='Stored at the end of a cell that overflowed: "[... N lines omitted ...]" and the tail.',
    )


class CellFinishedEvent(EventBase):
    type: Literal["cell_finished"]
    id: str
    status: CellStatus
    execution_count: int | None
    duration_ms: int


class CellProgressEvent(EventBase):
    """Where a running cell stands (issue 38), read from its `\\r`-updated text bars (tqdm) and its
    ipywidgets progress bars; coalesced (at most two a second, then one per 5 s after a minute)."""

    type: Literal["cell_progress"]
    tool_call_id: str
    elapsed_s: float = Field(description="Seconds since the cell started.")
    text: str = Field(description="The cell's last output lines (bounded), the progress bar's line last.")
    percent: float | None = Field(default=None, description="0-100, when a bar says it.")
    eta_s: float | None = Field(default=None, description="Seconds left, when a bar says it.")


class ToolResultEvent(EventBase):
    type: Literal["tool_result"]
    id: str
    name: str
    status: ToolStatus
    summary: str = Field(description="What the model was told, shortened for display.")
    stopped: bool = Field(default=False, description="The user's Stop ended the call.")
    # issue 37: explore's (and a sandboxed command's) result
    sandboxed: bool | None = Field(default=None, description="It ran in the sandbox, unasked.")
    blocked: list[str] | None = Field(default=None, description='What the sandbox stopped, e.g. "network blocked".')
    outputs: list[JsonObject] | None = Field(
        default=None,
        description="explore's outputs (nbformat v4, bounded): shown as the step's scratchpad, not a cell.",
    )


class TodosEvent(EventBase):
    type: Literal["todos"]
    todos: list[Todo]


class AgentSwitchEvent(EventBase):
    type: Literal["agent_switch"]
    from_: str = Field(alias="from")
    to: str
    task: str


class FinalEvent(EventBase):
    type: Literal["final"]
    answer: str = Field(description="Markdown.")
    next_items: list[NextItem]


class ErrorEvent(EventBase):
    type: Literal["error"]
    kind: EventErrorKind = Field(
        description="llm_retrying (retryable), internal, kernel_unresponsive, agent_process (an ACP agent's "
        "process died, hung or broke the protocol), or an LLMErrorKind."
    )
    message: str
    retryable: bool
    kernel_id: str | None = Field(default=None, description="kernel_unresponsive: the kernel to restart.")


class UsageEvent(EventBase):
    """After each model call: what it used, the run's and the thread's totals, and the context meter."""

    type: Literal["usage"]
    call: Usage
    run: Usage
    thread: Usage
    context_tokens: int = Field(description="The prompt of this call, in tokens: how full the context is.")
    context_budget: int = Field(
        description="The history budget (context_token_budget); beyond it older turns are summarised."
    )
    summarized: bool = Field(default=False, description="Older turns were summarised to fit this call.")
    request: SentSummary | None = Field(
        default=None, description="What this call's request sent (absent when requests are not recorded)."
    )


class RunFinishedEvent(EventBase):
    type: Literal["run_finished"]
    status: RunStatus
    usage: Usage | None = Field(
        default=None, description="The run's totals so far (absent when no model call was made)."
    )


class StepUndoneEvent(EventBase, UndoResult):
    """The user undid step `id` (POST threads/{id}/undo/{tool_call_id}): its variables are back."""

    type: Literal["step_undone"]
    id: str = Field(description="The tool call that was undone.")


class RewoundEvent(EventBase, RewindResult):
    """The user went back to an earlier step (POST threads/{id}/rewind): the panel removes the cells
    of `cells_removed` (tool call ids) and shows the branch."""

    type: Literal["rewound"]


class RewindUndoneEvent(EventBase, RewindUndone):
    """The last rewind was undone: the thread continues on the branch it had left."""

    type: Literal["rewind_undone"]


class ForkedEvent(EventBase):
    """The end of the log a thread made by POST fork ("try again from here") starts with: the events
    before it are the other thread's, copied up to just before step `from_tool_call_id`; that
    thread is unchanged, and this one's next message continues from there."""

    type: Literal["forked"]
    forked_from: str = Field(description="The thread this one was forked from.")
    from_tool_call_id: str = Field(description="The step the new thread goes back to just before.")
    title: str = Field(description="The title of the thread it was forked from, when it was forked.")


class CaughtUpEvent(WireModel):
    """Sent once after the replayed backlog, before live events; not stored, no `id:` line."""

    type: Literal["caught_up"]
    seq: int = Field(description="The last replayed seq.")
    thread_id: str


THREAD_EVENTS: tuple[type[EventBase], ...] = (
    RunStartedEvent,
    TokenEvent,
    ToolCallEvent,
    ApprovalRequiredEvent,
    CellStartedEvent,
    CellOutputEvent,
    CellFinishedEvent,
    CellProgressEvent,
    ToolResultEvent,
    TodosEvent,
    AgentSwitchEvent,
    FinalEvent,
    ErrorEvent,
    UsageEvent,
    RunFinishedEvent,
    StepUndoneEvent,
    RewoundEvent,
    RewindUndoneEvent,
    ForkedEvent,
)
_EVENT_MODELS: tuple[type[WireModel], ...] = (*THREAD_EVENTS, CaughtUpEvent)
MODEL_OF_TYPE: dict[str, type[WireModel]] = {
    get_args(model.model_fields["type"].annotation)[0]: model for model in _EVENT_MODELS
}
EVENT_TYPES: tuple[str, ...] = tuple(type_ for type_, model in MODEL_OF_TYPE.items() if model in THREAD_EVENTS)
EventType = Literal[
    "run_started",
    "token",
    "tool_call",
    "approval_required",
    "cell_started",
    "cell_output",
    "cell_finished",
    "cell_progress",
    "tool_result",
    "todos",
    "agent_switch",
    "final",
    "error",
    "usage",
    "run_finished",
    "step_undone",
    "rewound",
    "rewind_undone",
    "forked",
    "caught_up",
]

# An event of a thread's log (what the agent emits), a union on `type`.
CellwrightEvent = TypeAliasType(
    "CellwrightEvent",
    Annotated[
        RunStartedEvent
        | TokenEvent
        | ToolCallEvent
        | ApprovalRequiredEvent
        | CellStartedEvent
        | CellOutputEvent
        | CellFinishedEvent
        | CellProgressEvent
        | ToolResultEvent
        | TodosEvent
        | AgentSwitchEvent
        | FinalEvent
        | ErrorEvent
        | UsageEvent
        | RunFinishedEvent
        | StepUndoneEvent
        | RewoundEvent
        | RewindUndoneEvent
        | ForkedEvent,
        Field(discriminator="type"),
    ],
)
# What `GET threads/{id}/events` sends: the thread's events, and the end-of-backlog marker.
StreamEvent = TypeAliasType("StreamEvent", Annotated[CellwrightEvent | CaughtUpEvent, Field(discriminator="type")])
STREAM_ADAPTER: TypeAdapter[StreamEvent] = TypeAdapter(StreamEvent)

# Placeholders for what the log and the run's sink stamp later, so an emitted body validates alone.
_STAMPS = {"seq": 0, "thread_id": "", "run_id": "", "agent": "main"}


def make_event(type_: EventType, **fields: object) -> JsonObject:
    """An event body as the agent emits it (the plain dict the log stores), checked against the
    model of `type_`: an unknown field or a wrong type raises pydantic's ValidationError."""
    model = MODEL_OF_TYPE.get(type_)
    if model is None:
        raise ValueError(f"unknown event type {type_!r}")
    event = {"type": type_, **fields}
    stamps = {name: value for name, value in _STAMPS.items() if name in model.model_fields}
    model.model_validate({**stamps, **event})
    return event


def validate_event(event: Mapping[str, object]) -> StreamEvent:
    """A stored or streamed event (stamps included) as its model; raises when it breaks the contract."""
    return STREAM_ADAPTER.validate_python(event)
