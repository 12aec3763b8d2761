"""restart_kernel: a fresh kernel for the notebook, after the user's approval (variables are lost)."""

from __future__ import annotations

from agent_core.tools.arguments import ToolArgs
from agent_core.tools.base import ToolContext, ToolOutcome, ToolSpec


class RestartKernelArgs(ToolArgs):
    pass


async def restart_kernel(args: RestartKernelArgs, ctx: ToolContext) -> ToolOutcome:
    told = await ctx.env.restart_kernel()
    identity = await ctx.env.kernel_identity()
    return ToolOutcome("ok", told, state={"kernel_identity": identity} if identity else {})


RESTART_KERNEL = ToolSpec(
    name="restart_kernel",
    description=(
        "Restart the notebook's kernel (after the user approves): every variable, import and loaded dataset is "
        "lost, so re-run the cells you need afterwards. Use it for a stuck or corrupted kernel state."
    ),
    args=RestartKernelArgs,
    action=restart_kernel,
    touches="kernel",
    rewind_leaves="the kernel was restarted: the variables from before it cannot come back",
    outside_agents=True,
    needs_approval=True,
    describe=lambda args: "Restart the kernel: all variables, imports and loaded data will be lost",
)
