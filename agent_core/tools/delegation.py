"""task: hand one self-contained job to a sub-agent (multi-agent mode). The sub-agent sees only the
description and reports back; its events carry this call's id as `task_id`."""

from __future__ import annotations

from pydantic import Field

from agent_core.tools.arguments import ToolArgs
from agent_core.tools.base import ToolContext, ToolInputError, ToolOutcome, ToolSpec


class TaskArgs(ToolArgs):
    agent: str = Field(description="The agent's name.")
    description: str = Field(description="The complete task: goal, names, what to report.")


async def task(args: TaskArgs, ctx: ToolContext) -> ToolOutcome:
    # The graph owns the sub-agents; its run context runs one, so the tools never import the graph.
    if ctx.run is None:
        raise ToolInputError("task runs sub-agents, and only the agent loop can: there is no run here")
    return await ctx.run.delegate(args.agent, args.description, ctx.call_id)


TASK = ToolSpec(
    name="task",
    description="Delegate one self-contained task to a sub-agent. It sees only your description and reports back.",
    args=TaskArgs,
    action=task,
    touches="nothing",  # itself; each call of its sub-agent is a step held to the same mode
    rewind_leaves="a sub-agent's steps are not gone back over: its cells, files and variables stay",
    recorded=False,  # a sub-agent's task resumes inside; its own calls are recorded
)
