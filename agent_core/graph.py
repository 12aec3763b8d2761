"""The agent loop: a LangGraph StateGraph with a model node and a tools node.

State holds OpenAI-format message dicts. The tools node raises one `interrupt()` for a risky call
before any side effect; a tool call id runs at most once (see tool_ledger)."""
from __future__ import annotations

import asyncio
import json
import logging
import operator
from dataclasses import dataclass, field
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import interrupt

from .events import make_event
from .llm import stream_chat
from .prompts import prompt_text
from .settings import AgentSettings
from .tool_ledger import STOPPED, ToolLedger
from .tools.base import Emit
from .tools import TOOLS, ToolContext, ToolEnvironment, ToolInputError, ToolOutcome, ToolSpec

log = logging.getLogger(__name__)


class AgentState(TypedDict, total=False):
    messages: Annotated[list[dict[str, Any]], operator.add]
    todos: list[dict[str, str]]
    model_calls: int  # per run: reset by each new user message
    done: bool


@dataclass
class RunContext:
    """What a run may touch; never checkpointed."""

    thread_id: str
    settings: AgentSettings
    env: ToolEnvironment
    ledger: ToolLedger
    # Events go to this sink rather than LangGraph's stream writer: what a tool emits while its run
    # is being cancelled (a cell's "aborted") would never reach the stream's consumer.
    emit: Emit
    notebook_path: str = ""
    agent: str = "main"
    tools: dict[str, ToolSpec] = field(default_factory=lambda: dict(TOOLS))

    def needs_approval(self, name: str) -> bool:
        spec = self.tools.get(name)
        return bool(spec and spec.needs_approval and name not in self.settings.auto_approve)


def new_run_input(message: str) -> AgentState:
    return {"messages": [{"role": "user", "content": message}], "model_calls": 0, "done": False}


def parse_args(raw: str | dict[str, Any] | None) -> tuple[dict[str, Any] | None, str | None]:
    if isinstance(raw, dict):
        return raw, None
    try:
        value = json.loads(raw or "{}")
    except json.JSONDecodeError as exc:
        return None, f"the arguments are not valid JSON ({exc.msg} at position {exc.pos}); send a JSON object"
    if not isinstance(value, dict):
        return None, "the arguments must be a JSON object"
    return value, None


def with_tool_results(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages as sent to the model: every tool call answered (a cancel can leave one dangling),
    and `content: ""` instead of null beside tool calls (llama.cpp rejects null)."""
    answered = {m.get("tool_call_id") for m in messages if m.get("role") == "tool"}
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.get("role") == "assistant" and message.get("content") is None:
            message = {**message, "content": ""}
        out.append(message)
        for call in message.get("tool_calls") or []:
            if call["id"] not in answered:
                out.append({"role": "tool", "tool_call_id": call["id"], "content": "Not run: the run was stopped."})
    return out


def _limit_reached(ctx: RunContext, emit: Any) -> AgentState:
    answer = (
        f"I stopped after {ctx.settings.max_model_calls} model calls, the limit for one run. "
        "The work so far is in the notebook."
    )
    emit(make_event("final", answer=answer, next_items=[{"title": "Continue", "prompt": "Continue where you stopped."}]))
    return {"messages": [{"role": "assistant", "content": answer}], "done": True}


async def call_model(state: AgentState, runtime: Runtime[RunContext]) -> AgentState:
    ctx = runtime.context
    emit = ctx.emit
    calls_so_far = state.get("model_calls", 0)
    if calls_so_far >= ctx.settings.max_model_calls:
        return _limit_reached(ctx, emit)
    system = prompt_text("system").replace("{notebook_path}", ctx.notebook_path or "(none open)")
    messages = [{"role": "system", "content": system}, *with_tool_results(state.get("messages", []))]
    turn = await stream_chat(
        ctx.settings,
        messages,
        [spec.openai_schema() for spec in ctx.tools.values()],
        on_token=lambda text: emit(make_event("token", text=text)),
        turn_id=calls_so_far,
    )
    calls = turn.tool_calls[:1]  # one tool at a time: approvals and results stay in order
    message: dict[str, Any] = {"role": "assistant", "content": turn.content}
    if calls:
        message["tool_calls"] = calls
        for call in calls:
            args, _ = parse_args(call["function"]["arguments"])
            name = call["function"]["name"]
            emit(make_event("tool_call", id=call["id"], name=name, args=args or {}, needs_approval=ctx.needs_approval(name)))
    else:
        answer = turn.content.strip() or "The model returned an empty reply."
        emit(make_event("final", answer=answer, next_items=[]))
    return {"messages": [message], "model_calls": calls_so_far + 1, "done": not calls}


async def approval_request(spec: ToolSpec, args: dict[str, Any], tool_ctx: ToolContext, agent: str) -> dict[str, Any]:
    request: dict[str, Any] = {
        "id": tool_ctx.call_id,
        "name": spec.name,
        "args": args,
        "description": spec.describe_call(args),
        "diagnostics": [],
        "diff": None,
        "agent": agent,
    }
    if spec.preview is not None:
        try:
            request.update(await spec.preview(args, tool_ctx))
        except Exception as exc:  # a preview is a help for the user, never a reason to fail the call
            log.warning("preview of %s failed: %s", spec.name, exc)
    return request


def _decided_args(decision: Any, args: dict[str, Any]) -> tuple[dict[str, Any] | None, ToolOutcome | None]:
    """The arguments to run with, or the outcome of a rejection."""
    kind = decision.get("decision") if isinstance(decision, dict) else None
    if kind == "reject":
        reason = (decision.get("reason") or "").strip() or "no reason given"
        return None, ToolOutcome(
            "rejected",
            f"The user rejected this call. Reason: {reason}. Do not run it again unchanged; adapt your plan to the reason.",
            summary=f"Rejected: {reason}",
        )
    if kind == "edit":
        return dict(decision.get("args") or {}), None
    return args, None


async def _run_tool(call: dict[str, Any], ctx: RunContext, emit: Any) -> ToolOutcome:
    name = call["function"]["name"]
    spec = ctx.tools.get(name)
    if spec is None:
        return ToolOutcome("error", f"There is no tool named {name!r}. Available tools: {', '.join(ctx.tools)}.")
    args, problem = parse_args(call["function"]["arguments"])
    problem = problem or spec.check_args(args)
    if problem or args is None:
        return ToolOutcome("error", f"Invalid call to {name}: {problem}. Correct the arguments and call it again.")
    recorded = await ctx.ledger.lookup(ctx.thread_id, call["id"])
    if recorded is not None:
        return recorded
    tool_ctx = ToolContext(call["id"], ctx.env, emit, ctx.settings)
    if ctx.needs_approval(name):
        # The node re-runs from the top on resume; nothing above has side effects.
        decision = interrupt(await approval_request(spec, args, tool_ctx, ctx.agent))
        args, rejected = _decided_args(decision, args)
        if rejected is not None:
            await ctx.ledger.finished(ctx.thread_id, call["id"], rejected)
            return rejected
    return await _run_recorded(spec, args or {}, tool_ctx, ctx)


async def _run_recorded(spec: ToolSpec, args: dict[str, Any], tool_ctx: ToolContext, ctx: RunContext) -> ToolOutcome:
    await ctx.ledger.started(ctx.thread_id, tool_ctx.call_id)
    try:
        outcome = await spec.run(args, tool_ctx)
    except ToolInputError as exc:
        outcome = ToolOutcome("error", f"{spec.name} failed: {exc}")
    except asyncio.CancelledError:
        await ctx.ledger.finished(ctx.thread_id, tool_ctx.call_id, STOPPED)
        raise
    except Exception as exc:  # a tool failure is the model's to handle, not a crash of the run
        log.exception("tool %s failed", spec.name)
        outcome = ToolOutcome("error", f"{spec.name} failed: {type(exc).__name__}: {exc}")
    await ctx.ledger.finished(ctx.thread_id, tool_ctx.call_id, outcome)
    return outcome


async def call_tools(state: AgentState, runtime: Runtime[RunContext]) -> AgentState:
    ctx = runtime.context
    emit = ctx.emit
    call = state["messages"][-1]["tool_calls"][0]
    outcome = await _run_tool(call, ctx, emit)
    emit(
        make_event(
            "tool_result", id=call["id"], name=call["function"]["name"], status=outcome.status, summary=outcome.display_summary
        )
    )
    update: AgentState = {"messages": [{"role": "tool", "tool_call_id": call["id"], "content": outcome.content}]}
    update.update(outcome.state)  # type: ignore[typeddict-item]
    update["done"] = outcome.ends_run
    return update


def _after_model(state: AgentState) -> str:
    return END if state.get("done") else "tools"


def _after_tools(state: AgentState) -> str:
    return END if state.get("done") else "model"


def build_graph(checkpointer: Any) -> Any:
    graph = StateGraph(AgentState, context_schema=RunContext)
    graph.add_node("model", call_model)
    graph.add_node("tools", call_tools)
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", _after_model, ["tools", END])
    graph.add_conditional_edges("tools", _after_tools, ["model", END])
    return graph.compile(checkpointer=checkpointer)
