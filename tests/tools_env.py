"""A small ToolEnvironment for the pure parts of the tools (files, shell, skills): a root folder and
no kernel. Kernel-related parts are tested against the real KernelEnvironment (test_tools_routes)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_core.config.agent_settings import AgentSettings
from agent_core.tools import CellRun, ToolContext, ToolInputError
from agent_core.workspace import Workspace


@dataclass
class FolderEnv:
    root_dir: Path
    workspace: Workspace | None = None  # None: the safe default policy for root_dir

    async def run_cell(self, call_id: str, code: str, emit: Any) -> CellRun:
        raise ToolInputError("no kernel in this test environment")

    async def evaluate_json(self, expression: str) -> Any:
        raise ToolInputError("no kernel in this test environment")


@dataclass
class Ctx:
    """A ToolContext over a FolderEnv that records what the tool emits."""

    root: Path
    events: list[dict[str, Any]] = field(default_factory=list)
    command_timeout: float = 20.0
    workspace: Workspace | None = None

    def __call__(self, call_id: str = "call_1") -> ToolContext:
        settings = AgentSettings(command_timeout=self.command_timeout)
        return ToolContext(call_id, FolderEnv(self.root, self.workspace), self.events.append, settings)
