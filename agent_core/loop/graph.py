"""The agent loop: a LangGraph StateGraph with a model node and a tools node.

State holds OpenAI-format message dicts. The tools node raises one `interrupt()` for a risky call
before any side effect; a tool call id runs at most once (see tool_ledger). Model misbehaviour is
repaired here, in the loop: empty replies, several calls in one turn, unknown tools, bad
arguments and the same failing call over and over."""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import Mapping
from dataclasses import replace
from functools import cache
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import interrupt

from agent_core.contract import make_event
from agent_core.contract.event_fields import UsageFields
from agent_core.json_types import JsonObject
from agent_core.llm.client import ModelRequest, ModelTurn, complete
from agent_core.llm.failures import LLMError
from agent_core.loop import usage as token_usage
from agent_core.loop.agents import AGENTS
from agent_core.loop.approvals import decided_args, decided_context, decoded
from agent_core.loop.history import compact
from agent_core.loop.run_context import RunContext
from agent_core.loop.stale_check import stale_note
from agent_core.loop.state import AgentState, AgentUpdate, Failure, appended, parse_args
from agent_core.messages import IMAGES_KEY, PREIMAGE_KEY, Message, ToolCall
from agent_core.prompts import prompt_text
from agent_core.storage.tool_ledger import STOPPED
from agent_core.tools import (
    ToolContext,
    ToolInputError,
    ToolOutcome,
    ToolSpec,
    skills_prompt_section,
)
from agent_core.tools.background import IN_BACKGROUND, StepInBackground
from agent_core.tools.base import Emit
from agent_core.tools.gathering import gone_tool_hint
from agent_core.tools.rerun_dependents import with_dependents
from agent_core.undo.rules import prompt_section as rules_prompt_section
from agent_core.vision import with_image_parts

log = logging.getLogger(__name__)

EMPTY_REPLY_RETRIES = 2
SAME_FAILURE_LIMIT = 3


def _finish(emit: Emit, answer: str, next_items: list[dict[str, str]] | None = None) -> AgentUpdate:
    emit(make_event("final", answer=answer, next_items=next_items or []))
    return {"messages": appended({"role": "assistant", "content": answer}), "done": True}


# -- the model node


def _system_prompt(ctx: RunContext) -> Message:
    agents = "\n".join(f"  - {AGENTS[name].name}: {AGENTS[name].description}" for name in ctx.agent.may_call)
    text = prompt_text(ctx.agent.prompt).replace("{notebook_path}", ctx.notebook_path or "(none open)")
    text = text.replace("{skills}", skills_prompt_section()).replace("{agents}", agents)
    notes = [ctx.policy.prompt_note(), rules_prompt_section(ctx.env.root_dir)]
    return {"role": "system", "content": "\n\n".join([text, *(n for n in notes if n)])}


def _reminder(ctx: RunContext) -> Message:
    how = "reply with an Action or a Final Answer" if ctx.tool_mode == "prompt" else "call a tool, or call final_answer"
    return {"role": "user", "content": f"Your last reply was empty. Continue the task: {how}."}


def _ignored_call_note(problem: str) -> Message:
    return {
        "role": "user",
        "content": f"[Your reply contained a tool call as text, but it did not run ({problem}). To use a tool, call it "
        "with valid arguments; if you are done, give your final answer.]",
    }


async def _ask(ctx: RunContext, messages: list[Message]) -> ModelTurn:
    """One model turn; in "auto" mode a refusal of function calling switches the run to prompt mode."""
    emit = ctx.emit

    def on_retry(error: LLMError, delay: float, attempt: int) -> None:
        message = f"{error.message} Retrying in {delay:g} s (attempt {attempt + 1} of {ctx.settings.max_retries + 1})."
        emit(make_event("error", kind="llm_retrying", message=message, retryable=True))

    def on_token(text: str) -> None:
        # The one event per token: built as the contract's shape directly (llm passes text only),
        # not validated by make_event, which cost as much as the rest of the token's relay.
        emit({"type": "token", "text": text})

    offered = ctx.offered()
    tools = [spec.openai_schema() for spec in offered.values()]

    def validate(name: str, args: object) -> str | None:
        spec = offered.get(name)
        return spec.check_args(args) if spec else f"there is no tool {name!r}; the tools are {sorted(offered)}"

    try:
        request = ModelRequest(messages, tools, ctx.tool_mode, validate, ctx.audit)
        turn = await complete(ctx.settings, request, on_token, on_retry)
    except LLMError as exc:
        if exc.kind != "tools_unsupported" or ctx.settings.tool_calling != "auto" or ctx.tool_mode == "prompt":
            raise
        log.info("endpoint refused function calling; switching to prompt mode: %s", exc.message)
        ctx.tool_mode = "prompt"
        turn = await complete(
            ctx.settings, ModelRequest(messages, tools, "prompt", validate, ctx.audit), on_token, on_retry
        )
    _count(ctx, turn, messages)
    return turn


def _count(ctx: RunContext, turn: ModelTurn, messages: list[Message]) -> None:
    """Add a call's tokens to the run's and the thread's totals and show them, with the context meter."""
    call = token_usage.of_call(turn, messages, ctx.settings.model, ctx.settings.prices)
    ctx.meter.record(call)
    public = token_usage.public
    sent = ctx.take_sent()
    usage: UsageFields = {
        "call": public(call),
        "run": public(ctx.meter.run),
        "thread": public(ctx.meter.thread),
        "context_tokens": call["prompt_tokens"],
        "context_budget": ctx.settings.context_token_budget,
        "summarized": ctx.summarized,
    }
    if sent is not None:
        usage["request"] = sent.model_dump()
    ctx.emit(make_event("usage", **usage))


async def call_model(state: AgentState, runtime: Runtime[RunContext]) -> AgentUpdate:
    ctx = runtime.context
    ctx.begin_node(state)
    update = await _call_model(state, ctx)
    return {**update, **ctx.meter.state()} if not ctx.agent.is_subagent else update


async def _call_model(state: AgentState, ctx: RunContext) -> AgentUpdate:
    outside = state.get("outside_call")
    if outside is not None:
        return _outside_turn(ctx, outside, _call_ids(state.get("messages", [])))
    calls = state.get("model_calls", 0)
    if calls >= ctx.max_model_calls:
        answer = f"I stopped after {ctx.max_model_calls} model calls, the limit for one run. The work so far is in the notebook."
        if ctx.agent.is_subagent:
            return {"messages": appended({"role": "assistant", "content": answer}), "done": True, "model_calls": calls}
        return {
            **_finish(ctx.emit, answer, [{"title": "Continue", "prompt": "Continue where you stopped."}]),
            "model_calls": calls,
        }
    messages, summarized = await compact(
        ctx.settings,
        state.get("messages", []),
        state.get("summary", ""),
        state.get("summary_upto", 0),
        _system_prompt(ctx),
        ctx.audit,
    )
    ctx.summarized = "summary" in summarized
    update: AgentUpdate = {**summarized}
    messages, refused = await _with_images(ctx, state, messages)
    try:
        turn = await _ask(ctx, messages)
    except LLMError as exc:
        if exc.kind != "images_unsupported" or ctx.settings.vision != "auto":
            raise
        log.info("endpoint refused image parts; descriptions only for this thread: %s", exc.message)
        messages = [m for m in messages if not _is_image_message(m)]
        refused = True
        turn = await _ask(ctx, messages)
    if refused:
        update["vision_refused"] = True
    calls += 1
    for _ in range(EMPTY_REPLY_RETRIES):
        if not turn.empty or calls >= ctx.max_model_calls:
            break
        turn = await _ask(ctx, [*messages, _reminder(ctx)])
        calls += 1
    if turn.ignored_call and not turn.tool_calls and calls < ctx.max_model_calls:
        turn = await _ask(
            ctx, [*messages, {"role": "assistant", "content": turn.content}, _ignored_call_note(turn.ignored_call)]
        )
        calls += 1
    if not turn.tool_calls and not turn.empty and calls < ctx.max_model_calls:
        # issue 42: an answer that leaves the agent's stale cells unsaid goes back once
        note = await stale_note(ctx, state.get("messages", []), turn.final_answer or turn.content)
        if note is not None:
            turn = await _ask(
                ctx, [*messages, {"role": "assistant", "content": turn.content}, {"role": "user", "content": note}]
            )
            calls += 1
    update["model_calls"] = calls
    if turn.empty:
        answer = "The model returned empty replies, so I stopped. " + (
            "Servers that cannot stream tool calls for a model do this (llama.cpp does): "
            'try the setting tool_calling = "prompt", or another model.'
            if ctx.tool_mode == "native"
            else "The server's log may say why (a chat format that needs tools, a context too small); or try another model."
        )
        return {**update, **_finish(ctx.emit, answer, [{"title": "Try again", "prompt": "Please try again."}])}
    return {**update, **_model_reply(ctx, turn, _call_ids(state.get("messages", [])))}


async def _with_images(ctx: RunContext, state: AgentState, messages: list[Message]) -> tuple[list[Message], bool]:
    vision = ctx.settings.vision
    # Prompt mode flattens messages to text: no parts to carry an image.
    if (
        vision == "off"
        or (vision == "auto" and state.get("vision_refused"))
        or ctx.settings.max_images <= 0
        or ctx.tool_mode == "prompt"
        or ctx.settings.data_policy == "schema_only"  # images are data (the adapter would withhold them anyway)
    ):
        return messages, bool(state.get("vision_refused"))
    return with_image_parts(messages, ctx.settings.max_images)[0], False


def _is_image_message(message: Message) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(isinstance(p, dict) and p.get("type") == "image_url" for p in content)


def _call_ids(messages: list[Message]) -> set[str]:
    return {call["id"] for m in messages for call in m.get("tool_calls") or []}


def _outside_turn(ctx: RunContext, call: ToolCall, used_ids: set[str]) -> AgentUpdate:
    """An outside agent's run: its call is the turn (shown and approved as the model's are); once
    its result is in, the run ends there, and the outside agent reads the result."""
    if call["id"] in used_ids:
        return {"done": True}
    return _model_reply(ctx, ModelTurn(tool_calls=[call]), used_ids)


def _model_reply(ctx: RunContext, turn: ModelTurn, used_ids: set[str]) -> AgentUpdate:
    message: Message = {"role": "assistant", "content": turn.content}
    if not turn.tool_calls:
        answer = turn.final_answer if turn.final_answer is not None else turn.content.strip()
        if turn.cut:
            answer += _cut_note(ctx.settings.max_reply_tokens)
        if not ctx.agent.is_subagent:  # a sub-agent's text is its report to the planner, not the answer
            ctx.emit(make_event("final", answer=answer, next_items=[]))
        return {"messages": appended(message), "done": True}
    first, *rest = turn.tool_calls  # one tool at a time: approvals and results stay in order
    if first["id"] in used_ids:  # some servers number calls per reply ("call_0" every time)
        first = {**first, "id": f"call_{uuid.uuid4().hex[:16]}"}
    message["tool_calls"] = [first]
    args, _ = parse_args(first["function"]["arguments"])
    name = first["function"]["name"]
    ctx.emit(
        make_event("tool_call", id=first["id"], name=name, args=args or {}, needs_approval=ctx.needs_approval(name))
    )
    return {"messages": appended(message), "done": False, "deferred": [c["function"]["name"] for c in rest]}


def _cut_note(cap: int | None) -> str:
    limit = (
        f"the limit of {cap} tokens a reply (the setting max_reply_tokens)"
        if cap is not None
        else "the endpoint's limit on a reply (or the end of the model's context window)"
    )
    return f"\n\n(My reply was cut off here: it reached {limit}.)"


# -- the tools node


async def _run_tool(call: ToolCall, ctx: RunContext) -> ToolOutcome:
    name = call["function"]["name"]
    spec = ctx.tools.get(name)
    if spec is None:
        hint = f" {ctx.agent.label} may not delegate to other agents." if name == "task" else gone_tool_hint(name)
        return ToolOutcome("error", f"There is no tool named {name!r}.{hint} Available tools: {', '.join(ctx.tools)}.")
    if not ctx.policy.offers(name, spec):  # the model called it anyway: refused before anything runs
        return ToolOutcome("error", ctx.policy.refusal(name))
    args, problem = parse_args(call["function"]["arguments"])
    problem = problem or spec.check_args(args)
    if problem or args is None:
        return ToolOutcome("error", f"Invalid call to {name}: {problem}. Correct the arguments and call it again.")
    recorded = await ctx.ledger.lookup(ctx.ledger_scope, call["id"])
    if recorded is not None and recorded.content == IN_BACKGROUND.content:
        return await _background_outcome(call["id"], ctx)
    if recorded is not None:
        return recorded
    tool_ctx = ctx.tool_context(call["id"])
    try:
        await spec.precheck(args, tool_ctx)
    except ToolInputError as exc:
        return ToolOutcome("error", f"{name} failed: {exc}")
    # issue 37: a call that will run sandboxed (explore, a read-only command) is not asked
    waived = (
        ctx.needs_approval(name) and not ctx.policy.asks_for_plan(name) and await spec.sandbox_waives(args, tool_ctx)
    )
    if waived:
        tool_ctx = replace(tool_ctx, decision="sandboxed")  # the tool then runs it in its sandbox, nowhere else
    elif ctx.needs_approval(name):
        # The node re-runs from the top on resume; nothing above has side effects.
        decision = decoded(
            interrupt(
                await ctx.approvals.request_once(spec, args, tool_ctx, ctx.agent.name, ctx.task_id, ctx.ledger_scope)
            )
        )
        tool_ctx = decided_context(decision, args, tool_ctx)
        args, rejected = decided_args(decision, args)
        if rejected is not None:
            await ctx.ledger.finished(ctx.ledger_scope, call["id"], rejected)
            return rejected
        if decision.rerun_dependents:  # issue 42: one approval for the cell and the cells it makes stale
            spec = with_dependents(spec)
    return await _run_recorded(spec, args or {}, tool_ctx, ctx)


async def _run_recorded(spec: ToolSpec, args: JsonObject, tool_ctx: ToolContext, ctx: RunContext) -> ToolOutcome:
    if not spec.recorded:  # a sub-agent's task resumes inside; its own calls are recorded
        return await _run_unrecorded(spec, args, tool_ctx)
    await ctx.ledger.started(ctx.ledger_scope, tool_ctx.call_id)
    try:
        outcome = await spec.run(args, tool_ctx)
    except StepInBackground:  # the run ends as waiting_for_cell; the step's host has it now
        await ctx.ledger.finished(ctx.ledger_scope, tool_ctx.call_id, IN_BACKGROUND)
        raise
    except ToolInputError as exc:
        outcome = ToolOutcome("error", f"{spec.name} failed: {exc}")
    except asyncio.CancelledError:
        await ctx.ledger.finished(ctx.ledger_scope, tool_ctx.call_id, STOPPED)
        raise
    except Exception as exc:  # a tool failure is the model's to handle, not a crash of the run
        log.exception("tool %s failed", spec.name)
        outcome = ToolOutcome("error", f"{spec.name} failed: {type(exc).__name__}: {exc}")
    await ctx.ledger.finished(ctx.ledger_scope, tool_ctx.call_id, outcome)
    return outcome


async def _background_outcome(call_id: str, ctx: RunContext) -> ToolOutcome:
    """A step that went on in the background (issue 38), now that it ended or the user let it go: its
    outcome from the host that followed it, recorded as any other. A host that does not know it (the
    server restarted meanwhile) says so in its place."""
    outcome = ctx.background.take(ctx.thread_id, call_id) if ctx.background is not None else None
    if outcome is None:
        outcome = IN_BACKGROUND
    await ctx.ledger.finished(ctx.ledger_scope, call_id, outcome)
    return outcome


async def _run_unrecorded(spec: ToolSpec, args: JsonObject, tool_ctx: ToolContext) -> ToolOutcome:
    try:
        return await spec.run(args, tool_ctx)
    except ToolInputError as exc:
        return ToolOutcome("error", f"{spec.name} failed: {exc}")


# -- delegation (multi-agent mode)


@cache
def subagent_graph() -> AgentGraph:
    # No checkpointer of its own: invoked inside a node, it saves into the parent's, under its task.
    return build_graph(None)


def _fingerprint(call: ToolCall) -> str:
    args, _ = parse_args(call["function"]["arguments"])
    canonical = json.dumps(args, sort_keys=True) if args is not None else call["function"]["arguments"]
    return f"{call['function']['name']}:{canonical}"


def _notes(state: AgentState, ctx: RunContext, spec: ToolSpec | None) -> str:
    """What the model should know beside the result: cut calls, and the open todos after a read."""
    notes = []
    if state.get("deferred"):
        notes.append(
            f"Only this call ran; these were not run: {', '.join(state['deferred'])}. Call them one at a time if still needed."
        )
    open_todos = [t["content"] for t in state.get("todos", []) if t.get("status") != "completed"]
    if spec is not None and spec.read_only and open_todos:
        notes.append(f"Continue with your todo list. Open: {'; '.join(open_todos)}.")
    return "".join(f"\n\n[{note}]" for note in notes)


async def call_tools(state: AgentState, runtime: Runtime[RunContext]) -> AgentUpdate:
    ctx = runtime.context
    if ctx.until_saved is not None and runtime.execution_info is not None:
        # The step before this one (the model's call) is saved in the background: nothing runs
        # before it is, as a crash must not leave a ran call that the thread never knew of.
        # The node's namespace ends with its own task ("tools:<id>"); its graph's is what comes before.
        graph_ns = runtime.execution_info.checkpoint_ns.rpartition("|")[0]
        await ctx.until_saved(graph_ns, runtime.execution_info.checkpoint_id)
    ctx.begin_node(state)
    update = await _call_tools(state, ctx)
    if ctx.call_answered is not None and state.get("outside_call") is not None:
        ctx.call_answered([state["messages"][-1], *update["messages"]["append"]])
    return {**update, **ctx.meter.state()} if not ctx.agent.is_subagent else update


async def _call_tools(state: AgentState, ctx: RunContext) -> AgentUpdate:
    call = state["messages"][-1]["tool_calls"][0]
    name = call["function"]["name"]
    note = await _final_answer_note(state, call, ctx) if name == "final_answer" else None
    outcome = ToolOutcome("error", note) if note is not None else await _run_tool(call, ctx)
    ctx.emit(outcome.result_event(call["id"], name))
    content = outcome.content + _notes(state, ctx, ctx.tools.get(name))
    plan_approved = ctx.policy.asks_for_plan(name) and outcome.status == "ok"
    if plan_approved:
        content += "\n\n[The user approved this plan. Carry it out now; each step that changes something still asks for approval.]"
    messages: list[Message] = [{"role": "tool", "tool_call_id": call["id"], "content": content}]
    if outcome.images:
        messages[0][IMAGES_KEY] = list(outcome.images)
    if outcome.preimage:  # for a rewind (agent_core.undo.preimages); never sent to the model
        messages[0][PREIMAGE_KEY] = outcome.preimage
    update: AgentUpdate = {"deferred": [], **({"plan_approved": True} if plan_approved else {})}
    update.update(outcome.state)
    # An outside agent's run is its one call: it ends with the result, without a model step to say so.
    update["done"] = outcome.ends_run or state.get("outside_call") is not None
    update["failure"] = _failure_streak(state, call, outcome)
    if update["failure"].get("count", 0) >= SAME_FAILURE_LIMIT:
        answer = (
            f"I stopped: the same call to `{name}` failed {SAME_FAILURE_LIMIT} times in a row. Last error:\n\n"
            f"> {outcome.content[:500]}\n\nRephrase the request or fix the cause, then ask again."
        )
        messages += _finish(ctx.emit, answer)["messages"]["append"]
        update["done"] = True
    update["messages"] = appended(*messages)
    return update


async def _final_answer_note(state: AgentState, call: ToolCall, ctx: RunContext) -> str | None:
    """final_answer's text checked for the stale cells the run left (agent_core.loop.stale_check)."""
    args, _ = parse_args(call["function"]["arguments"])
    answer = args.get("answer") if isinstance(args, dict) else None
    return await stale_note(ctx, state["messages"][:-1], answer) if isinstance(answer, str) else None


def _failure_streak(state: AgentState, call: ToolCall, outcome: ToolOutcome) -> Failure:
    if outcome.status != "error":
        return {}
    key = _fingerprint(call)
    previous = state.get("failure") or {}
    return {"call": key, "count": previous.get("count", 0) + 1 if previous.get("call") == key else 1}


# -- the graph


def _after_model(state: Mapping[str, object]) -> str:
    return END if state.get("done") else "tools"


def _after_tools(state: Mapping[str, object]) -> str:
    return END if state.get("done") else "model"


AgentGraph = CompiledStateGraph[AgentState, RunContext, AgentState, AgentState]


def build_graph(checkpointer: BaseCheckpointSaver[Any] | None) -> AgentGraph:
    graph = StateGraph(AgentState, context_schema=RunContext)
    graph.add_node("model", call_model, input_schema=AgentState)
    graph.add_node("tools", call_tools, input_schema=AgentState)
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", _after_model, ["tools", END])
    graph.add_conditional_edges("tools", _after_tools, ["model", END])
    return graph.compile(checkpointer=checkpointer)
