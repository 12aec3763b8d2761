"""The wire contract, defined once as Pydantic models: every event of a thread's stream (events),
every route's request and answer (routes), and the enums they share (shared). Tool arguments are
models too, next to each tool's code (agent_core/tools). The OpenAPI document (openapi) and the
panel's labextension_src/contract.gen.ts (typescript) are generated from these models by
scripts/generate_contract.py; tests/test_contract.py fails when a generated file is stale."""
from __future__ import annotations

from .events import EVENT_TYPES, CellwrightEvent, EventType, StreamEvent, make_event, validate_event
from .shared import CellStatus, Mode, RunStatus, ThreadStatus, TodoStatus, ToolCalling, ToolStatus, WireModel

__all__ = [
    "EVENT_TYPES", "CellwrightEvent", "EventType", "StreamEvent", "make_event", "validate_event",
    "CellStatus", "Mode", "RunStatus", "ThreadStatus", "TodoStatus", "ToolCalling", "ToolStatus", "WireModel",
]  # fmt: skip
