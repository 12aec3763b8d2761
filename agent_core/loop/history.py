"""What the model sees of a thread: every tool call answered, and old turns summarised once the
history outgrows the token budget (the last turns stay verbatim)."""

from __future__ import annotations

from typing import TypedDict

from agent_core.config.agent_settings import AgentSettings
from agent_core.llm.client import RequestAudit, estimate_tokens, summary_completion
from agent_core.messages import Message


class SummaryUpdate(TypedDict, total=False):
    """The state fields compact() changes when it summarises older turns."""

    summary: str
    summary_upto: int


SUMMARY_PROMPT = (
    "Summarise the conversation below for your own later use. Keep what matters to continue the work: "
    "the user's goals and preferences, what was done (cells run and their key results and numbers, variables "
    "and files created), decisions, rejections and their reasons, and what is still open. Be concise and factual."
)


def with_tool_results(messages: list[Message]) -> list[Message]:
    """Every tool call answered: a stop can leave one dangling, and servers reject that."""
    answered = {m.get("tool_call_id") for m in messages if m.get("role") == "tool"}
    out: list[Message] = []
    for message in messages:
        out.append(message)
        for call in message.get("tool_calls") or []:
            if call["id"] not in answered:
                out.append({"role": "tool", "tool_call_id": call["id"], "content": "Not run: the run was stopped."})
    return out


def summary_cut(messages: list[Message], keep_tokens: int, start: int) -> int:
    """The first index to keep verbatim: as early as fits `keep_tokens`, never between a tool call
    and its result (so at a user or assistant message)."""
    cut = len(messages)
    kept = 0
    for index in range(len(messages) - 1, start - 1, -1):
        kept += estimate_tokens([messages[index]])
        if kept > keep_tokens:
            break
        if messages[index].get("role") in ("user", "assistant"):
            cut = index
    return cut


async def compact(
    settings: AgentSettings,
    messages: list[Message],
    summary: str,
    summary_upto: int,
    system: Message,
    audit: RequestAudit | None = None,
) -> tuple[list[Message], SummaryUpdate]:
    """The messages to send, and a state update when older turns had to be summarised."""
    visible = _with_summary(system, summary, with_tool_results(messages[summary_upto:]))
    if estimate_tokens(visible) <= settings.context_token_budget:
        return visible, {}
    cut = summary_cut(messages, settings.context_token_budget // 2, summary_upto)
    if cut <= summary_upto:
        return visible, {}  # the last turn alone is over budget: nothing older to fold away
    older = with_tool_results(messages[summary_upto:cut])
    previous: list[Message] = [{"role": "user", "content": f"Earlier summary:\n{summary}"}] if summary else []
    new_summary = await summary_completion(settings, SUMMARY_PROMPT, previous + older, _transcript, audit)
    update: SummaryUpdate = {"summary": new_summary, "summary_upto": cut}
    return _with_summary(system, new_summary, with_tool_results(messages[cut:])), update


def _with_summary(system: Message, summary: str, messages: list[Message]) -> list[Message]:
    if not summary:
        return [system, *messages]
    note: Message = {"role": "user", "content": f"(Summary of the earlier conversation)\n{summary}"}
    return [system, note, *messages]


def _transcript(messages: list[Message]) -> str:
    return "\n\n".join(f"{m['role']}: {m.get('content') or ''}{_calls_text(m)}" for m in messages)


def _calls_text(message: Message) -> str:
    calls = message.get("tool_calls") or []
    return "".join(f"\n[called {c['function']['name']}({c['function']['arguments'][:500]})]" for c in calls)
