"""What a tool is: its schema, its approval policy and its code, plus what it may touch at run time."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable, Protocol

from ..events import CellStatus, ToolStatus
from ..settings import AgentSettings
from ..workspace import Workspace

Emit = Callable[[dict[str, Any]], None]
JSON_TYPES: dict[str, type | tuple[type, ...]] = {
    "string": str,
    "array": list,
    "object": dict,
    "integer": int,
    "number": (int, float),
    "boolean": bool,
}


class ToolInputError(Exception):
    """Bad arguments the model can correct: goes back to it as an error result."""


@dataclass(frozen=True)
class CellRun:
    status: CellStatus
    outputs: list[dict[str, Any]]
    execution_count: int | None = None
    duration_ms: int = 0


class ToolEnvironment(Protocol):
    """Where side effects happen: the server's kernels, or the kernel the `%agent` magic runs in."""

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

    async def run_cell(self, call_id: str, code: str, emit: Emit) -> CellRun: ...

    async def evaluate_json(self, expression: str) -> Any:
        """Evaluate `expression` (which must give a JSON string) in the notebook's kernel without a
        trace: no history, no execution count, no new names. Raises ToolInputError without a kernel."""
        ...


@dataclass(frozen=True)
class ToolOutcome:
    status: ToolStatus
    content: str  # what the model is told
    summary: str = ""  # what the panel shows; defaults to a shortened content
    state: dict[str, Any] = field(default_factory=dict)  # graph state updates (e.g. todos)
    ends_run: bool = False

    @property
    def display_summary(self) -> str:
        text = self.summary or self.content
        return text if len(text) <= 300 else text[:297] + "..."


@dataclass(frozen=True)
class ToolContext:
    call_id: str
    env: ToolEnvironment
    emit: Emit
    settings: AgentSettings
    run: Any = None  # the graph's RunContext, for tools that run agents (task)


ToolRun = Callable[[dict[str, Any], ToolContext], Awaitable[ToolOutcome]]


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict[str, Any]  # JSON schema of the arguments
    run: ToolRun
    needs_approval: bool = False
    read_only: bool = False
    describe: Callable[[dict[str, Any]], str] | None = None  # one line for the approval card
    # Extra approval-card fields ({"diagnostics": [...]} or {"diff": "..."}); must have no side effects,
    # as the tools node re-runs it when the user's decision resumes the run.
    preview: Callable[[dict[str, Any], "ToolContext"], Awaitable[dict[str, Any]]] | None = None
    recorded: bool = True  # kept in the tool ledger, so a call id runs at most once

    def openai_schema(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }

    def describe_call(self, args: dict[str, Any]) -> str:
        return self.describe(args) if self.describe else f"{self.name} wants to run"

    def check_args(self, args: Any) -> str | None:
        """A message for the model when `args` do not fit the schema (shallow check), else None."""
        if not isinstance(args, dict):
            return f"{self.name} takes a JSON object of arguments"
        props: dict[str, Any] = self.parameters.get("properties", {})
        for name in self.parameters.get("required", []):
            if name not in args:
                return f"{self.name} needs the argument {name!r}"
        for name, value in args.items():
            if name not in props:
                return f"{self.name} has no argument {name!r}; it takes {sorted(props)}"
            expected = JSON_TYPES.get(props[name].get("type", ""))
            if expected and (not isinstance(value, expected) or (expected is int and isinstance(value, bool))):
                return f"{self.name}: argument {name!r} must be of type {props[name]['type']}"
        return None
