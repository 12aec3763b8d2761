"""The tool registry: every tool the model can see, by name, defined once. Everything else (the
tool names of the contract, the risky ones, each agent's list) is derived from or checked against it."""

from __future__ import annotations

from agent_core.tools.base import (
    CellPlacement,
    CellRun,
    ToolContext,
    ToolEnvironment,
    ToolInputError,
    ToolOutcome,
    ToolSpec,
)
from agent_core.tools.cell_editing import EDIT_CELL
from agent_core.tools.delegation import TASK
from agent_core.tools.diagnostics import DIAGNOSTICS
from agent_core.tools.explore import EXPLORE  # issue 37
from agent_core.tools.files import LIST_FILES, READ_FILE
from agent_core.tools.kernel_control import RESTART_KERNEL
from agent_core.tools.knowledge import SEARCH_KNOWLEDGE
from agent_core.tools.notebook import ADD_MARKDOWN, RUN_CELL
from agent_core.tools.notebook_reader import READ_NOTEBOOK
from agent_core.tools.planning import FINAL_ANSWER, WRITE_TODOS
from agent_core.tools.rerun import RERUN_STALE
from agent_core.tools.resources import CHECK_RESOURCE
from agent_core.tools.search import SEARCH_NOTEBOOKS, SEARCH_WORKSPACE
from agent_core.tools.shell import EXECUTE_COMMAND
from agent_core.tools.skills import LOAD_SKILL, skills_prompt_section
from agent_core.tools.sql import SQL_QUERY
from agent_core.tools.verify import VERIFY_NOTEBOOK
from agent_core.tools.writes import EDIT_FILE, WRITE_FILE

TOOLS: dict[str, ToolSpec] = {
    spec.name: spec
    for spec in (
        WRITE_TODOS,
        RUN_CELL,
        ADD_MARKDOWN,
        FINAL_ANSWER,
        EXECUTE_COMMAND,
        CHECK_RESOURCE,
        DIAGNOSTICS,
        READ_FILE,
        LIST_FILES,
        WRITE_FILE,
        EDIT_FILE,
        SEARCH_WORKSPACE,
        SEARCH_NOTEBOOKS,
        LOAD_SKILL,
        TASK,
        READ_NOTEBOOK,
        EDIT_CELL,
        RESTART_KERNEL,
        SEARCH_KNOWLEDGE,
        SQL_QUERY,
        VERIFY_NOTEBOOK,
        EXPLORE,  # issue 37
        RERUN_STALE,  # issue 42
    )
}
TOOL_NAMES: tuple[str, ...] = tuple(TOOLS)
RISKY_TOOLS: frozenset[str] = frozenset(name for name, spec in TOOLS.items() if spec.needs_approval)

__all__ = [
    "TOOLS",
    "TOOL_NAMES",
    "RISKY_TOOLS",
    "CellPlacement",
    "CellRun",
    "ToolContext",
    "ToolEnvironment",
    "ToolInputError",
    "ToolOutcome",
    "ToolSpec",
    "skills_prompt_section",
]
