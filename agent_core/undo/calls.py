"""What undo reads of the tool call a step is: the snapshot before a cell and the approval card's
impact are taken for a call of run_cell, edit_cell or execute_command. The tools' ToolContext
fits these protocols; undo, a floor below the tools, names only what it reads."""

from __future__ import annotations

from typing import Protocol

from agent_core.config.agent_settings import AgentSettings
from agent_core.environment import ToolEnvironment
from agent_core.json_types import JsonObject
from agent_core.undo.book import UndoBook


class StepRun(Protocol):
    """The run a step belongs to: its driver keeps the book of the steps an undo may restore."""

    @property
    def undo(self) -> UndoBook: ...


class StepCall(Protocol):
    """One tool call, as undo reads it."""

    @property
    def call_id(self) -> str: ...
    @property
    def env(self) -> ToolEnvironment: ...
    @property
    def settings(self) -> AgentSettings: ...
    @property
    def thread_id(self) -> str: ...
    @property
    def decision(self) -> str: ...
    @property
    def proposed_args(self) -> JsonObject | None: ...
    @property
    def run(self) -> StepRun | None: ...
