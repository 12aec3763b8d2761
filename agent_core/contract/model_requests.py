"""GET threads/{id}/requests: the record of what reached the model (agent_core.storage.request_log),
for audits and the panel's "what was sent"."""

from __future__ import annotations

from pydantic import Field

from agent_core.contract.shared import DataPolicy, RequestKind, WireModel
from agent_core.json_types import JsonObject


class RequestSource(WireModel):
    kind: str = Field(
        description="file, notebook, dataframe, variable, variables (the namespace snapshot), cell_output, "
        "sql_result, mcp_result, command_output, search_result, agent_report, listing, image or tool_result."
    )
    name: str = Field(description="Which one: a path, a variable, the cell's description, a database, a tool.")


MAX_STEP_SOURCES = 50  # named on a step's usage event; the record keeps them all


class SentSummary(WireModel):
    """What one model call's request carried, on that call's `usage` event: the step's "what was sent"."""

    request_seq: int = Field(description="The record's seq: GET threads/{id}/requests?seq= has its full text.")
    bytes: int = Field(description="The request body's size as sent.")
    redactions: int = Field(description="Values replaced before it left (data_policy redact or schema_only).")
    sources: list[RequestSource] = Field(description=f"Where its parts came from (at most {MAX_STEP_SOURCES}).")


class ModelRequestRecord(WireModel):
    seq: int = Field(description="Per thread, from 1, in the order the requests went out.")
    agent: str = Field(description="The agent that asked: main, planner, or a sub-agent's name.")
    task_id: str | None = Field(default=None, description="A sub-agent's: the id of the task call that started it.")
    kind: RequestKind
    bytes: int = Field(description="The request body's size as sent.")
    redactions: int = Field(description="Values replaced before it left (data_policy redact or schema_only).")
    sources: list[RequestSource] = Field(description="Where the parts of its messages came from.")
    sha256: str = Field(description="Of the body as sent: still there once the body is compacted away.")
    created_at: float
    kept: bool = Field(description="False once compacted: only the newest 200 requests of a thread keep their text.")
    messages: list[JsonObject] | None = Field(default=None, description="As sent, while kept.")
    tools: list[JsonObject] | None = Field(default=None, description="As sent, while kept (absent: none sent).")
    body: str | None = Field(default=None, description="The request body byte for byte (UTF-8), while kept.")


class RequestsSummary(WireModel):
    requests: int
    bytes: int
    redactions: int
    sources: dict[str, int] = Field(description="Per source kind, how many different ones reached the model.")
    data_policy: DataPolicy = Field(description="The thread's policy now: the server's, or narrower.")


class ModelRequests(WireModel):
    requests: list[ModelRequestRecord]
    summary: RequestsSummary
