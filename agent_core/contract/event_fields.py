"""Each event's fields as a TypedDict, and `make_event` overloaded per event type: mypy checks
every emitter's fields against the contract. Written from agent_core/contract/events.py by
scripts/generate_contract.py (do not edit; tests/test_contract.py fails when it is stale)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal, overload

from typing_extensions import NotRequired, TypedDict, Unpack

from agent_core.contract import events
from agent_core.contract.choices import Autonomy, CellStatus, EventErrorKind, Mode, RunStatus, ToolStatus


class RunStartedFields(TypedDict):
    task_id: NotRequired[str | None]
    mode: Mode
    autonomy: NotRequired[Autonomy]
    message: str
    mentions: NotRequired[Sequence[Mapping[str, object]] | None]


class TokenFields(TypedDict):
    task_id: NotRequired[str | None]
    text: str
    live_only: NotRequired[bool]
    stored_as: NotRequired[int | None]


class ToolCallFields(TypedDict):
    task_id: NotRequired[str | None]
    id: str
    name: str
    args: Mapping[str, object]
    needs_approval: bool


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
    sandbox_reason: NotRequired[str | None]
    task_id: NotRequired[str | None]


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


class CellOutputFields(TypedDict):
    task_id: NotRequired[str | None]
    id: str
    output: Mapping[str, object]
    live_only: NotRequired[bool]
    overflow_summary: NotRequired[bool]


class CellFinishedFields(TypedDict):
    task_id: NotRequired[str | None]
    id: str
    status: CellStatus
    execution_count: int | None
    duration_ms: int


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


class TodosFields(TypedDict):
    task_id: NotRequired[str | None]
    todos: Sequence[Mapping[str, object]]


AgentSwitchFields = TypedDict(
    "AgentSwitchFields", {"task_id": NotRequired[str | None], "from": str, "to": str, "task": str}
)


class FinalFields(TypedDict):
    task_id: NotRequired[str | None]
    answer: str
    next_items: Sequence[Mapping[str, object]]


class ErrorFields(TypedDict):
    task_id: NotRequired[str | None]
    kind: EventErrorKind
    message: str
    retryable: bool
    kernel_id: NotRequired[str | None]


class UsageFields(TypedDict):
    task_id: NotRequired[str | None]
    call: Mapping[str, object]
    run: Mapping[str, object]
    thread: Mapping[str, object]
    context_tokens: int
    context_budget: int
    summarized: NotRequired[bool]
    request: NotRequired[Mapping[str, object] | None]


class RunFinishedFields(TypedDict):
    task_id: NotRequired[str | None]
    status: RunStatus
    usage: NotRequired[Mapping[str, object] | None]


class StepUndoneFields(TypedDict):
    restored: Sequence[str]
    removed: Sequence[str]
    not_undone: Sequence[str]
    cell_id: NotRequired[str | None]
    edit: NotRequired[bool]
    task_id: NotRequired[str | None]
    id: str


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


class RewindUndoneFields(TypedDict):
    branch: str
    undid: str
    files_restored: Sequence[str]
    not_restored: Sequence[str]
    task_id: NotRequired[str | None]


class ForkedFields(TypedDict):
    task_id: NotRequired[str | None]
    forked_from: str
    from_tool_call_id: str
    title: str


class CaughtUpFields(TypedDict):
    seq: int
    thread_id: str


@overload
def make_event(type_: Literal["run_started"], **fields: Unpack[RunStartedFields]) -> dict[str, object]: ...


@overload
def make_event(type_: Literal["token"], **fields: Unpack[TokenFields]) -> dict[str, object]: ...


@overload
def make_event(type_: Literal["tool_call"], **fields: Unpack[ToolCallFields]) -> dict[str, object]: ...


@overload
def make_event(type_: Literal["approval_required"], **fields: Unpack[ApprovalRequiredFields]) -> dict[str, object]: ...


@overload
def make_event(type_: Literal["cell_started"], **fields: Unpack[CellStartedFields]) -> dict[str, object]: ...


@overload
def make_event(type_: Literal["cell_output"], **fields: Unpack[CellOutputFields]) -> dict[str, object]: ...


@overload
def make_event(type_: Literal["cell_finished"], **fields: Unpack[CellFinishedFields]) -> dict[str, object]: ...


@overload
def make_event(type_: Literal["tool_result"], **fields: Unpack[ToolResultFields]) -> dict[str, object]: ...


@overload
def make_event(type_: Literal["todos"], **fields: Unpack[TodosFields]) -> dict[str, object]: ...


@overload
def make_event(type_: Literal["agent_switch"], **fields: Unpack[AgentSwitchFields]) -> dict[str, object]: ...


@overload
def make_event(type_: Literal["final"], **fields: Unpack[FinalFields]) -> dict[str, object]: ...


@overload
def make_event(type_: Literal["error"], **fields: Unpack[ErrorFields]) -> dict[str, object]: ...


@overload
def make_event(type_: Literal["usage"], **fields: Unpack[UsageFields]) -> dict[str, object]: ...


@overload
def make_event(type_: Literal["run_finished"], **fields: Unpack[RunFinishedFields]) -> dict[str, object]: ...


@overload
def make_event(type_: Literal["step_undone"], **fields: Unpack[StepUndoneFields]) -> dict[str, object]: ...


@overload
def make_event(type_: Literal["rewound"], **fields: Unpack[RewoundFields]) -> dict[str, object]: ...


@overload
def make_event(type_: Literal["rewind_undone"], **fields: Unpack[RewindUndoneFields]) -> dict[str, object]: ...


@overload
def make_event(type_: Literal["forked"], **fields: Unpack[ForkedFields]) -> dict[str, object]: ...


@overload
def make_event(type_: Literal["caught_up"], **fields: Unpack[CaughtUpFields]) -> dict[str, object]: ...


def make_event(type_: events.EventType, **fields: object) -> dict[str, object]:
    """An event body as the agent emits it, checked against the model of `type_` (events.make_event)."""
    return events.make_event(type_, **fields)
