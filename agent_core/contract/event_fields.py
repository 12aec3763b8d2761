"""Each event's fields as a TypedDict (`...Fields`, what its emitter passes), each event as a
TypedDict (`...EventDict`: the fields, `type` and the stamps, the plain dict the log stores), the
union `EventDict` of a thread's events, and `make_event` overloaded per event type: mypy checks every
emitter's fields against the contract and every event handed on. Written from
agent_core/contract/events.py by scripts/generate_contract.py (do not edit; tests/test_contract.py
fails when it is stale)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal, TypeAlias, overload

from typing_extensions import NotRequired, TypedDict, Unpack

from agent_core.contract import events
from agent_core.contract.choices import Autonomy, CellStatus, EventErrorKind, Mode, RunStatus, ToolStatus


class EventStamps(TypedDict, total=False):
    """What the log (`seq`, `thread_id`) and the run's event sink (`run_id`, `agent`) stamp on an
    event: absent from what an emitter makes, present on what the log stores."""

    seq: int
    thread_id: str
    run_id: str
    agent: str


class RunStartedFields(TypedDict):
    task_id: NotRequired[str | None]
    mode: Mode
    autonomy: NotRequired[Autonomy]
    message: str
    mentions: NotRequired[Sequence[Mapping[str, object]] | None]


class RunStartedEventDict(EventStamps, RunStartedFields):
    type: Literal["run_started"]


class TokenFields(TypedDict):
    task_id: NotRequired[str | None]
    text: str
    live_only: NotRequired[bool]
    stored_as: NotRequired[int | None]


class TokenEventDict(EventStamps, TokenFields):
    type: Literal["token"]


class ToolCallFields(TypedDict):
    task_id: NotRequired[str | None]
    id: str
    name: str
    args: Mapping[str, object]
    needs_approval: bool


class ToolCallEventDict(EventStamps, ToolCallFields):
    type: Literal["tool_call"]


class ApprovalRequiredFields(TypedDict):
    id: str
    name: str
    args: Mapping[str, object]
    description: str
    diagnostics: NotRequired[Sequence[Mapping[str, object]]]
    diff: NotRequired[str | None]
    command: NotRequired[str | None]
    cwd: NotRequired[str | None]
    will_fail: NotRequired[bool]
    impact: NotRequired[Mapping[str, object] | None]
    origin: NotRequired[Mapping[str, object] | None]
    makes_stale: NotRequired[Mapping[str, object] | None]
    sandbox_reason: NotRequired[str | None]
    always: NotRequired[str | None]
    task_id: NotRequired[str | None]


class ApprovalRequiredEventDict(EventStamps, ApprovalRequiredFields):
    type: Literal["approval_required"]


class CellStartedFields(TypedDict):
    task_id: NotRequired[str | None]
    id: str
    code: str
    notebook_path: str | None
    kernel_id: str | None
    cell_id: NotRequired[str | None]
    edit: NotRequired[bool]
    previous_source: NotRequired[str | None]
    waiting_for_kernel: NotRequired[bool]
    provenance: NotRequired[Mapping[str, object] | None]
    kernel_msg_id: NotRequired[str | None]


class CellStartedEventDict(EventStamps, CellStartedFields):
    type: Literal["cell_started"]


class CellOutputFields(TypedDict):
    task_id: NotRequired[str | None]
    id: str
    output: Mapping[str, object]
    live_only: NotRequired[bool]
    overflow_summary: NotRequired[bool]


class CellOutputEventDict(EventStamps, CellOutputFields):
    type: Literal["cell_output"]


class CellFinishedFields(TypedDict):
    task_id: NotRequired[str | None]
    id: str
    status: CellStatus
    execution_count: int | None
    duration_ms: int


class CellFinishedEventDict(EventStamps, CellFinishedFields):
    type: Literal["cell_finished"]


class CellProgressFields(TypedDict):
    task_id: NotRequired[str | None]
    tool_call_id: str
    elapsed_s: float
    text: str
    percent: NotRequired[float | None]
    eta_s: NotRequired[float | None]


class CellProgressEventDict(EventStamps, CellProgressFields):
    type: Literal["cell_progress"]


class ToolResultFields(TypedDict):
    task_id: NotRequired[str | None]
    id: str
    name: str
    status: ToolStatus
    summary: str
    stopped: NotRequired[bool]
    sandboxed: NotRequired[bool | None]
    blocked: NotRequired[Sequence[str] | None]
    outputs: NotRequired[Sequence[Mapping[str, object]] | None]


class ToolResultEventDict(EventStamps, ToolResultFields):
    type: Literal["tool_result"]


class TodosFields(TypedDict):
    task_id: NotRequired[str | None]
    todos: Sequence[Mapping[str, object]]


class TodosEventDict(EventStamps, TodosFields):
    type: Literal["todos"]


AgentSwitchFields = TypedDict(
    "AgentSwitchFields", {"task_id": NotRequired[str | None], "from": str, "to": str, "task": str}
)


class AgentSwitchEventDict(EventStamps, AgentSwitchFields):
    type: Literal["agent_switch"]


class FinalFields(TypedDict):
    task_id: NotRequired[str | None]
    answer: str
    next_items: Sequence[Mapping[str, object]]


class FinalEventDict(EventStamps, FinalFields):
    type: Literal["final"]


class ErrorFields(TypedDict):
    task_id: NotRequired[str | None]
    kind: EventErrorKind
    message: str
    retryable: bool
    kernel_id: NotRequired[str | None]


class ErrorEventDict(EventStamps, ErrorFields):
    type: Literal["error"]


class UsageFields(TypedDict):
    task_id: NotRequired[str | None]
    call: Mapping[str, object]
    run: Mapping[str, object]
    thread: Mapping[str, object]
    context_tokens: int
    context_budget: int
    summarized: NotRequired[bool]
    request: NotRequired[Mapping[str, object] | None]


class UsageEventDict(EventStamps, UsageFields):
    type: Literal["usage"]


class RunFinishedFields(TypedDict):
    task_id: NotRequired[str | None]
    status: RunStatus
    usage: NotRequired[Mapping[str, object] | None]


class RunFinishedEventDict(EventStamps, RunFinishedFields):
    type: Literal["run_finished"]


class StepUndoneFields(TypedDict):
    restored: Sequence[str]
    removed: Sequence[str]
    not_undone: Sequence[str]
    cell_id: NotRequired[str | None]
    edit: NotRequired[bool]
    task_id: NotRequired[str | None]
    id: str


class StepUndoneEventDict(EventStamps, StepUndoneFields):
    type: Literal["step_undone"]


class RewoundFields(TypedDict):
    dry_run: bool
    steps: Sequence[Mapping[str, object]]
    restored: Sequence[str]
    removed: Sequence[str]
    cells_removed: Sequence[str]
    files_reverted: Sequence[str]
    kernel_undone: NotRequired[Sequence[str]]
    file_diffs: NotRequired[Sequence[Mapping[str, object]]]
    not_reversible: Sequence[Mapping[str, object]]
    branch: str
    previous_branch: str
    task_id: NotRequired[str | None]


class RewoundEventDict(EventStamps, RewoundFields):
    type: Literal["rewound"]


class RewindUndoneFields(TypedDict):
    branch: str
    undid: str
    files_restored: Sequence[str]
    not_restored: Sequence[str]
    task_id: NotRequired[str | None]


class RewindUndoneEventDict(EventStamps, RewindUndoneFields):
    type: Literal["rewind_undone"]


class ForkedFields(TypedDict):
    task_id: NotRequired[str | None]
    forked_from: str
    from_tool_call_id: str
    title: str


class ForkedEventDict(EventStamps, ForkedFields):
    type: Literal["forked"]


class CaughtUpFields(TypedDict):
    seq: int
    thread_id: str


class CaughtUpEventDict(CaughtUpFields):
    type: Literal["caught_up"]


# An event of a thread's log, as a dict: narrow it on `type`. Code that only passes events on
# takes any of them; what the log reads back is a JsonObject (the stored JSON, not checked again).
EventDict: TypeAlias = (
    RunStartedEventDict
    | TokenEventDict
    | ToolCallEventDict
    | ApprovalRequiredEventDict
    | CellStartedEventDict
    | CellOutputEventDict
    | CellFinishedEventDict
    | CellProgressEventDict
    | ToolResultEventDict
    | TodosEventDict
    | AgentSwitchEventDict
    | FinalEventDict
    | ErrorEventDict
    | UsageEventDict
    | RunFinishedEventDict
    | StepUndoneEventDict
    | RewoundEventDict
    | RewindUndoneEventDict
    | ForkedEventDict
)


@overload
def make_event(type_: Literal["run_started"], **fields: Unpack[RunStartedFields]) -> RunStartedEventDict: ...


@overload
def make_event(type_: Literal["token"], **fields: Unpack[TokenFields]) -> TokenEventDict: ...


@overload
def make_event(type_: Literal["tool_call"], **fields: Unpack[ToolCallFields]) -> ToolCallEventDict: ...


@overload
def make_event(
    type_: Literal["approval_required"], **fields: Unpack[ApprovalRequiredFields]
) -> ApprovalRequiredEventDict: ...


@overload
def make_event(type_: Literal["cell_started"], **fields: Unpack[CellStartedFields]) -> CellStartedEventDict: ...


@overload
def make_event(type_: Literal["cell_output"], **fields: Unpack[CellOutputFields]) -> CellOutputEventDict: ...


@overload
def make_event(type_: Literal["cell_finished"], **fields: Unpack[CellFinishedFields]) -> CellFinishedEventDict: ...


@overload
def make_event(type_: Literal["cell_progress"], **fields: Unpack[CellProgressFields]) -> CellProgressEventDict: ...


@overload
def make_event(type_: Literal["tool_result"], **fields: Unpack[ToolResultFields]) -> ToolResultEventDict: ...


@overload
def make_event(type_: Literal["todos"], **fields: Unpack[TodosFields]) -> TodosEventDict: ...


@overload
def make_event(type_: Literal["agent_switch"], **fields: Unpack[AgentSwitchFields]) -> AgentSwitchEventDict: ...


@overload
def make_event(type_: Literal["final"], **fields: Unpack[FinalFields]) -> FinalEventDict: ...


@overload
def make_event(type_: Literal["error"], **fields: Unpack[ErrorFields]) -> ErrorEventDict: ...


@overload
def make_event(type_: Literal["usage"], **fields: Unpack[UsageFields]) -> UsageEventDict: ...


@overload
def make_event(type_: Literal["run_finished"], **fields: Unpack[RunFinishedFields]) -> RunFinishedEventDict: ...


@overload
def make_event(type_: Literal["step_undone"], **fields: Unpack[StepUndoneFields]) -> StepUndoneEventDict: ...


@overload
def make_event(type_: Literal["rewound"], **fields: Unpack[RewoundFields]) -> RewoundEventDict: ...


@overload
def make_event(type_: Literal["rewind_undone"], **fields: Unpack[RewindUndoneFields]) -> RewindUndoneEventDict: ...


@overload
def make_event(type_: Literal["forked"], **fields: Unpack[ForkedFields]) -> ForkedEventDict: ...


@overload
def make_event(type_: Literal["caught_up"], **fields: Unpack[CaughtUpFields]) -> CaughtUpEventDict: ...


def make_event(type_: events.EventType, **fields: object) -> Mapping[str, object]:
    """An event body as the agent emits it, checked against the model of `type_` (events.make_event)."""
    return events.make_event(type_, **fields)
