"""Notebook tools: run a code cell in the notebook's kernel, add a Markdown cell."""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Iterable
from pathlib import Path

from pydantic import Field

from agent_core.contract.choices import ToolStatus
from agent_core.json_types import JsonObject
from agent_core.output_digest import digest
from agent_core.tools.arguments import ToolArgs
from agent_core.tools.background import EmitRelay, within
from agent_core.tools.base import (
    CellPlacement,
    CellRun,
    ToolContext,
    ToolInputError,
    ToolOutcome,
    ToolSpec,
    ToolStateUpdate,
)
from agent_core.tools.diagnostics import lint_code
from agent_core.tools.notebook_graph import makes_stale
from agent_core.undo.card import code_impact
from agent_core.undo.steps import before_cell
from agent_core.vision import cell_images

log = logging.getLogger(__name__)


class RunCellArgs(ToolArgs):
    code: str = Field(description="The Python code of the cell.")
    description: str | None = Field(default=None, description="One line: what this cell does and why.")


class AddMarkdownArgs(ToolArgs):
    content: str = Field(description="Markdown text of the cell.")


def new_cell_id(call_id: str) -> str:
    """The nbformat id of the cell a run_cell call adds: derived from the call, so a replay or a
    second tab inserts the same cell once, and valid for nbformat (letters, digits, '-')."""
    return "cw-" + hashlib.sha256(call_id.encode()).hexdigest()[:16]


async def cell_outcome(cell: CellRun, placement: CellPlacement, ctx: ToolContext) -> ToolOutcome:
    """What the model is told of a cell that ran: its id (for edit_cell), count, outputs and images."""
    text = digest(cell.outputs)
    images, notes = cell_images(cell.outputs)
    if notes:
        text += "\n" + "\n".join(notes)
    identity = await ctx.env.kernel_identity()
    state: ToolStateUpdate = {"kernel_identity": identity} if identity else {}
    if cell.status == "aborted":
        return ToolOutcome("error", f"The cell was aborted.\n{text}", state=state)
    facts = [f"cell_id {placement.cell_id}"] if ctx.env.edits_cells else []  # the magic's cells are not in the notebook
    facts += [f"execution_count {cell.execution_count}"] if cell.execution_count is not None else []
    head = f"[{', '.join(facts)}]" if facts else ""
    status: ToolStatus = "ok" if cell.status == "ok" else "error"
    return ToolOutcome(status, f"{head}\n{text}".strip(), summary=text, images=tuple(images), state=state)


async def run_cell(args: RunCellArgs, ctx: ToolContext) -> ToolOutcome:
    if not args.code.strip():  # checked here, not in the model: the approval card of a blank cell still shows
        raise ToolInputError("run_cell needs non-empty code")
    placement = await before_cell(args.code, ctx, CellPlacement(new_cell_id(ctx.call_id)))
    host = ctx.run.background if ctx.run is not None else None
    if host is None or ctx.settings.background_after <= 0:  # the magic's cells never go to the background
        return await cell_outcome(await ctx.env.run_cell(ctx.call_id, args.code, ctx.emit, placement), placement, ctx)
    relay = EmitRelay(ctx.emit, ctx.call_id)
    started = time.monotonic()

    async def work() -> ToolOutcome:
        return await cell_outcome(await ctx.env.run_cell(ctx.call_id, args.code, relay, placement), placement, ctx)

    def so_far() -> ToolOutcome:
        return still_running(relay.outputs, placement, time.monotonic() - started)

    return await within(ctx.settings.background_after, host, ctx.thread_id, ctx.call_id, relay, work(), so_far)


def still_running(outputs: Iterable[JsonObject], placement: CellPlacement, elapsed: float) -> ToolOutcome:
    """What the model is told when the user continues without waiting for a cell (issue 38)."""
    text = digest(list(outputs))
    return ToolOutcome(
        "ok",
        f"[cell_id {placement.cell_id}] The cell is still running ({elapsed:.0f} s so far): the user chose to "
        f"continue without waiting for it. Its output so far:\n{text}\n[It goes on in the kernel: a cell you run "
        "now waits until it ends.]",
        summary=f"Still running after {elapsed:.0f} s; continued without waiting",
    )


async def cell_preview(args: RunCellArgs, ctx: ToolContext, cell_id: str | None = None) -> JsonObject:
    """The approval card's diagnostics, impact and the cells it would leave stale (run in cell
    `cell_id`, else in a new one); never fails (a card without them is still a card)."""
    if not args.code.strip():
        return {"diagnostics": []}
    card: JsonObject = {"diagnostics": []}
    try:
        card["impact"] = await code_impact(args.code, ctx)
    except Exception as exc:  # the analysis is a help for the user, never a reason to lose the card
        log.warning("no impact for the card: %s", exc)
    try:
        card["diagnostics"] = (await lint_code(args.code, Path(ctx.env.root_dir), env=ctx.env)).diagnostics
    except ToolInputError as exc:
        log.info("no diagnostics for the card: %s", exc)
    try:
        stale = await makes_stale(ctx, args.code, cell_id)
        if stale is not None:
            card["makes_stale"] = stale
    except Exception as exc:  # the graph is a help for the user, like the impact
        log.warning("no stale cells for the card: %s", exc)
    return card


async def add_markdown(args: AddMarkdownArgs, ctx: ToolContext) -> ToolOutcome:
    # The panel inserts the cell when it sees this tool call; the kernel is not involved.
    return ToolOutcome("ok", "Markdown cell added to the notebook.")


RUN_CELL = ToolSpec(
    name="run_cell",
    description=(
        "Run Python code as a new cell in the user's notebook kernel (the user approves it first). "
        "Variables persist between cells. Returns the cell's outputs."
    ),
    args=RunCellArgs,
    action=run_cell,
    touches="kernel",
    cell="adds",
    undone_by="kernel_snapshot",
    outside_agents=True,
    needs_approval=True,
    describe=lambda args: args.description or "Run a code cell in the notebook's kernel",
    card=cell_preview,  # the approval card shows the cell's diagnostics
)

ADD_MARKDOWN = ToolSpec(
    name="add_markdown",
    description="Add a Markdown cell to the notebook (explanations, section headings, findings).",
    args=AddMarkdownArgs,
    action=add_markdown,
    touches="notebook",
    cell="adds",
    outside_agents=True,
)
