"""What the HTTP routes answer, as models: the OpenAPI document and the panel's types come from these."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from agent_core.contract.bodies import Price
from agent_core.contract.events import ApprovalRequest
from agent_core.contract.outside_tools import AcpAgentSetting, PublicMcpServer
from agent_core.contract.shared import (
    Autonomy,
    CheckpointerKind,
    Diagnostic,
    RouteErrorKind,
    ThreadStatus,
    Todo,
    ToolCalling,
    Usage,
    WireModel,
)
from agent_core.json_types import JsonObject


class ErrorBody(WireModel):
    """Every error answer: `error` is the kind (e.g. bad_json, path_outside_root, not_found)."""

    error: RouteErrorKind
    message: str = Field(description="What went wrong and what to do.")


class Problem(WireModel):
    """A misconfiguration the server can name; while there is one, the other routes answer 503 misconfigured."""

    kind: str = Field(description="e.g. postgres_extra_missing")
    message: str = Field(description="What is wrong and what to do.")


class ShellSandboxHealth(WireModel):
    available: bool
    mechanism: str | None = None
    reason: str | None = Field(default=None, description="Why read-only commands are approved as any other.")


class SandboxHealth(WireModel):
    """Whether explore runs sandboxed (unasked) on this host; a kernel elsewhere or with CUDA may answer otherwise."""

    available: bool
    mechanism: str | None = None
    reason: str | None = Field(default=None, description="Why explore asks for approval here.")
    shell: ShellSandboxHealth | None = None


class Health(WireModel):
    version: str
    model: str
    tool_calling: ToolCalling
    checkpointer: CheckpointerKind
    llm_configured: bool
    shared_document: bool = Field(
        default=False,
        description="Whether the server writes the agent's cells into the notebook's shared document "
        "(jupyter-collaboration is on): the panel then only decorates them and never inserts cells.",
    )
    problems: list[Problem] = Field(default_factory=list, description="Absent when there is none.")
    sandbox: SandboxHealth | None = Field(default=None, description="issue 37: explore's and the shell's sandbox.")


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
    acp_agents: dict[str, AcpAgentSetting] = Field(default_factory=dict, description="Env values masked.")
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
    agent: str = Field(
        default="cellwright",
        description='Who answers in it: "cellwright", or an ACP agent (c.Cellwright.acp_agents), which talks to its '
        "own model under its own account: Cellwright's data_policy does not govern what it sends.",
    )


class AgentInfo(WireModel):
    name: str
    kind: Literal["cellwright", "acp"]
    available: bool = Field(description="Whether it could be started now.")
    reason: str | None = Field(default=None, description="Why not, and what to install.")


class AgentList(WireModel):
    agents: list[AgentInfo] = Field(description="Cellwright's own agent first.")


class ThreadList(WireModel):
    threads: list[Thread] = Field(description="Newest first.")


class MessageToolCall(WireModel):
    id: str
    name: str
    args: JsonObject | None = Field(description="null when the model's arguments were not valid JSON.")


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
    forked_from: str | None = Field(
        default=None, description='"<thread id>:<tool call id>" when the thread was forked from that step (POST fork).'
    )
    always_allowed: list[str] | None = Field(
        default=None, description="An outside agent's thread: the kinds of its requests allowed there unasked."
    )


class AlwaysAllowed(WireModel):
    always_allowed: list[str] = Field(description="The kinds still allowed unasked in the thread (none once cleared).")


class RunAccepted(WireModel):
    run_id: str
    queued: bool | None = Field(
        default=None,
        description="True when the thread waits for a cell (waiting_for_cell): the message is kept and reaches the "
        "model with the cell's outcome; run_id is then the waiting run's.",
    )


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
