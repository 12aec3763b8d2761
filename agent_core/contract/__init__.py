"""The wire contract, defined once as Pydantic models: every event of a thread's stream (events),
every route's request and answer (routes), and the enums they share (shared, choices). Tool arguments
are models too, next to each tool's code (agent_core/tools). The OpenAPI document and the panel's
labextension_src/contract.gen.ts are generated from these models (agent_core/contract_files) by
scripts/generate_contract.py; tests/test_contract.py fails when a generated file is stale.

The names below load on first use: building the models takes tens of milliseconds that Jupyter's
start-up should not pay (the settings need only `choices`)."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what mypy checks against; at run time each loads on first use (below)
    from agent_core.contract.choices import CellStatus as CellStatus
    from agent_core.contract.choices import Mode as Mode
    from agent_core.contract.choices import RunStatus as RunStatus
    from agent_core.contract.choices import ThreadStatus as ThreadStatus
    from agent_core.contract.choices import TodoStatus as TodoStatus
    from agent_core.contract.choices import ToolCalling as ToolCalling
    from agent_core.contract.choices import ToolStatus as ToolStatus
    from agent_core.contract.event_fields import EventDict as EventDict
    from agent_core.contract.event_fields import make_event as make_event
    from agent_core.contract.events import EVENT_TYPES as EVENT_TYPES
    from agent_core.contract.events import CellwrightEvent as CellwrightEvent
    from agent_core.contract.events import EventType as EventType
    from agent_core.contract.events import StreamEvent as StreamEvent
    from agent_core.contract.events import validate_event as validate_event
    from agent_core.contract.shared import WireModel as WireModel

_HOME = {
    **dict.fromkeys(("EVENT_TYPES", "CellwrightEvent", "EventType", "StreamEvent", "validate_event"), "events"),
    **dict.fromkeys(("make_event", "EventDict"), "event_fields"),  # typed per event type: mypy checks emitters
    **dict.fromkeys(
        ("CellStatus", "Mode", "RunStatus", "ThreadStatus", "TodoStatus", "ToolCalling", "ToolStatus"), "choices"
    ),
    "WireModel": "shared",
}
__all__ = list(_HOME)


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{_HOME[name]}", __name__), name)
    globals()[name] = value
    return value
