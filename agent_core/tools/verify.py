"""verify_notebook: re-run the notebook top to bottom in a fresh shadow kernel (never the user's) and
report cells that fail, agent cells whose outputs differ from what they gave, and hidden state. The
notebook is the one the tools see (agent_core.tools.notebook_view): the saved file with the agent's
cells it lacks yet, which the answer names first. It runs the notebook's code, so it is approved like
a cell (and may be auto-approved)."""

from __future__ import annotations

import asyncio
import json

from pydantic import Field

from agent_core.contract.bodies import MAX_PATH_CHARS
from agent_core.contract.verify import VerifyResult
from agent_core.json_types import JsonObject
from agent_core.output_digest import bounded
from agent_core.tools.arguments import ToolArgs
from agent_core.tools.base import HasShadowKernel, ToolContext, ToolInputError, ToolOutcome, ToolSpec
from agent_core.tools.notebook_reader import load_notebook
from agent_core.tools.notebook_view import NotebookView, cell_source, notebook_view, shown_id
from agent_core.workspace import WorkspaceError, relative_to_root, workspace_of


class VerifyNotebookArgs(ToolArgs):
    path: str | None = Field(
        default=None,
        max_length=MAX_PATH_CHARS,
        description="The notebook (.ipynb) to re-run; default: the thread's notebook. Save it first.",
    )


def _target(args: VerifyNotebookArgs, ctx: ToolContext) -> str:
    target = args.path or ctx.notebook_path
    if not target:
        raise ToolInputError("this thread has no notebook: give the path of one")
    try:
        return relative_to_root(workspace_of(ctx.env).root, workspace_of(ctx.env).resolve(target))
    except WorkspaceError as exc:
        raise ToolInputError(exc.message) from None


async def check_verify(args: VerifyNotebookArgs, ctx: ToolContext) -> None:
    if not isinstance(ctx.env, HasShadowKernel):
        raise ToolInputError("verify_notebook needs the Jupyter server's kernels (the %agent magic cannot start one)")
    path = _target(args, ctx)
    await asyncio.to_thread(load_notebook, workspace_of(ctx.env).root / path)


async def verify(args: VerifyNotebookArgs, ctx: ToolContext) -> ToolOutcome:
    # agent_core.verify.replay imports agent_core.tools, which imports this module
    from agent_core.verify.replay import summary, verify_notebook

    env = ctx.env
    if not isinstance(env, HasShadowKernel):
        raise ToolInputError("verify_notebook needs the Jupyter server's kernels (the %agent magic cannot start one)")
    path = _target(args, ctx)
    view = await notebook_view(ctx, path)
    result = await verify_notebook({"cells": view.cells, "metadata": view.metadata}, path, env)
    text = _unsaved_note(view, result) + summary(result)
    cells = [c.model_dump(exclude_defaults=True) for c in result.cells if c.status in ("fails", "differs")]
    answer: dict[str, object] = {"status": result.status, "cells": cells[:20]}
    unsaved = [c for c in result.cells if c.cell_id in {p.get("id") for p in view.pending}]
    if unsaved:
        answer["not_in_saved_file"] = [
            {"cell_id": c.cell_id, "index": c.index, "status": c.status} for c in unsaved[:20]
        ]
    body = f"{text}\n{json.dumps(answer)}"
    return ToolOutcome("ok" if result.status == "verified" else "error", body, summary=text)


def _unsaved_note(view: NotebookView, result: VerifyResult) -> str:
    """What the saved file lacks, said first: a verdict over the notebook as it will be must never
    read as one over the file on disk, which may hold none of the agent's work yet."""
    pending = [(i, c) for i, c in enumerate(view.cells) if c.get("pending") and c.get("cell_type") == "code"]
    if not pending:
        return ""
    verdicts = {c.cell_id: c.status for c in result.cells}
    named = "; ".join(_pending_line(index, cell, verdicts.get(_id(cell))) for index, cell in pending[:10])
    more = f"; and {len(pending) - 10} more" if len(pending) > 10 else ""
    return (
        f"{view.path} on disk lacks {len(pending)} of your cells or edits (the notebook gets them when it is "
        f"opened, and keeps them once saved); re-ran it as it will be, with them: {named}{more}.\n"
    )


def _id(cell: JsonObject) -> str | None:
    cell_id = cell.get("id")
    return cell_id if isinstance(cell_id, str) else None


def _pending_line(index: int, cell: JsonObject, verdict: str | None) -> str:
    what = "edited" if cell.get("pending") == "edit" else "new"
    first = next(iter(cell_source(cell).splitlines()), "")
    return (
        f"cell {index}, id {shown_id(cell)} ({what}, {_PENDING_VERDICT.get(verdict or '', 'not re-run')}): "
        f"{bounded(first, 60)}"
    )


_PENDING_VERDICT = {
    "same": "re-runs and gives what it gave",
    "ran": "re-runs",
    "differs": "re-runs, with different output",
    "fails": "fails on re-run",
    "not_run": "not reached: an earlier cell failed",
}


VERIFY_NOTEBOOK = ToolSpec(
    name="verify_notebook",
    description=(
        "Check that the notebook re-runs: run it top to bottom in a fresh, separate kernel (the user's kernel is "
        "untouched), with your cells the saved file does not have yet, and compare each of your cells' outputs "
        "with what they gave. Reports failing cells, differing outputs, names that come from deleted or later "
        "cells, and which of your cells the saved file lacks. Call it before your final answer."
    ),
    args=VerifyNotebookArgs,
    action=verify,
    touches="outside",  # the notebook's code, in a kernel of its own
    rewind_leaves="verify_notebook re-ran the notebook in a kernel of its own: what that code did outside it (files, network) stays",
    needs_approval=True,
    describe=lambda args: f"Re-run {args.path or 'the notebook'} from the top in a fresh kernel (not yours)",
    check=check_verify,
)
