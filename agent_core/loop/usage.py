"""Token usage: each model call's count (the endpoint's, or an estimate marked as one), its cost
when the `prices` setting names the model, and the run's and the thread's totals, kept in the
graph's state so they survive restarts. Plain dicts in the wire shape (contract.shared.Usage)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

from agent_core.llm.client import estimate_tokens

if TYPE_CHECKING:  # the adapter is imported when a call's usage is estimated, not with this module
    from agent_core.llm.client import ModelTurn
    from agent_core.messages import Message

UsageDict = dict[str, Any]


class UsageState(TypedDict):
    """The totals as graph state fields (UsageMeter.state)."""

    usage: UsageDict
    run_usage: UsageDict


def zero() -> UsageDict:
    return {"prompt_tokens": 0, "completion_tokens": 0, "cached_tokens": None, "estimated": False, "cost": None}


def of_call(
    turn: ModelTurn, messages: list[Message], model: str, prices: Mapping[str, Mapping[str, float]]
) -> UsageDict:
    """One model call's usage: what the endpoint reported, else Cellwright's estimate."""
    reported = getattr(turn, "usage", None)
    if reported is not None:
        usage = {
            "prompt_tokens": reported.prompt_tokens,
            "completion_tokens": reported.completion_tokens,
            "cached_tokens": reported.cached_tokens,
            "estimated": reported.estimated,
        }
    else:
        written = turn.content + "".join(c["function"]["arguments"] for c in turn.tool_calls)
        usage = {
            "prompt_tokens": estimate_tokens(messages),
            "completion_tokens": len(written) // 4,
            "cached_tokens": None,
            "estimated": True,
        }
    price = prices.get(model)
    usage["cost"] = (
        (usage["prompt_tokens"] * price["prompt"] + usage["completion_tokens"] * price["completion"]) / 1_000_000
        if price
        else None
    )
    return usage


def added(total: UsageDict, call: UsageDict) -> UsageDict:
    def plus(a: Any, b: Any) -> Any:
        return b if a is None else a if b is None else a + b

    return {
        "prompt_tokens": total["prompt_tokens"] + call["prompt_tokens"],
        "completion_tokens": total["completion_tokens"] + call["completion_tokens"],
        "cached_tokens": plus(total.get("cached_tokens"), call.get("cached_tokens")),
        "estimated": bool(total.get("estimated")) or bool(call.get("estimated")),
        "cost": plus(total.get("cost"), call.get("cost")),
    }


def public(usage: UsageDict) -> UsageDict:
    """Without the optional figures nobody reported (no `cost` without a price)."""
    return {k: v for k, v in usage.items() if v is not None or k in ("prompt_tokens", "completion_tokens", "estimated")}


@dataclass
class UsageMeter:
    """The run's and the thread's totals while a segment runs, shared by the top agent and its
    sub-agents (whose calls count for the thread too); the top agent's nodes save them."""

    thread: UsageDict = field(default_factory=zero)
    run: UsageDict = field(default_factory=zero)

    def load(self, state: Mapping[str, Any]) -> None:
        self.thread = dict(state.get("usage") or zero())
        self.run = dict(state.get("run_usage") or zero())

    def record(self, call: UsageDict) -> None:
        self.thread = added(self.thread, call)
        self.run = added(self.run, call)

    def state(self) -> UsageState:
        return {"usage": self.thread, "run_usage": self.run}
