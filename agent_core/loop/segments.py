"""What a run segment starts with (Segment), what the driver hands its caller (PreparedRun), and
the approval event an interrupt becomes: the values ThreadRunner passes around."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agent_core.contract import make_event

if TYPE_CHECKING:
    from agent_core.contract.shared import LiveCell


@dataclass
class PreparedRun:
    """A run segment the runner has accepted (checked under the caller's lock): `run_id` is known at
    once, `drive()` does the work (gathering its tools and context first) and returns the
    `run_finished` status. The server awaits `drive()` in a task of its own; the magic in place."""

    thread_id: str
    run_id: str
    drive: Callable[[], Awaitable[str]]


@dataclass(frozen=True)
class Segment:
    """What a run segment starts with, beside its thread and graph input."""

    mode: str
    autonomy: str
    message: str  # the user's message; "" for a segment an approval resumed
    notebook_cells: list[dict[str, Any]] | None = None  # as the browser sent them
    driver: str = ""  # an outside agent's run: who asked (RunContext.driver)


def browser_cells(cells: list[LiveCell] | None) -> list[dict[str, Any]] | None:
    return None if cells is None else [cell.model_dump() for cell in cells]


def approval_event(payload: dict[str, Any]) -> dict[str, Any]:
    fields = {k: v for k, v in payload.items() if k != "agent"}
    return {**make_event("approval_required", **fields), "agent": payload.get("agent", "main")}
