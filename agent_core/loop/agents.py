"""The agents, as data: each is a prompt, a tool list, the agents it may delegate to and a call cap.
A new sub-agent is one entry here plus a prompt file in prompts/."""

from __future__ import annotations

from dataclasses import dataclass

from agent_core.tools import TOOLS


@dataclass(frozen=True)
class AgentConfig:
    name: str
    label: str
    prompt: str  # a file in agent_core/prompts/, without .md
    tools: tuple[str, ...]
    may_call: tuple[str, ...] = ()  # agents reachable through `task`; none by default
    max_model_calls: int = 30
    description: str = ""  # what the planner is told about it

    @property
    def is_subagent(self) -> bool:
        return self.name not in ("main", "planner")


# The single agent has every tool but delegation: derived from the registry, not a second list of it.
SINGLE_AGENT_TOOLS = tuple(name for name in TOOLS if name != "task")

AGENTS: dict[str, AgentConfig] = {
    agent.name: agent
    for agent in (
        AgentConfig("main", "Agent", "system", SINGLE_AGENT_TOOLS, max_model_calls=30),
        AgentConfig(
            "planner",
            "Planner",
            "planner",
            ("write_todos", "check_resource", "load_skill", "task", "final_answer"),
            may_call=("python_developer", "researcher", "query"),
            max_model_calls=50,
        ),
        AgentConfig(
            "python_developer",
            "Python developer",
            "python_developer",
            (
                "run_cell",
                "edit_cell",
                "rerun_stale",
                "restart_kernel",
                "add_markdown",
                "read_file",
                "read_notebook",
                "write_file",
                "edit_file",
                "execute_command",
                "verify_notebook",
            ),
            max_model_calls=25,
            description="writes and runs code in the notebook's kernel, edits files, runs shell commands",
        ),
        AgentConfig(
            "researcher",
            "Researcher",
            "researcher",
            (
                "search_knowledge",
                "read_file",
                "read_notebook",
                "list_files",
                "search_workspace",
                "search_notebooks",
                "diagnostics",
                "execute_command",
            ),
            max_model_calls=20,
            description="read-only: searches the workspace's documents (cites them), finds and reads files, notebooks "
            "and data, checks code; changes nothing",
        ),
        AgentConfig(
            "query",
            "Query",
            "query",
            ("search_knowledge", "sql_query", "run_cell"),
            max_model_calls=15,
            description="answers questions from the configured databases: finds the relevant tables, writes SQL and runs "
            "it after approval; loads a result into the kernel as a DataFrame when asked",
        ),
    )
}


def agent_for_mode(mode: str) -> AgentConfig:
    return AGENTS["planner" if mode == "multi" else "main"]
