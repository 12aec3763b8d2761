"""The HTTP routes of API.md, once: each request body as a Pydantic model (the validator: strict
types, bounded sizes, so no route reads a field it has not checked), each answer as a model, and the
route table the OpenAPI document is generated from."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent_core.contract.events import ApprovalRequest
from agent_core.contract.outside_tools import McpServers, McpServerSetting, NotebookTools, PublicMcpServer
from agent_core.contract.review import UndoResult
from agent_core.contract.shared import (
    ApprovalDecision,
    Autonomy,
    CheckpointerKind,
    Diagnostic,
    LiveCell,
    Mode,
    RouteErrorKind,
    ThreadStatus,
    Todo,
    ToolCalling,
    Usage,
    WireModel,
)
from agent_core.errors import BadRequest

MAX_BODY_BYTES = 8 * 1024 * 1024  # an edited write_file may carry up to 5 MB of content
MAX_JSON_DEPTH = 64
MAX_MESSAGE_CHARS = 200_000  # ~50k tokens: more is a file to read, not a message
MAX_PATH_CHARS = 4096
MAX_ID_CHARS = 200
MAX_NAMES = 100
MAX_CELLS = 5000
MAX_RULE_CHARS = 300  # agent_core.impact.rules keeps a rule to one line of this size

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
    field_kinds: ClassVar[dict[str, RouteErrorKind]] = {"mode": "bad_mode", "autonomy": "bad_autonomy"}


class Decision(Body):
    decision: ApprovalDecision
    args: dict[str, Any] | None = Field(default=None, description="edit: the arguments to run instead.")
    reason: str | None = Field(default=None, max_length=20_000, description="reject: told to the model.")
    save_rule: str | None = Field(
        default=None,
        max_length=MAX_RULE_CHARS,
        description="reject: also keep this text as a workspace rule (.cellwright/rules.md), given to the agent on every run.",
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


class ConnectionTest(Body):
    """POST config/test: the form's values, unsaved; what is absent is taken from the settings. The
    endpoint tried gets the api_key sent with it, else its own saved key, never another endpoint's."""

    model_config = ConfigDict(strict=True, extra="forbid")
    model: str | None = Field(default=None, max_length=500)
    base_url: str | None = Field(default=None, max_length=MAX_PATH_CHARS)
    api_key: str | None = Field(default=None, max_length=10_000)


# -- answers


class ErrorBody(WireModel):
    """Every error answer: `error` is the kind (e.g. bad_json, path_outside_root, not_found)."""

    error: RouteErrorKind
    message: str = Field(description="What went wrong and what to do.")


class Problem(WireModel):
    """A misconfiguration the server can name; while there is one, the other routes answer 503 misconfigured."""

    kind: str = Field(description="e.g. postgres_extra_missing")
    message: str = Field(description="What is wrong and what to do.")


class Health(WireModel):
    version: str
    model: str
    tool_calling: ToolCalling
    checkpointer: CheckpointerKind
    llm_configured: bool
    problems: list[Problem] = Field(default_factory=list, description="Absent when there is none.")


class PublicConfig(WireModel):
    """The settings without secrets: never the API key, nor credentials inside the URL."""

    model: str
    base_url: str
    api_key_set: bool = Field(description="Whether the current endpoint (base_url's scheme, host and port) has a key.")
    api_keys_set: list[str] = Field(
        default_factory=list,
        description='The endpoints that have a key, e.g. ["http://127.0.0.1:8000", "https://api.openai.com"]: a key '
        "belongs to the endpoint it was given for and is never sent to another. Never the keys.",
    )
    tool_calling: ToolCalling
    auto_approve: list[str]
    max_model_calls: int | None
    command_timeout: float
    cell_timeout: float | None
    checkpointer: CheckpointerKind
    prices: dict[str, Price]
    mcp_servers: dict[str, PublicMcpServer] = Field(default_factory=dict, description="Without env and header values.")
    context_token_budget: int
    databases: dict[str, str] = Field(
        default_factory=dict, description="sql_query's databases: name -> SQLAlchemy URL with credentials masked (***)."
    )
    embedding_model: str = Field(
        default="", description="The embedding model of search_knowledge; empty for BM25 only."
    )
    sources: dict[str, SettingSource] = Field(
        description="Where each editable setting's value comes from: saved by PUT config, a Jupyter config file, "
        "an environment variable, or the default."
    )


class ModelList(WireModel):
    models: list[str] = Field(description="What the endpoint's /models lists (empty when it has none).")
    error: str | None = Field(default=None, description="Why there is no list: type the model's name instead.")


class ConnectionCheck(WireModel):
    name: Literal["reachable", "key", "model", "tools"]
    ok: bool
    message: str


class ConnectionReport(WireModel):
    ok: bool = Field(description="Every check passed: the endpoint answers this model, with tool calling.")
    checks: list[ConnectionCheck] = Field(description="In order; after the first failure the rest are not run.")
    models: list[str]


SettingSource = Literal["settings", "config", "environment", "default"]


class Thread(WireModel):
    thread_id: str
    title: str
    notebook_path: str
    created_at: float = Field(description="Epoch seconds.")
    updated_at: float = Field(description="Epoch seconds.")
    status: ThreadStatus


class ThreadList(WireModel):
    threads: list[Thread] = Field(description="Newest first.")


class MessageToolCall(WireModel):
    id: str
    name: str
    args: dict[str, Any] | None = Field(description="null when the model's arguments were not valid JSON.")


class ThreadMessage(WireModel):
    """A user, assistant or tool turn as the panel shows it."""

    role: Literal["user", "assistant", "tool"]
    content: str
    tool_calls: list[MessageToolCall] | None = None
    tool_call_id: str | None = None


class ThreadDetail(Thread):
    messages: list[ThreadMessage]
    todos: list[Todo]
    pending_approval: ApprovalRequest | None
    usage: Usage = Field(description="Summed over the thread's model calls.")
    autonomy: Autonomy = Field(description="Of the thread's last run.")


class RunAccepted(WireModel):
    run_id: str


class CancelAccepted(WireModel):
    status: Literal["cancelled"]


class DiagnosticsAnswer(WireModel):
    diagnostics: list[Diagnostic]
    note: str | None = Field(default=None, description="Why the check is partial (e.g. no kernel to ask for names).")


class EntryError(WireModel):
    error: str


class FileSize(WireModel):
    bytes: int
    human: str
    type: Literal["file", "directory"]
    files: int | None = Field(default=None, description="directory: files under it.")
    partial: bool = Field(default=False, description="directory: the walk stopped early; bytes is a lower bound.")


class DataFrameSize(WireModel):
    bytes: int
    rows: int
    columns: int
    library: Literal["pandas", "polars"]
    deep: bool = True
    note: str | None = None


class Gpu(WireModel):
    index: int
    name: str
    memory_total: int
    memory_used: int


class SystemResources(WireModel):
    mem_total: int | None
    mem_available: int | None
    gpus: list[Gpu]
    gpu_error: str | None = None


class KernelUsage(WireModel):
    """The kernel's process tree (the kernel and the processes it started)."""

    cpu_percent: float = Field(description="Percent of one core over a short sample: 250 is two and a half cores.")
    memory_bytes: int = Field(description="Resident memory summed over the tree.")
    gpu_memory_bytes: int | None = Field(default=None, description="GPU memory held, when NVML is available.")


class Resources(WireModel):
    files: dict[str, FileSize | EntryError]
    dataframes: dict[str, DataFrameSize | EntryError]
    system: SystemResources
    kernel: KernelUsage | EntryError | None = Field(
        default=None, description="With kernel_id or notebook_path: the kernel's CPU and memory (API.md, Additions)."
    )


class KnowledgeError(WireModel):
    path: str
    message: str


class KnowledgeStatus(WireModel):
    """The workspace index of search_knowledge (GET knowledge/status)."""

    state: Literal["off", "idle", "building", "ready", "stopped"]
    files: int = Field(description="Workspace files indexed.")
    chunks: int = Field(description="Passages indexed (files and database tables).")
    tables: int = Field(description="Database tables whose metadata is indexed.")
    last_update: float | None = Field(description="When the index last changed (seconds since the epoch).")
    skipped: int = Field(description="Files left out by the size caps.")
    errors: list[KnowledgeError] = Field(description="The latest problems (files that could not be read, embeddings).")
    embedding_model: str | None


class Variable(WireModel):
    name: str
    type: str
    shape: list[int] | None = None


class Variables(WireModel):
    """The kernel's user variables for @ completion: largest and most recently assigned first."""

    variables: list[Variable]
    note: str | None = Field(
        default=None, description='Why the list is empty or short, e.g. "kernel busy: no snapshot".'
    )


# -- the route table (paths under cellwright/api/)


@dataclass(frozen=True)
class Param:
    name: str
    where: Literal["query", "header"]
    description: str


@dataclass(frozen=True)
class Route:
    method: Literal["get", "post", "put", "delete"]
    path: str
    summary: str
    answers: dict[int, Any]  # status -> answer model; None for no body; EVENT_STREAM; OPENAPI_DOCUMENT
    body: type[Body] | None = None
    errors: tuple[int, ...] = ()  # statuses answered with ErrorBody
    params: tuple[Param, ...] = ()


EVENT_STREAM = "text/event-stream"
OPENAPI_DOCUMENT = "openapi"
BODY_ERRORS = (400, 413)
AFTER = (
    Param("after", "query", "Replay the events after this seq."),
    Param("Last-Event-ID", "header", "As `after`, sent by a reconnecting EventSource."),
)

ROUTES: tuple[Route, ...] = (
    Route("get", "health", "Version, model and storage of the server.", {200: Health}),
    Route("get", "config", "The settings, without secrets.", {200: PublicConfig}),
    Route(
        "put",
        "config",
        "Change settings at run time (kept in the Jupyter data directory).",
        {200: PublicConfig},
        ConfigUpdate,
        BODY_ERRORS,
    ),
    Route("get", "config/models", "The models the configured endpoint lists.", {200: ModelList}),
    Route(
        "post",
        "config/test",
        "One tiny request to the endpoint: reachable, key accepted, model known, tools.",
        {200: ConnectionReport},
        ConnectionTest,
        BODY_ERRORS,
    ),
    Route("post", "threads", "Create a thread.", {201: Thread}, CreateThread, BODY_ERRORS),
    Route("get", "threads", "Every thread, newest first.", {200: ThreadList}),
    Route(
        "get",
        "threads/{thread_id}",
        "A thread with its messages, todos and pending approval.",
        {200: ThreadDetail},
        errors=(404,),
    ),
    Route("delete", "threads/{thread_id}", "Delete a thread.", {204: None}, errors=(404, 409)),
    Route(
        "post",
        "threads/{thread_id}/runs",
        "Start a run; 409 while one is active or awaiting approval.",
        {202: RunAccepted},
        StartRun,
        (*BODY_ERRORS, 404, 409),
    ),
    Route(
        "get",
        "threads/{thread_id}/events",
        "The thread's events after `after`, then the active run's live.",
        {200: EVENT_STREAM},
        errors=(400, 404),
        params=AFTER,
    ),
    Route(
        "post",
        "threads/{thread_id}/approvals/{tool_call_id}",
        "Approve, edit or reject the pending call.",
        {202: RunAccepted},
        Decision,
        (*BODY_ERRORS, 404, 409),
    ),
    Route(
        "post",
        "threads/{thread_id}/undo/{tool_call_id}",
        "Undo a step: restore the variables it changed, delete the ones it created; 409 when it cannot be undone (any "
        "more). To undo a run, undo its steps newest first.",
        {200: UndoResult},
        errors=(404, 409),
    ),
    Route(
        "post",
        "threads/{thread_id}/cancel",
        "Stop the run (interrupts the kernel if a cell runs).",
        {202: CancelAccepted},
        errors=(404, 409),
    ),
    Route(
        "post",
        "diagnostics",
        "Lint a cell's code or a .py file.",
        {200: DiagnosticsAnswer},
        DiagnosticsRequest,
        (*BODY_ERRORS, 409),
    ),
    Route(
        "post",
        "resources",
        "File sizes, DataFrame sizes, memory and GPUs.",
        {200: Resources},
        ResourcesRequest,
        BODY_ERRORS,
    ),
    Route(
        "post",
        "variables",
        "The kernel's variables (name, type, shape), for @ mentions.",
        {200: Variables},
        VariablesRequest,
        BODY_ERRORS,
    ),
    Route(
        "get",
        "mcp/servers",
        "The configured MCP servers: status (connected, failed and why) and tools.",
        {200: McpServers},
    ),
    Route(
        "post",
        "notebook_tools",
        "The kernel's @tool functions (silent: nothing runs in the kernel).",
        {200: NotebookTools},
        VariablesRequest,
        BODY_ERRORS,
    ),
    Route(
        "get", "knowledge/status", "The workspace index: files, chunks, last update, errors.", {200: KnowledgeStatus}
    ),
    Route("get", "openapi.json", "This document.", {200: OPENAPI_DOCUMENT}),
)


# -- parsing a body


class BodyError(BadRequest):
    """A body the client must fix; `kind` is the error kind of API.md."""


def parse_json(raw: bytes) -> dict[str, Any]:
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


def _depth_over(value: Any, limit: int) -> bool:
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


def parse_body(model: type[ModelT], data: dict[str, Any]) -> ModelT:
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
