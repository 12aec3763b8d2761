"""The kernel probes a run asks for ahead (agent_core.loop.run_tools.ask_probes_ahead) are exactly those
its start then evaluates: none the run would not make (a run whose settings turn the namespace snapshot
off must not have the kernel list its variables), none it makes without. The asking ahead itself is
tested against a real kernel in tests/test_kernel_executor.py."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from agent_core.config.agent_settings import AgentSettings
from agent_core.contract.bodies import StartRun
from agent_core.loop.run_tools import RunTools, ask_probes_ahead
from agent_core.tools import CellRun, ToolInputError
from agent_core.undo.book import UndoBook

SNAPSHOT, SUMMARIES = "['snapshot'](", "['summaries']("  # each probe's entry, as its expression calls it


@dataclass
class RecordingKernel:
    """A ToolEnvironment whose kernel answers every evaluation with nothing (no variables, no @tool
    functions) and records what it was asked, ahead and when awaited."""

    root_dir: Path
    workspace: None = None
    edits_cells: bool = False
    ahead: list[str] = field(default_factory=list)
    asked: list[str] = field(default_factory=list)

    def ask_ahead(self, expressions: list[str]) -> None:
        self.ahead += expressions

    async def evaluate_json(self, expression: str) -> Any:
        self.asked.append(expression)
        return {"variables": [], "total": 0} if SNAPSHOT in expression else []

    async def run_cell(self, call_id: str, code: str, emit: Any, placement: Any = None) -> CellRun:
        raise ToolInputError("not in this test")

    async def restart_kernel(self) -> str:
        raise ToolInputError("not in this test")

    async def kernel_identity(self) -> str | None:
        return None


@pytest.mark.parametrize(
    ("message", "settings"),
    [
        ("summarize the data", AgentSettings()),
        ("summarize the data", AgentSettings(namespace_snapshot=False)),
        ("plot @sales by month", AgentSettings()),
    ],
)
async def test_the_probes_asked_ahead_are_those_the_runs_start_evaluates(
    tmp_path: Path, message: str, settings: AgentSettings
) -> None:
    kernel = RecordingKernel(tmp_path)
    ask_probes_ahead(kernel, message, settings)
    await RunTools(None).first_segment("t1", StartRun(message=message), kernel, settings, {}, UndoBook())
    assert kernel.ahead, "a run with a kernel asks for its @tool functions ahead at least"
    assert set(kernel.ahead) <= set(kernel.asked), "asked ahead but never used"
    mentioned = [e for e in kernel.asked if SUMMARIES in e]  # what an @mention resolves: not known ahead
    assert set(kernel.asked) - set(mentioned) == set(kernel.ahead), "evaluated at the start, not asked ahead"
    assert any(SNAPSHOT in e for e in kernel.ahead) == (settings.namespace_snapshot and "@" not in message)
