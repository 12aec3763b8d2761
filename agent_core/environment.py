"""Where a tool's side effects happen, as the layers below the tools see it: the ToolEnvironment
protocol (the server's kernels, or the kernel the `%agent` magic runs in), the abilities some
environments have, a cell's run and placement, and the error a model can correct. The tools
(agent_core.tools.base re-exports these), the kernel probes, undo and verify all take it."""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from agent_core.contract import CellStatus, EventDict, make_event
from agent_core.contract.event_fields import CellFinishedEventDict
from agent_core.json_types import JsonObject
from agent_core.workspace import Workspace

Emit = Callable[[EventDict], None]  # where a tool's events go: the run's event sink


class ToolInputError(Exception):
    """Bad arguments the model can correct: goes back to it as an error result."""


@dataclass(frozen=True)
class CellRun:
    status: CellStatus
    outputs: list[JsonObject]
    execution_count: int | None = None
    duration_ms: int = 0


def cell_finished(call_id: str, status: CellStatus, count: int | None, started: float) -> CellFinishedEventDict:
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


# Abilities some environments have and others lack: a tool asks with isinstance, never getattr.


@runtime_checkable
class HasKernelProcess(Protocol):
    async def kernel_pid(self) -> int | None:
        """The kernel's process id (its usage is read from the process tree); None when unknown."""
        ...


@runtime_checkable
class AsksAhead(Protocol):
    def ask_ahead(self, expressions: list[str]) -> None:
        """Send these evaluations to the kernel now, before anyone awaits them: evaluate_json of one of
        them in the next moments takes that answer instead of asking again (a run's first probes
        leave while its request is still being answered)."""
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
    async def shared_cells(self) -> list[JsonObject] | None:
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
