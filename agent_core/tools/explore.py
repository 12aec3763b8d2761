"""The `explore` tool (issue 37): code runs against the kernel's live variables in a sandboxed
copy-on-write fork of the kernel (agent_core.kernel_probes.sandbox), so it asks no approval and adds
no cell; the kernel, its variables, execution count and history stay as they were. Where no sandbox
can be had, the step is approved first and then runs in a plain fork (still no cell, the kernel
still untouched, but files and network are reachable): the card says why."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from agent_core.json_types import JsonObject
from agent_core.output_digest import digest
from agent_core.tools.arguments import ToolArgs
from agent_core.tools.base import ToolContext, ToolInputError, ToolOutcome, ToolSpec
from agent_core.vision import cell_images

if TYPE_CHECKING:
    from agent_core.kernel_probes.sandbox import Exploration

MAX_CODE_CHARS = 20_000
APPROVED = ("approved", "edited")


class ExploreArgs(ToolArgs):
    code: str = Field(
        max_length=MAX_CODE_CHARS,
        description="Python code to look at the kernel's variables (e.g. df.describe(), a plot). It runs in a "
        "throwaway sandboxed copy of the kernel: nothing it assigns, writes or deletes reaches the user's kernel or "
        "files, and it has no network.",
    )


async def sandbox_reason(args: ExploreArgs, ctx: ToolContext) -> str | None:
    """None when this exploration runs sandboxed (no approval), else why the user must approve it."""
    # agent_core.kernel_probes.sandbox imports agent_core.tools (through the probes), which imports this module
    from agent_core.kernel_probes.sandbox import kernel_sandbox

    try:
        status = await kernel_sandbox(ctx.env, ctx.settings)
    except ToolInputError as exc:
        return f"the kernel's sandbox could not be checked ({exc})"
    return None if status.available else status.reason


async def check_explore(args: ExploreArgs, ctx: ToolContext) -> None:
    if not args.code.strip():
        raise ToolInputError("explore needs non-empty code")
    if ctx.run is not None and ctx.run.policy.autonomy == "ask":
        reason = await sandbox_reason(args, ctx)
        if reason is not None:  # Ask mode changes nothing: an unsandboxed fork could write files
            raise ToolInputError(
                f"no sandbox here ({reason}), and Ask mode runs nothing unsandboxed: answer with final_answer and put "
                "the code there for the user to run"
            )


async def explore_card(args: ExploreArgs, ctx: ToolContext) -> JsonObject:
    reason = await sandbox_reason(args, ctx)
    return {
        "description": f"Explore without a sandbox ({reason}): runs in a copy of the kernel (the kernel and the "
        "notebook stay as they are), but it can reach files and the network",
        "sandbox_reason": reason or "",
    }


def _text(found: Exploration) -> str:
    text = digest(found.outputs)
    if found.blocked:
        text += "\n[blocked by the sandbox: " + "; ".join(found.blocked) + "]"
    text += "".join(f"\n[{note}]" for note in found.notes)
    return text.strip()


async def explore(args: ExploreArgs, ctx: ToolContext) -> ToolOutcome:
    if not args.code.strip():
        raise ToolInputError("explore needs non-empty code")
    approved = ctx.decision in APPROVED or (ctx.decision != "sandboxed" and "explore" in ctx.settings.auto_approve)
    reason = await sandbox_reason(args, ctx)
    if reason is not None and not approved:  # the sandbox went away after the node decided: ask again
        raise ToolInputError(f"the sandbox is no longer available ({reason}); call explore again to be asked")
    from agent_core.kernel_probes.sandbox import explore_in_kernel  # see sandbox_reason

    found = await explore_in_kernel(ctx.env, args.code, ctx.settings, sandbox=reason is None)
    if found.status == "unavailable":
        raise ToolInputError(f"the sandbox could not be made ({found.reason}); call explore again to be asked")
    images, image_notes = cell_images(found.outputs)
    text = _text(found)
    if image_notes:
        text += "\n" + "\n".join(image_notes)
    sandboxed = reason is None
    head = (
        "[explored in a sandboxed copy of the kernel: no cell added, the kernel unchanged]"
        if sandboxed
        else ("[explored in an unsandboxed copy of the kernel (approved): no cell added, the kernel unchanged]")
    )
    return ToolOutcome(
        "ok" if found.status == "ok" else "error",
        f"{head}\n{text}",
        summary=text,
        images=tuple(images),
        event={"sandboxed": sandboxed, "blocked": found.blocked, "outputs": found.outputs},
    )


EXPLORE = ToolSpec(
    name="explore",
    description=(
        "Look at the kernel's live variables without changing anything: the code runs in a sandboxed throwaway copy "
        "of the kernel (no network, no file writes but /tmp, hidden files invisible, time and memory bounded) and "
        "returns its outputs (prints, the last expression, displays, matplotlib figures). No cell is added and the "
        "user is not asked. Use it for looks (head, describe, value_counts, a quick plot); use run_cell for anything "
        "that should change the kernel or stay in the notebook."
    ),
    args=ExploreArgs,
    action=explore,
    # Nothing the user owns: the fork is a copy, sandboxed (or, where no sandbox can be had, approved and
    # refused in Ask mode), so a rewind has nothing to take back.
    touches="nothing",
    needs_approval=True,  # where no sandbox can be had; `sandboxed` waives it per call
    read_only=True,  # changes nothing the user owns: offered in Ask mode
    describe=lambda args: "Explore the kernel's variables (in a copy of the kernel)",
    card=explore_card,
    check=check_explore,
    sandboxed=sandbox_reason,
)
