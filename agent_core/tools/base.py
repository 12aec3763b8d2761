"""What a tool is: its argument model, its approval policy, its preview and its code, plus what it may
touch at run time."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypedDict, TypeVar, runtime_checkable

from agent_core.config.agent_settings import AgentSettings
from agent_core.contract import CellStatus, ToolStatus, make_event
from agent_core.json_types import JsonObject
from agent_core.messages import Preimage, ToolSchema
from agent_core.tools.arguments import ToolArgs, llm_schema, validated
from agent_core.workspace import Workspace

if TYPE_CHECKING:  # the graph imports the tools: its RunContext is only named here
    from agent_core.loop.run_context import RunContext

Emit = Callable[[dict[str, Any]], None]


class ToolInputError(Exception):
    """Bad arguments the model can correct: goes back to it as an error result."""


@dataclass(frozen=True)
class CellRun:
    status: CellStatus
    outputs: list[dict[str, Any]]
    execution_count: int | None = None
    duration_ms: int = 0


def cell_finished(call_id: str, status: CellStatus, count: int | None, started: float) -> dict[str, Any]:
    """The `cell_finished` event of a cell that started at `started` (time.monotonic())."""
    duration = int((time.monotonic() - started) * 1000)
    return make_event("cell_finished", id=call_id, status=status, execution_count=count, duration_ms=duration)


@dataclass(frozen=True)
class CellPlacement:
    """Where a cell's code lands in the notebook: a new cell with this nbformat id, or (edit) the
    existing cell with it, whose source the code replaces."""

    cell_id: str
    edit: bool = False
    provenance: JsonObject | None = None  # contract.review.Provenance: the panel keeps it in the cell's metadata
    previous_source: str | None = None  # edit: the cell's source before the edit (GET threads/{id}/diff shows it)


class ToolEnvironment(Protocol):
    """Where side effects happen: the server's kernels, or the kernel the `%agent` magic runs in."""

    edits_cells: bool  # its cells land in the notebook by id (the panel writes them): edit_cell works

    @property
    def root_dir(self) -> Path:
        """The folder file and shell tools are confined to (the server's root directory)."""
        ...

    @property
    def workspace(self) -> Workspace | None:
        """What file, search and shell tools may touch under root_dir: the server's hidden-file rule
        and the folders that hold secrets. None means the safe default for root_dir (no hidden
        files; Cellwright's data folder and Jupyter's runtime folder denied): see
        agent_core.workspace.workspace_of, through which every tool reads it."""
        ...

    async def run_cell(
        self, call_id: str, code: str, emit: Emit, placement: CellPlacement | None = None
    ) -> CellRun: ...

    async def restart_kernel(self) -> str:
        """Restart the notebook's kernel; returns what the model is told. ToolInputError when it cannot."""
        ...

    async def kernel_identity(self) -> str | None:
        """Names the kernel process that runs cells now (a restart changes it); None when unknown."""
        ...

    async def evaluate_json(self, expression: str) -> Any:
        """Evaluate `expression` (which must give a JSON string) in the notebook's kernel without a
        trace: no history, no execution count, no new names. Raises ToolInputError without a kernel."""
        ...


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

    @property
    def display_summary(self) -> str:
        text = self.summary or self.content
        return text if len(text) <= 300 else text[:297] + "..."


# Abilities some environments have and others lack: a tool asks with isinstance, never getattr.


@runtime_checkable
class HasKernelProcess(Protocol):
    async def kernel_pid(self) -> int | None:
        """The kernel's process id (its usage is read from the process tree); None when unknown."""
        ...


@runtime_checkable
class KnowsKernelBusy(Protocol):
    async def kernel_busy(self) -> bool:
        """Whether the kernel is running a cell now (a probe would wait behind it)."""
        ...


@runtime_checkable
class HasKernelHistory(Protocol):
    async def kernel_history(self, n: int) -> list[tuple[int, str]]:
        """The kernel's last `n` inputs of its current session: (execution count, source), oldest first."""
        ...


@runtime_checkable
class HasSharedNotebook(Protocol):
    async def shared_cells(self) -> list[dict[str, Any]] | None:
        """The notebook's cells as its shared document holds them now (real-time collaboration, where
        the server writes the agent's cells): what every browser shows, fresher than the saved file
        and than the cells a browser sent. None when the notebook has no shared document."""
        ...


class ShadowKernel(Protocol):
    """A fresh kernel of its own, apart from the user's (verify_notebook): runs code, nothing else."""

    kernel_name: str

    async def run(self, code: str, timeout: float) -> CellRun:
        """Run `code`; after `timeout` seconds the cell ends as an error (the kernel is interrupted)."""
        ...


@runtime_checkable
class HasShadowKernel(Protocol):
    def shadow_kernel(self, notebook_path: str, kernel_name: str | None) -> AbstractAsyncContextManager[ShadowKernel]:
        """A new kernel of `kernel_name` (None: the default) working in the notebook's folder, shut
        down when the context ends; never the notebook's own kernel."""
        ...


@dataclass(frozen=True)
class ToolContext:
    call_id: str
    env: ToolEnvironment
    emit: Emit
    settings: AgentSettings
    run: RunContext | None = None  # the graph's, for tools that run agents (task)
    thread_id: str = ""
    notebook_path: str = ""  # the thread's notebook (root-relative); "" when it has none
    notebook_cells: list[dict[str, Any]] | None = None  # as the browser sent them; None: read the saved file
    decision: str = "auto_approved"  # how the call came to run: "approved", "edited" (by the user) or "auto_approved"
    proposed_args: JsonObject | None = None  # "edited": the arguments the agent proposed


ArgsT = TypeVar("ArgsT", bound=ToolArgs)


def will_fail(tool: str, problem: Exception | str, **card: object) -> JsonObject:
    """Approval-card fields for a call that cannot succeed as it stands: the panel marks the card
    from `will_fail`, and the description says why."""
    return {**card, "description": f"{tool} will fail: {problem}", "will_fail": True}


@dataclass(frozen=True)
class ToolSpec(Generic[ArgsT]):
    """A tool: its argument model, its approval policy, its approval-card preview and its code."""

    name: str
    description: str
    args: type[ArgsT]  # validates the call; its JSON Schema is what the model is shown
    action: Callable[[ArgsT, ToolContext], Awaitable[ToolOutcome]]
    needs_approval: bool = False
    read_only: bool = False
    describe: Callable[[ArgsT], str] | None = None  # one line for the approval card
    # Extra approval-card fields ({"diagnostics": [...]} or {"diff": "..."}); raises ToolInputError when
    # the call would fail. Must have no side effects: the tools node re-runs it on resume.
    card: Callable[[ArgsT, ToolContext], Awaitable[JsonObject]] | None = None
    recorded: bool = True  # kept in the tool ledger, so a call id runs at most once
    # Raises ToolInputError when the call cannot apply at all (its target is gone): the model is
    # told before the user is asked. Read-only, like `card`.
    check: Callable[[ArgsT, ToolContext], Awaitable[None]] | None = None

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

    async def preview(self, args: Mapping[str, object] | ArgsT, ctx: ToolContext) -> JsonObject:
        if self.card is None:
            return {}
        try:
            return await self.card(self.parse(args), ctx)
        except ToolInputError as exc:
            return will_fail(self.name, exc)
