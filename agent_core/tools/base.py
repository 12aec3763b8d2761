"""What a tool is: its argument model, its approval policy, its preview and its code, and the context
a call runs in. What it may touch at run time is agent_core.environment's, re-exported here for the tools."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Generic, Literal, Protocol, TypedDict, TypeVar

from agent_core.config.agent_settings import AgentSettings
from agent_core.contract import ToolStatus, make_event
from agent_core.contract.event_fields import ToolResultEventDict
from agent_core.contract.notebook_cells import AgentCell
from agent_core.environment import (
    CellPlacement,
    CellRun,
    Emit,
    HasKernelHistory,
    HasKernelProcess,
    HasShadowKernel,
    HasSharedNotebook,
    KnowsKernelBusy,
    ShadowKernel,
    ToolEnvironment,
    ToolInputError,
    cell_finished,
)
from agent_core.json_types import JsonObject
from agent_core.messages import Preimage, ToolSchema
from agent_core.tools.arguments import ToolArgs, llm_schema, validated
from agent_core.undo.book import UndoBook

if TYPE_CHECKING:  # background.py builds on this module
    from agent_core.tools.background import BackgroundHost

# The agent cells of a notebook (root-relative path) in the record of the owner's threads, in the order
# they ran, with everything emitted so far (agent_core.loop.agent_cells).
AgentCellRecord = Callable[[str], Awaitable[Sequence[AgentCell]]]

__all__ = [  # what a tool may touch, from agent_core.environment, beside what a tool is
    "AgentCellRecord",
    "ArgsT",
    "CellPlacement",
    "CellRun",
    "Emit",
    "HasKernelHistory",
    "HasKernelProcess",
    "HasShadowKernel",
    "HasSharedNotebook",
    "KnowsKernelBusy",
    "RunHost",
    "ShadowKernel",
    "ToolContext",
    "ToolEnvironment",
    "ToolInputError",
    "ToolOutcome",
    "ToolResultExtras",
    "ToolSpec",
    "ToolStateUpdate",
    "CellEffect",
    "Touches",
    "UndoneBy",
    "cell_finished",
    "will_fail",
]


class ToolResultExtras(TypedDict, total=False):
    """Fields of a call's `tool_result` event beyond the summary, for the panel (contract.events)."""

    sandboxed: bool  # it ran in the sandbox, unasked (explore, a read-only shell command)
    blocked: list[str]  # what the sandbox stopped ("network blocked", "write blocked: out.csv")
    outputs: list[JsonObject]  # explore's outputs as nbformat dicts: it adds no cell to show them in


class ToolStateUpdate(TypedDict, total=False):
    """The graph state fields a tool may set (agent_core.loop.state.AgentState says what they mean)."""

    todos: list[dict[str, str]]
    kernel_identity: str


@dataclass(frozen=True)
class ToolOutcome:
    status: ToolStatus
    content: str  # what the model is told
    summary: str = ""  # what the panel shows; defaults to a shortened content
    state: ToolStateUpdate = field(default_factory=ToolStateUpdate)  # graph state updates (e.g. todos)
    ends_run: bool = False
    images: tuple[dict[str, str], ...] = ()  # {"mime", "data" (base64)}: for vision models (agent_core.vision)
    preimage: Preimage | None = None  # a written file as it was before (agent_core.undo.preimages)
    event: ToolResultExtras = field(default_factory=ToolResultExtras)

    @property
    def display_summary(self) -> str:
        text = self.summary or self.content
        return text if len(text) <= 300 else text[:297] + "..."

    def result_event(self, call_id: str, name: str, stopped: bool = False) -> ToolResultEventDict:
        """The call's `tool_result` event (`stopped`: the user's Stop ended it)."""
        return make_event(
            "tool_result",
            id=call_id,
            name=name,
            status=self.status,
            summary=self.display_summary,
            stopped=stopped,
            **self.event,
        )


class RunPolicyView(Protocol):
    @property
    def autonomy(self) -> str: ...


class RunHost(Protocol):
    """What a tool may ask of the agent loop's run that called it (agent_core.loop.run_context.RunContext):
    the book of the steps an undo may restore, and a sub-agent for `task`. The loop is a floor above."""

    @property
    def undo(self) -> UndoBook: ...

    @property
    def policy(self) -> RunPolicyView: ...  # the run's mode: explore runs nothing unsandboxed in Ask

    async def delegate(self, name: str, description: str, call_id: str) -> ToolOutcome: ...

    @property
    def background(self) -> BackgroundHost | None: ...  # issue 38: who follows a cell that outlives its run


@dataclass(frozen=True)
class ToolContext:
    call_id: str
    env: ToolEnvironment
    emit: Emit
    settings: AgentSettings
    run: RunHost | None = None  # the graph's, for tools that run agents (task) and undo's book
    thread_id: str = ""
    notebook_path: str = ""  # the thread's notebook (root-relative); "" when it has none
    notebook_cells: list[JsonObject] | None = None  # as the browser sent them; None: read the saved file
    # how the call came to run: "approved", "edited" (by the user), "auto_approved", or "sandboxed" (issue 37:
    # not asked because it runs in a sandbox: the tool must run it there)
    decision: str = "auto_approved"
    proposed_args: JsonObject | None = None  # "edited": the arguments the agent proposed
    # The thread record's agent cells, which the notebook may lack yet (agent_core.tools.notebook_view);
    # None: no record to read (the %agent magic's cells live in its own cell).
    agent_cells: AgentCellRecord | None = None


ArgsT = TypeVar("ArgsT", bound=ToolArgs)


def will_fail(tool: str, problem: Exception | str, **card: object) -> JsonObject:
    """Approval-card fields for a call that cannot succeed as it stands: the panel marks the card
    from `will_fail`, and the description says why."""
    return {**card, "description": f"{tool} will fail: {problem}", "will_fail": True}


# What a call can change: nothing (it reads, plans or answers), the notebook's kernel, files under the
# root, the notebook's cells, or something outside the server's reach (a shell, a database, a kernel
# of its own). Ask mode offers only the tools that touch nothing.
Touches = Literal["nothing", "kernel", "files", "notebook", "outside"]
# The notebook cell a call is: none, a new cell (a rewind removes it), or an existing cell it edits
# (a rewind gives it its source back).
CellEffect = Literal["none", "adds", "edits"]
# How an undo or a rewind puts back what a call changed: not at all, from the kernel snapshot taken
# before it ran (agent_core.undo.steps), or from the file's pre-image (agent_core.undo.preimages).
UndoneBy = Literal["none", "kernel_snapshot", "file_preimage"]


@dataclass(frozen=True)
class ToolSpec(Generic[ArgsT]):
    """A tool: its argument model, its approval policy, its approval-card preview and its code, and
    the facts about it that the rest of Cellwright reads from here and nowhere else (the modes,
    rewind and undo, the MCP endpoint's catalog). tests/test_tool_facts.py holds every tool to them."""

    name: str
    description: str
    args: type[ArgsT]  # validates the call; its JSON Schema is what the model is shown
    action: Callable[[ArgsT, ToolContext], Awaitable[ToolOutcome]]
    touches: Touches  # no default: a new tool says what it can change
    cell: CellEffect = "none"
    undone_by: UndoneBy = "none"
    rewind_leaves: str = ""  # what a rewind cannot take back of a call, told to the user ("": nothing)
    outside_agents: bool = False  # offered to outside agents by the MCP endpoint (jupyter_ext/mcp_endpoint.py)
    needs_approval: bool = False
    read_only: bool = False  # it only reads: after it, the model is reminded of its open todos
    describe: Callable[[ArgsT], str] | None = None  # one line for the approval card
    # Extra approval-card fields ({"diagnostics": [...]} or {"diff": "..."}); raises ToolInputError when
    # the call would fail. Must have no side effects: the tools node re-runs it on resume.
    card: Callable[[ArgsT, ToolContext], Awaitable[JsonObject]] | None = None
    recorded: bool = True  # kept in the tool ledger, so a call id runs at most once
    # Raises ToolInputError when the call cannot apply at all (its target is gone): the model is
    # told before the user is asked. Read-only, like `card`.
    check: Callable[[ArgsT, ToolContext], Awaitable[None]] | None = None
    # issue 37: a tool that can run sandboxed waives its approval per call: None when this call will
    # run in the sandbox (not asked), else why the user must approve it. Read-only, like `card`.
    sandboxed: Callable[[ArgsT, ToolContext], Awaitable[str | None]] | None = None

    @cached_property
    def parameters(self) -> JsonObject:
        return llm_schema(self.args)

    def openai_schema(self) -> ToolSchema:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }

    def check_args(self, args: object) -> str | None:
        """A message for the model when `args` do not fit the argument model, else None."""
        return validated(self.name, self.args, args)[1]

    def parse(self, args: Mapping[str, object] | ArgsT) -> ArgsT:
        """`args` as the argument model, or a ToolInputError telling the model what to fix."""
        if isinstance(args, self.args):
            return args
        parsed, problem = validated(self.name, self.args, args)
        if parsed is None:
            raise ToolInputError(problem)
        return parsed

    async def run(self, args: Mapping[str, object] | ArgsT, ctx: ToolContext) -> ToolOutcome:
        return await self.action(self.parse(args), ctx)

    def describe_call(self, args: Mapping[str, object] | ArgsT) -> str:
        if self.describe is not None:
            try:
                return self.describe(self.parse(args))
            except ToolInputError:
                pass
        return f"{self.name} wants to run"

    async def precheck(self, args: Mapping[str, object] | ArgsT, ctx: ToolContext) -> None:
        if self.check is not None:
            await self.check(self.parse(args), ctx)

    async def sandbox_waives(self, args: Mapping[str, object] | ArgsT, ctx: ToolContext) -> bool:
        """Whether this call runs sandboxed, so its approval is not asked (issue 37)."""
        if self.sandboxed is None:
            return False
        try:
            return await self.sandboxed(self.parse(args), ctx) is None
        except ToolInputError:
            return False

    async def preview(self, args: Mapping[str, object] | ArgsT, ctx: ToolContext) -> JsonObject:
        if self.card is None:
            return {}
        try:
            return await self.card(self.parse(args), ctx)
        except ToolInputError as exc:
            return will_fail(self.name, exc)
