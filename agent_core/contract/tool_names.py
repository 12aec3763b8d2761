"""Every tool the model can see, by name, in the registry's order. Written from agent_core.tools by
scripts/generate_contract.py (do not edit; tests/test_contract.py fails when it is stale): the settings
(agent_core.config), a floor below the tools, check the tool names an operator gives against it."""

from __future__ import annotations

TOOL_NAMES: tuple[str, ...] = (
    "write_todos",
    "run_cell",
    "add_markdown",
    "final_answer",
    "execute_command",
    "check_resource",
    "diagnostics",
    "read_file",
    "list_files",
    "write_file",
    "edit_file",
    "search_workspace",
    "search_notebooks",
    "load_skill",
    "task",
    "read_notebook",
    "edit_cell",
    "restart_kernel",
    "search_knowledge",
    "sql_query",
    "verify_notebook",
    "explore",
    "rerun_stale",
)
