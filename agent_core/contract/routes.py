"""The HTTP routes of API.md, once: method, path, body model and answer models of each. The
OpenAPI document is generated from this table, and the route tests walk it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from agent_core.contract.answers import (
    AgentList,
    AlwaysAllowed,
    CancelAccepted,
    ConnectionReport,
    DiagnosticsAnswer,
    Health,
    KnowledgeStatus,
    ModelList,
    PublicConfig,
    Resources,
    RunAccepted,
    Thread,
    ThreadDetail,
    ThreadList,
    Variables,
)
from agent_core.contract.as_cell import AsCellStarted, StepAsCell
from agent_core.contract.bodies import (
    Body,
    ConfigUpdate,
    ConnectionTest,
    CreateThread,
    Decision,
    DiagnosticsRequest,
    ResourcesRequest,
    StartRun,
    VariablesRequest,
)
from agent_core.contract.completions import CompletionChunk, CompletionRequest, CompletionUsage
from agent_core.contract.model_requests import ModelRequests
from agent_core.contract.notebook_cells import AgentCells, AgentCellsRequest
from agent_core.contract.notebook_graph import NotebookGraphAnswer
from agent_core.contract.outside_tools import McpServers, NotebookTools
from agent_core.contract.review import RewindResult, RewindUndone, UndoResult
from agent_core.contract.rewind import BranchDetail, BranchList, Forked, ForkRequest, RewindRequest, ThreadDiff
from agent_core.contract.shared import WireModel
from agent_core.contract.verify import VerifyRequest, VerifyResult

# Paths are under cellwright/api/.


@dataclass(frozen=True)
class Param:
    name: str
    where: Literal["query", "header"]
    description: str
    type: Literal["integer", "boolean", "string"] = "integer"


@dataclass(frozen=True)
class Route:
    method: Literal["get", "post", "put", "delete"]
    path: str
    summary: str
    answers: dict[int, Any]  # status -> answer model; None for no body; EVENT_STREAM; OPENAPI_DOCUMENT; Lines
    body: type[Body] | None = None
    errors: tuple[int, ...] = ()  # statuses answered with ErrorBody
    params: tuple[Param, ...] = ()


@dataclass(frozen=True)
class Lines:
    """A streamed answer of JSON lines (application/x-ndjson), one `model` a line."""

    model: type[WireModel]


NDJSON = "application/x-ndjson"
EVENT_STREAM = "text/event-stream"
OPENAPI_DOCUMENT = "openapi"
BODY_ERRORS = (400, 413)
AFTER = (
    Param("after", "query", "Replay the events after this seq."),
    Param("Last-Event-ID", "header", "As `after`, sent by a reconnecting EventSource."),
)
FOLLOWING = (
    *AFTER,
    Param(
        "previews",
        "query",
        "1: also each token as the model writes it (live only, no `id:`), before its coalesced row is stored.",
        "boolean",
    ),
    Param(
        "waiting",
        "query",
        "1: stay open while the thread waits for a decision, until the run it resumes ends "
        "(a decision made elsewhere arrives as events); without it the stream closes then.",
        "boolean",
    ),
)
# A POST that starts a run may answer with its events: no second request before the first token.
ANSWERS_EVENTS = (
    Param(
        "Accept",
        "header",
        "text/event-stream: answer 200 with the thread's events, as GET threads/{thread_id}/events with the "
        "parameters below (replayed after `after`, then live until the run ends), instead of 202. What the "
        "request is refused for is refused as without it (a JSON error, nothing started).",
        "string",
    ),
    *FOLLOWING,
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
        "agents",
        "Cellwright's own agent and each configured ACP agent, with whether it can start.",
        {200: AgentList},
    ),
    Route(
        "get",
        "threads/{thread_id}",
        "A thread with its messages, todos and pending approval.",
        {200: ThreadDetail},
        errors=(404,),
    ),
    Route("delete", "threads/{thread_id}", "Delete a thread.", {204: None}, errors=(404, 409)),
    Route(
        "delete",
        "threads/{thread_id}/always_allowed",
        "Ask again for every kind of an outside agent's request that was approved with always in this thread.",
        {200: AlwaysAllowed},
        errors=(404,),
    ),
    Route(
        "post",
        "threads/{thread_id}/runs",
        "Start a run; 409 while one is active or awaiting approval.",
        {202: RunAccepted, 200: EVENT_STREAM},
        StartRun,
        (*BODY_ERRORS, 404, 409),
        ANSWERS_EVENTS,
    ),
    Route(
        "get",
        "threads/{thread_id}/events",
        "The thread's events after `after`, then the active run's live.",
        {200: EVENT_STREAM},
        errors=(400, 404),
        params=FOLLOWING,
    ),
    Route(
        "post",
        "threads/{thread_id}/approvals/{tool_call_id}",
        "Approve, edit or reject the pending call.",
        {202: RunAccepted, 200: EVENT_STREAM},
        Decision,
        (*BODY_ERRORS, 404, 409),
        ANSWERS_EVENTS,
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
        "threads/{thread_id}/steps/{tool_call_id}/as_cell",
        "Run as cell: the code of an explore step of this thread (as the thread recorded it; the request carries "
        "none) proposed as a run_cell call of a one-call run, so the usual approval card follows and, approved, it "
        "runs in the notebook's kernel. 404 for an unknown step; 409 for a step that is not an explore call "
        "(not_explore), while a run is active or an approval is pending.",
        {202: AsCellStarted},
        StepAsCell,
        (*BODY_ERRORS, 404, 409),
    ),
    Route(
        "post",
        "threads/{thread_id}/rewind",
        "Go back to just before a step (a tool call, or the user's message number n): every later step undone newest "
        "first (kernel variables from their undo snapshots; the agent's cells and file writes reverted or kept, as "
        "chosen), the conversation continuing from there on a new branch. dry_run: only what would be restored and "
        "what cannot be, per step. 404 for an unknown step; 409 while a run is active or an approval is pending.",
        {200: RewindResult},
        RewindRequest,
        (*BODY_ERRORS, 404, 409),
    ),
    Route(
        "post",
        "threads/{thread_id}/rewind/undo",
        "Undo the last rewind while nothing ran after it: its branch becomes the thread's again (files too, if this "
        "server made it); kernel variables are not redone.",
        {200: RewindUndone},
        errors=(404, 409),
    ),
    Route(
        "get",
        "threads/{thread_id}/requests",
        "What reached the model: every request of the thread's agents as it was sent (byte for byte while kept), "
        "with its sources and redaction count, and a summary.",
        {200: ModelRequests},
        errors=(400, 404),
        params=(
            Param("text", "query", "0: leave out messages, tools and body (sizes and sources only)."),
            Param("seq", "query", "Only this request (the summary is still the whole thread's)."),
        ),
    ),
    Route(
        "get",
        "threads/{thread_id}/branches",
        "The thread's branches: the current one first, then those that rewinds left, newest first.",
        {200: BranchList},
        errors=(404,),
    ),
    Route(
        "get",
        "threads/{thread_id}/branches/{branch}",
        "A branch's conversation (the earlier attempt a rewind left).",
        {200: BranchDetail},
        errors=(404,),
    ),
    Route(
        "post",
        "threads/{thread_id}/fork",
        "Try again from here: a new thread continuing from just before a step; nothing is undone.",
        {201: Forked},
        ForkRequest,
        (*BODY_ERRORS, 404),
    ),
    Route(
        "get",
        "threads/{thread_id}/diff",
        "What the agent changed over a range of steps of the current branch, per notebook cell and per file: before "
        "the range's first step on it, after its last. 404 for an unknown step; 400 when `from` comes after `to`.",
        {200: ThreadDiff},
        errors=(400, 404),
        params=(
            Param("from", "query", "The range's first step (a tool call id); default: the thread's first."),
            Param("to", "query", "The range's last step (a tool call id); default: the thread's last."),
        ),
    ),
    Route(
        "post",
        "threads/{thread_id}/continue",
        "Continue without waiting for the cell that runs in the background (waiting_for_cell): the model gets its "
        "output so far and goes on while the cell runs; 409 when the thread is not waiting for a cell.",
        {202: RunAccepted, 200: EVENT_STREAM},
        errors=(400, 404, 409),
        params=ANSWERS_EVENTS,
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
        "post",
        "agent_cells",
        "The agent cells of a notebook (of this server's owner's threads), in the order they ran, with their stored "
        "outputs: what a panel inserts into a notebook that lacks them. Paginated by `offset`; nothing is written.",
        {200: AgentCells},
        AgentCellsRequest,
        BODY_ERRORS,
    ),
    Route(
        "post",
        "verify",
        "Re-run the saved notebook top to bottom in a fresh shadow kernel (its kernelspec, its folder; never the "
        "notebook's own kernel; a time limit): cells that fail, agent cells whose outputs differ from what their "
        "thread recorded, names that come from hidden state, cells run out of order.",
        {200: VerifyResult},
        VerifyRequest,
        BODY_ERRORS,
    ),
    Route(
        "get",
        "notebook/graph",
        "The notebook's dependency graph (issue 42): per code cell the names it read and wrote, whether it is stale "
        "(a name it read was redefined after it ran, its source changed, it read from a stale cell) or shows hidden "
        "state, with the reason; the agent's cells not yet saved included. Read from the saved file and, silently, "
        "the notebook's kernel (its input history and names); nothing runs. 400 for a path that is not a notebook "
        "in the root.",
        {200: NotebookGraphAnswer},
        errors=(400,),
        params=(Param("path", "query", "The notebook, relative to the server root.", "string"),),
    ),
    Route(
        "get", "knowledge/status", "The workspace index: files, chunks, last update, errors.", {200: KnowledgeStatus}
    ),
    Route(
        "post",
        "completions",
        "Inline completion at a cursor: the suggestion streamed as JSON lines (delta pieces, then done), from the "
        "completion model (fill-in-the-middle where the endpoint has it), with the cells above and the kernel's names "
        "and types (never values). Closing the request closes the endpoint's. 409 completion_off when turned off.",
        {200: Lines(CompletionChunk)},
        CompletionRequest,
        (*BODY_ERRORS, 409),
    ),
    Route(
        "get", "completions/usage", "This server's inline completions: requests, tokens, cache.", {200: CompletionUsage}
    ),
    Route("get", "openapi.json", "This document.", {200: OPENAPI_DOCUMENT}),
)


def answer_model(path: str, method: str, status: int) -> type[WireModel]:
    """The model a route answers with, for a status it answers with a body."""
    route = next(r for r in ROUTES if r.path == path and r.method == method.lower())
    model = route.answers[status]
    if not (isinstance(model, type) and issubclass(model, WireModel)):
        raise LookupError(f"{method} {path} answers {status} without a contract model")
    return model
