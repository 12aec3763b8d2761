"""Review and undo of the agent's cells (issue 12), on top of the static analysis of
agent_core.impact: the approval card's `impact` (card.py), the snapshot taken in the kernel before
an approved cell runs and the undo that restores it (steps.py), both through a ToolEnvironment's
silent evaluation of the kernel-side probe agent_core.kernel_probes.snapshots (kernel_calls.py), so the
server and the `%agent` magic share them. A floor below the tools, which take the snapshot and the
card through it; going back over many steps at once is agent_core.rewind's, a floor above the loop."""
