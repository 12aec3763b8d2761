"""The request bodies of the HTTP routes as Pydantic models (strict types, bounded sizes, so no
route reads a field it has not checked), and the parsing that turns bytes into one or a BodyError
that says what to fix."""

from __future__ import annotations

import json
from typing import ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent_core.contract.outside_tools import AcpAgentSetting, McpServerSetting
from agent_core.contract.shared import (
    ApprovalDecision,
    Autonomy,
    DataPolicy,
    LiveCell,
    Mode,
    RouteErrorKind,
    ToolCalling,
    WireModel,
)
from agent_core.errors import BadRequest
from agent_core.json_types import JsonObject

MAX_BODY_BYTES = 8 * 1024 * 1024  # an edited write_file may carry up to 5 MB of content
MAX_JSON_DEPTH = 64
MAX_MESSAGE_CHARS = 200_000  # ~50k tokens: more is a file to read, not a message
MAX_PATH_CHARS = 4096
MAX_ID_CHARS = 200
MAX_NAMES = 100
MAX_CELLS = 5000
MAX_RULE_CHARS = 300  # agent_core.impact.rules keeps a rule to one line of this size
MAX_BACKGROUND_AFTER = 86_400.0  # a day: a run that asks for more never sends its cells to the background (0 says so)

Path_ = Field(default=None, max_length=MAX_PATH_CHARS)
Id_ = Field(default=None, max_length=MAX_ID_CHARS)


# -- request bodies


class Body(BaseModel):
    # strict: "5" is not 5 and a string is not a list; unknown fields are ignored (newer panels).
    model_config = ConfigDict(strict=True, extra="ignore")
    field_kinds: ClassVar[dict[str, RouteErrorKind]] = {}  # the error kind of a wrong field, where API.md names one


class CreateThread(Body):
    notebook_path: str = Field(default="", max_length=MAX_PATH_CHARS)
    title: str = Field(default="", max_length=500)
    agent: str = Field(
        default="cellwright",
        max_length=100,
        description='"cellwright" (our own agent) or the name of an ACP agent of c.Cellwright.acp_agents (GET agents).',
    )


NotebookCells = Field(
    default=None,
    max_length=MAX_CELLS,
    description="The notebook's cells as the browser has them (saved or not): what edit_cell diffs against and "
    "checks that its cell still exists. Without it, the saved notebook.",
)


class StartRun(Body):
    message: str = Field(min_length=1, max_length=MAX_MESSAGE_CHARS)
    notebook_path: str | None = Path_
    kernel_id: str | None = Id_
    mode: Mode = "single"
    autonomy: Autonomy = "agent"
    notebook_cells: list[LiveCell] | None = NotebookCells
    disabled_mcp_servers: list[str] | None = Field(
        default=None,
        max_length=64,
        description="MCP servers this thread does not use (kept with the thread until a run sends another list).",
    )
    data_policy: DataPolicy | None = Field(
        default=None,
        description="Narrow the server's data_policy for this thread (kept for its later runs); a wider one is "
        "refused (400 policy_wider).",
    )
    background_after: float | None = Field(
        default=None,
        ge=0,
        le=MAX_BACKGROUND_AFTER,
        description="Seconds this run's approved cells may run before they go on in the background (issue 38); 0: "
        "never. For this run only (its later segments too); without it, the server's c.Cellwright.background_after.",
    )
    field_kinds: ClassVar[dict[str, RouteErrorKind]] = {"mode": "bad_mode", "autonomy": "bad_autonomy"}


class Decision(Body):
    decision: ApprovalDecision
    args: JsonObject | None = Field(default=None, description="edit: the arguments to run instead.")
    reason: str | None = Field(default=None, max_length=20_000, description="reject: told to the model.")
    save_rule: str | None = Field(
        default=None,
        max_length=MAX_RULE_CHARS,
        description="reject: also keep this text as a workspace rule (.cellwright/rules.md), given to the agent on every run.",
    )
    always: bool | None = Field(
        default=None,
        description="approve, on a card with `always`: also allow that kind of the agent's request unasked in this "
        "thread, until DELETE threads/{id}/always_allowed.",
    )
    rerun_dependents: bool | None = Field(
        default=None,
        description="approve or edit, on a run_cell or edit_cell card with `makes_stale`: after the cell ran, "
        "re-run the cells it made stale in dependency order, under this one approval.",
    )
    kernel_id: str | None = Id_
    notebook_cells: list[LiveCell] | None = NotebookCells
    field_kinds: ClassVar[dict[str, RouteErrorKind]] = {"decision": "bad_decision", "args": "bad_args"}


class DiagnosticsRequest(Body):
    code: str | None = Field(default=None, max_length=1_000_000)
    path: str | None = Path_
    kernel_id: str | None = Id_


class ResourcesRequest(Body):
    files: list[str] | None = Field(default=None, max_length=MAX_NAMES)
    dataframes: list[str] | None = Field(default=None, max_length=MAX_NAMES)
    kernel_id: str | None = Id_
    notebook_path: str | None = Path_


class VariablesRequest(Body):
    kernel_id: str | None = Id_
    notebook_path: str | None = Path_


class Price(WireModel):
    prompt: float = Field(ge=0, description="Per million prompt tokens.")
    completion: float = Field(ge=0, description="Per million completion tokens.")


class ConfigUpdate(Body):
    """PUT config: any of these; an unknown name is refused rather than silently dropped."""

    model_config = ConfigDict(strict=True, extra="forbid")
    model: str | None = None
    base_url: str | None = None
    api_key: str | None = None
    tool_calling: ToolCalling | None = None
    auto_approve: list[str] | None = Field(default=None, description="Tool names that run without asking.")
    prices: dict[str, Price] | None = Field(default=None, description="Model name -> price per million tokens.")
    mcp_servers: dict[str, McpServerSetting] | None = Field(default=None, description="Server name -> how to reach it.")
    acp_agents: dict[str, AcpAgentSetting] | None = Field(
        default=None, description="Outside agents hosted over ACP: name -> how to start it (GET agents lists them)."
    )


class ConnectionTest(Body):
    """POST config/test: the form's values, unsaved; what is absent is taken from the settings. The
    endpoint tried gets the api_key sent with it, else its own saved key, never another endpoint's."""

    model_config = ConfigDict(strict=True, extra="forbid")
    model: str | None = Field(default=None, max_length=500)
    base_url: str | None = Field(default=None, max_length=MAX_PATH_CHARS)
    api_key: str | None = Field(default=None, max_length=10_000)


# -- parsing a body


class BodyError(BadRequest):
    """A body the client must fix; `kind` is the error kind of API.md."""


def parse_json(raw: bytes) -> JsonObject:
    """The body as a JSON object: 413 past MAX_BODY_BYTES, 400 bad_json when malformed or too deep."""
    if len(raw) > MAX_BODY_BYTES:
        raise BodyError(
            f"The request body is {len(raw)} bytes; the limit is {MAX_BODY_BYTES} bytes. Send less "
            "(a long message belongs in a file the agent can read).",
            "body_too_large",
            "too_large",
        )
    try:
        data = json.loads(raw or b"{}")
    except (ValueError, RecursionError) as exc:
        detail = "it is nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise BodyError(f"The request body is not valid JSON ({detail}).", "bad_json") from None
    if _depth_over(data, MAX_JSON_DEPTH):
        raise BodyError(f"The request body is nested more than {MAX_JSON_DEPTH} levels deep.", "bad_json")
    if not isinstance(data, dict):
        raise BodyError("The request body must be a JSON object.", "bad_json")
    return data


def _depth_over(value: object, limit: int) -> bool:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return False


ModelT = TypeVar("ModelT", bound=Body)


def parse_body(model: type[ModelT], data: JsonObject) -> ModelT:
    """`data` as `model`, or a BodyError that names each wrong field and what it should be."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = []
        for error in exc.errors(include_url=False)[:5]:
            where = ".".join(str(part) for part in error["loc"]) or "body"
            problems.append(f'"{where}": {error["msg"]}')
        errors = exc.errors()
        first_field = str(errors[0]["loc"][0]) if errors[0]["loc"] else ""
        kind: RouteErrorKind
        if all(e["type"] == "missing" for e in errors):
            kind = "missing_fields"
        else:
            kind = model.field_kinds.get(first_field, "bad_request")
        raise BodyError("The request body does not fit: " + "; ".join(problems) + ".", kind) from None
