"""The wire contract is defined once in Python and mirrored once in labextension_src/tokens.ts:
these fail when the two drift, or when a tool's arguments drift from API.md."""
from __future__ import annotations

import re
from pathlib import Path

from agent_core.events import EVENT_TYPES
from agent_core.tools import TOOL_NAMES, TOOLS

TOKENS = Path(__file__).resolve().parent.parent / "labextension_src" / "tokens.ts"

# API.md, "Tools the model sees": names and argument names.
API_TOOL_ARGS = {
    "run_cell": {"code", "description"},
    "add_markdown": {"content"},
    "write_todos": {"todos"},
    "final_answer": {"answer", "next_items"},
    "execute_command": {"command", "stdin", "timeout", "cwd"},
    "check_resource": {"files", "dataframes"},
    "diagnostics": {"code", "path"},
    "read_file": {"path", "start_line", "end_line"},
    "list_files": {"path", "recursive"},
    "write_file": {"path", "content", "overwrite"},
    "edit_file": {"path", "edits"},
    "search_workspace": {"pattern", "path", "file_types"},
    "search_notebooks": {"pattern", "notebook_path"},
    "load_skill": {"name"},
    "task": {"agent", "description"},
}


def ts_constant(name: str) -> list[str]:
    match = re.search(rf"export const {name} = \[(.*?)\] as const;", TOKENS.read_text(), re.S)
    assert match, f"{name} not found in {TOKENS}"
    return re.findall(r"'([^']+)'", match.group(1))


def test_event_types_match_the_panel() -> None:
    assert ts_constant("EVENT_TYPES") == list(EVENT_TYPES)


def test_tool_names_match_the_panel_and_api() -> None:
    assert ts_constant("TOOL_NAMES") == list(TOOL_NAMES)
    assert set(TOOL_NAMES) == set(API_TOOL_ARGS)


def test_every_built_tool_has_the_api_arguments() -> None:
    for name, spec in TOOLS.items():
        assert set(spec.parameters["properties"]) == API_TOOL_ARGS[name], name


def test_risky_tools_need_approval_by_default() -> None:
    risky = {name for name, spec in TOOLS.items() if spec.needs_approval}
    assert risky == {"run_cell", "execute_command", "write_file", "edit_file"}
