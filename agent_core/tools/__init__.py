"""The tool registry: every tool the model can see, by name, defined once. Everything else (the
tool names of the contract, the risky ones, each agent's list) is derived from or checked against it."""

from __future__ import annotations

from .base import CellPlacement, CellRun, ToolContext, ToolEnvironment, ToolInputError, ToolOutcome, ToolSpec
from .cell_editing import EDIT_CELL
from .delegation import TASK
from .diagnostics import DIAGNOSTICS
from .files import LIST_FILES, READ_FILE
from .kernel_control import RESTART_KERNEL
from .knowledge import SEARCH_KNOWLEDGE
from .notebook import ADD_MARKDOWN, RUN_CELL
from .notebook_reader import READ_NOTEBOOK
from .planning import FINAL_ANSWER, WRITE_TODOS
from .resources import CHECK_RESOURCE
from .search import SEARCH_NOTEBOOKS, SEARCH_WORKSPACE
from .shell import EXECUTE_COMMAND
from .skills import LOAD_SKILL, skills_prompt_section
from .sql import SQL_QUERY
from .writes import EDIT_FILE, WRITE_FILE

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
