"""verify_notebook: re-run the saved notebook top to bottom in a fresh shadow kernel (never the
user's) and report cells that fail, agent cells whose outputs differ from what they gave, and hidden
state. It runs the notebook's code, so it is approved like a cell (and may be auto-approved)."""

from __future__ import annotations

import asyncio
import json

from pydantic import Field

from agent_core.contract.bodies import MAX_PATH_CHARS
from agent_core.tools.arguments import ToolArgs
from agent_core.tools.base import HasShadowKernel, ToolContext, ToolInputError, ToolOutcome, ToolSpec
from agent_core.tools.notebook_reader import load_notebook
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
    notebook = await asyncio.to_thread(load_notebook, workspace_of(env).root / path)
    result = await verify_notebook(notebook, path, env)
    text = summary(result)
    cells = [c.model_dump(exclude_defaults=True) for c in result.cells if c.status in ("fails", "differs")]
    body = f"{text}\n{json.dumps({'status': result.status, 'cells': cells[:20]})}"
    return ToolOutcome("ok" if result.status == "verified" else "error", body, summary=text)


VERIFY_NOTEBOOK = ToolSpec(
    name="verify_notebook",
    description=(
        "Check that the saved notebook re-runs: run it top to bottom in a fresh, separate kernel (the user's "
        "kernel is untouched) and compare each of your cells' outputs with what they gave. Reports failing cells, "
        "differing outputs and names that come from deleted or later cells. Call it before your final answer."
    ),
    args=VerifyNotebookArgs,
    action=verify,
    touches="outside",  # the notebook's code, in a kernel of its own
    rewind_leaves="verify_notebook re-ran the notebook in a kernel of its own: what that code did outside it (files, network) stays",
    needs_approval=True,
    describe=lambda args: f"Re-run {args.path or 'the notebook'} from the top in a fresh kernel (not yours)",
    check=check_verify,
)
