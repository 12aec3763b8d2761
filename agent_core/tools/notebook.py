"""Notebook tools: run a code cell in the notebook's kernel, add a Markdown cell."""
from __future__ import annotations

from typing import Any

from ..output_digest import digest
from .base import ToolContext, ToolInputError, ToolOutcome, ToolSpec
from .diagnostics import cell_preview


async def run_cell(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
    code = args["code"]
    if not code.strip():
        raise ToolInputError("run_cell needs non-empty code")
    cell = await ctx.env.run_cell(ctx.call_id, code, ctx.emit)
    text = digest(cell.outputs)
    if cell.status == "aborted":
        return ToolOutcome("error", f"The cell was aborted.\n{text}")
    head = f"[execution_count {cell.execution_count}]" if cell.execution_count is not None else ""
    return ToolOutcome("ok" if cell.status == "ok" else "error", f"{head}\n{text}".strip(), summary=text)


async def add_markdown(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
    # The panel inserts the cell when it sees this tool call; the kernel is not involved.
    return ToolOutcome("ok", "Markdown cell added to the notebook.")


RUN_CELL = ToolSpec(
    name="run_cell",
    description=(
        "Run Python code as a new cell in the user's notebook kernel (the user approves it first). "
        "Variables persist between cells. Returns the cell's outputs."
    ),
    parameters={
        "type": "object",
        "properties": {
            "code": {"type": "string", "description": "The Python code of the cell."},
            "description": {"type": "string", "description": "One line: what this cell does and why."},
        },
        "required": ["code"],
    },
    run=run_cell,
    needs_approval=True,
    describe=lambda args: args.get("description") or "Run a code cell in the notebook's kernel",
    preview=cell_preview,  # the approval card shows the cell's diagnostics
)

ADD_MARKDOWN = ToolSpec(
    name="add_markdown",
    description="Add a Markdown cell to the notebook (explanations, section headings, findings).",
    parameters={
        "type": "object",
        "properties": {"content": {"type": "string", "description": "Markdown text of the cell."}},
        "required": ["content"],
    },
    run=add_markdown,
)


