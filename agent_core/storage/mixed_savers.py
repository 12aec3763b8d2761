"""A LangGraph saver class with one of our abilities mixed in, made once per (ability, saver) pair:
the checkpointer's own class stays LangGraph's, and savers of one kind share one class."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from langgraph.checkpoint.base import BaseCheckpointSaver

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig

Saver = TypeVar("Saver", bound=BaseCheckpointSaver[Any])
Graph = tuple[str, str]  # (thread_id, checkpoint_ns): a thread's own graph (ns ""), or a sub-agent's in it

_MADE: dict[tuple[type[Any], type[Any], tuple[tuple[str, Any], ...]], type[Any]] = {}


def mixed(ability: type[Any], saver_class: type[Saver], prefix: str, **attributes: Any) -> type[Saver]:
    """`saver_class` with `ability` first in its MRO, named `prefix` + the saver's name."""
    # A staticmethod is a new object each time: the function it holds names it.
    key = (ability, saver_class, tuple(sorted((k, getattr(v, "__func__", v)) for k, v in attributes.items())))
    made = _MADE.get(key)
    if made is None:
        made = _MADE[key] = type(f"{prefix}{saver_class.__name__}", (ability, saver_class), attributes)
    return made


def graph_of(config: RunnableConfig) -> Graph:
    """The graph a checkpoint config names."""
    configurable = config.get("configurable") or {}
    return str(configurable.get("thread_id", "")), str(configurable.get("checkpoint_ns") or "")
