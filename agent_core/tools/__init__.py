"""The tool registry: every tool the model can see, by name."""
from __future__ import annotations

from .base import CellRun, ToolContext, ToolEnvironment, ToolInputError, ToolOutcome, ToolSpec
from .diagnostics import DIAGNOSTICS
from .files import EDIT_FILE, LIST_FILES, READ_FILE, WRITE_FILE
from .notebook import ADD_MARKDOWN, RUN_CELL
from .planning import FINAL_ANSWER, WRITE_TODOS
from .resources import CHECK_RESOURCE
from .search import SEARCH_NOTEBOOKS, SEARCH_WORKSPACE
from .shell import EXECUTE_COMMAND
from .skills import LOAD_SKILL, skills_prompt_section

# Every tool name of API.md; the ones not built yet are listed so the contract stays in one place.
TOOL_NAMES: tuple[str, ...] = (
    "run_cell", "add_markdown", "write_todos", "final_answer", "execute_command", "check_resource",
    "diagnostics", "read_file", "list_files", "write_file", "edit_file", "search_workspace",
    "search_notebooks", "load_skill", "task",
)  # fmt: skip

TOOLS: dict[str, ToolSpec] = {
    spec.name: spec
    for spec in (
        WRITE_TODOS, RUN_CELL, ADD_MARKDOWN, FINAL_ANSWER, EXECUTE_COMMAND, CHECK_RESOURCE, DIAGNOSTICS,
        READ_FILE, LIST_FILES, WRITE_FILE, EDIT_FILE, SEARCH_WORKSPACE, SEARCH_NOTEBOOKS, LOAD_SKILL,
    )
}  # fmt: skip
RISKY_TOOLS: frozenset[str] = frozenset(name for name, spec in TOOLS.items() if spec.needs_approval)

__all__ = [
    "TOOLS", "TOOL_NAMES", "RISKY_TOOLS", "CellRun", "ToolContext", "ToolEnvironment",
    "ToolInputError", "ToolOutcome", "ToolSpec", "skills_prompt_section",
]  # fmt: skip
