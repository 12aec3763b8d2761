"""agent_core/contract/tool_names.py, written from the tool registry: the names of the tools, for the
settings, which check the names an operator gives a floor below the tools."""

from __future__ import annotations

from agent_core.tools import TOOLS

HEADER = '''"""Every tool the model can see, by name, in the registry's order. Written from agent_core.tools by
scripts/generate_contract.py (do not edit; tests/test_contract.py fails when it is stale): the settings
(agent_core.config), a floor below the tools, check the tool names an operator gives against it."""

from __future__ import annotations

'''


def tool_names_module() -> str:
    """The module's text."""
    names = "".join(f'    "{name}",\n' for name in TOOLS)
    return f"{HEADER}TOOL_NAMES: tuple[str, ...] = (\n{names})\n"
