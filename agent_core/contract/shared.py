"""What events and route bodies share: the base model, the named enums and the small shapes
(a todo, a suggested next step, a diagnostic, a notebook output)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field
from typing_extensions import TypeAliasType

from agent_core.contract.choices import (  # noqa: F401  (re-exported: one import for every shape)
    ApprovalDecision,
    Autonomy,
    CellStatus,
    CheckpointerKind,
    DataPolicy,
    DiagnosticSeverity,
    EventErrorKind,
    LLMErrorKind,
    Mode,
    RequestKind,
    RouteErrorKind,
    RunStatus,
    ThreadStatus,
    TodoStatus,
    ToolCalling,
    ToolStatus,
    UndoRefusal,
    Vision,
)
from agent_core.json_types import JsonObject


class WireModel(BaseModel):
    """Something that crosses the wire. Unknown fields are refused: a field the contract does not
    name is a bug of the sender, caught where it is sent rather than guessed at by the panel."""

    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)


class Todo(WireModel):
    content: str
    status: TodoStatus


class NextItem(WireModel):
    """A suggested next step: the panel shows `title` and sends `prompt` when it is clicked."""

    title: str
    prompt: str


class Usage(WireModel):
    """Tokens the model counted (or Cellwright estimated, when the endpoint reports none)."""

    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int | None = Field(
        default=None, description="Prompt tokens the endpoint served from its cache, where it says."
    )
    estimated: bool = Field(description="Some of the figures are Cellwright's estimate (4 characters a token).")
    cost: float | None = Field(
        default=None, description="In the currency of the `prices` setting; absent when no price is set for the model."
    )


class LiveCell(WireModel):
    """A cell of the notebook as the user's browser has it (saved or not), for edit_cell."""

    id: str = Field(max_length=200, description="The nbformat cell id.")
    cell_type: Literal["code", "markdown", "raw"]
    source: str = Field(max_length=1_000_000)
    truncated: bool = Field(
        default=False, description="The source was left out (the request's size cap): read it from the saved file."
    )


class Diagnostic(WireModel):
    """A linter finding; lines and columns count from 1."""

    line: int
    column: int
    severity: DiagnosticSeverity
    code: str
    message: str
    source: str


# -- one nbformat v4 output (as the kernel sent it; the panel writes it into the notebook as is)


class StreamOutput(WireModel):
    output_type: Literal["stream"]
    name: str = Field(description='"stdout" or "stderr".')
    text: str | list[str]


class DisplayDataOutput(WireModel):
    output_type: Literal["display_data"]
    data: JsonObject = Field(description="MIME type -> content.")
    metadata: JsonObject = Field(default_factory=dict)


class ExecuteResultOutput(WireModel):
    output_type: Literal["execute_result"]
    data: JsonObject = Field(description="MIME type -> content.")
    metadata: JsonObject = Field(default_factory=dict)
    execution_count: int | None


class ErrorOutput(WireModel):
    output_type: Literal["error"]
    ename: str
    evalue: str
    traceback: list[str]


NbOutput = TypeAliasType(
    "NbOutput",
    Annotated[StreamOutput | DisplayDataOutput | ExecuteResultOutput | ErrorOutput, Field(discriminator="output_type")],
)
