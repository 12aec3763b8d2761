"""Going back over a thread's steps (issue 25): what a rewind does to each later step (rewind_plan),
the rewind itself and its undo (rewind), and what a range of steps changed (step_diff). A floor
above the loop: it forks the conversation (agent_core.loop.branches) and undoes the steps
(agent_core.undo), reading each tool's facts from its ToolSpec."""
