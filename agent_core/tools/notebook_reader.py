"""read_notebook: the cells of the bound notebook with bounded output digests, and which cells ran
in which order, from the saved notebook and from the kernel's own input history (so cells the user
ran since the thread started count, saved or not)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from pathlib import Path

from pydantic import Field

from agent_core.deadlines import within
from agent_core.json_types import JsonObject, json_items
from agent_core.output_digest import bounded, digest
from agent_core.tools.arguments import ToolArgs
from agent_core.tools.base import HasKernelHistory, ToolContext, ToolInputError, ToolOutcome, ToolSpec
from agent_core.tools.notebook_graph import stale_marks, stale_text, view_graph
from agent_core.tools.notebook_view import PENDING_NOTE, cell_source, shown_id

MAX_NOTEBOOK_BYTES = 50 * 2**20
DEFAULT_CELLS = 30
SOURCE_CHARS = 2000
OUTPUT_CHARS = 1500
TOTAL_CHARS = 24_000
HISTORY_ENTRIES = 25
HISTORY_CHARS = 400
HISTORY_TIMEOUT = 3.0


class ReadNotebookArgs(ToolArgs):
    path: str | None = Field(default=None, description="The notebook (.ipynb) to read; default: the thread's notebook.")
    start: int | None = Field(default=None, ge=0, description="First cell index (0-based). Default 0.")
    end: int | None = Field(
        default=None, ge=0, description=f"Cell index to stop before. Default: start + {DEFAULT_CELLS}."
    )


def load_notebook(path: Path) -> JsonObject:
    """The notebook's JSON; ToolInputError when it is not a notebook this tool can read."""
    if path.suffix != ".ipynb":
        raise ToolInputError(f"{path.name} is not a notebook (.ipynb); use read_file for other files")
    try:
        if path.stat().st_size > MAX_NOTEBOOK_BYTES:
            raise ToolInputError(f"{path.name} is larger than {MAX_NOTEBOOK_BYTES // 2**20} MB")
        with path.open(encoding="utf-8") as handle:
            notebook = json.load(handle)
    except FileNotFoundError:
        raise ToolInputError(f"there is no notebook {path.name}") from None
    except (OSError, ValueError) as exc:
        raise ToolInputError(f"{path.name} could not be read as a notebook: {exc}") from None
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        raise ToolInputError(f"{path.name} is not a notebook: it has no cell list")
    return notebook


def cells_text(
    notebook: JsonObject,
    start: int = 0,
    end: int | None = None,
    total: int = TOTAL_CHARS,
    output_chars: int = OUTPUT_CHARS,
    marks: Mapping[int, str] | None = None,
) -> str:
    """The cells in [start, end) as text for the model: index, id, type, execution count, source and
    output digest, each bounded, the whole bounded too. A cell with `pending` (an agent cell the
    saved file lacks, agent_core.tools.notebook_view) is marked so; `marks` adds a word to a cell's
    head by index (the dependency graph's "stale")."""
    cells = [c for c in json_items(notebook["cells"]) if isinstance(c, dict)]
    stop = min(len(cells), end if end is not None else start + DEFAULT_CELLS)
    pending = sum(1 for c in cells if c.get("pending"))
    count = f"{len(cells)} cells" + (f" ({pending} of them {PENDING_NOTE})" if pending else "")
    parts = [
        f"{count}; showing {start} to {max(start, stop) - 1}." if start < stop else f"{count}; none in that range."
    ]
    for index in range(start, stop):
        cell = cells[index]
        kind = cell.get("cell_type", "?")
        facts = [str(kind)]
        if cell.get("execution_count") is not None:
            facts.append(f"execution_count {cell['execution_count']}")
        if cell.get("pending"):
            facts.append(_PENDING[cell["pending"]])
        if marks and index in marks:
            facts.append(marks[index])
        head = f"--- cell {index}, id {shown_id(cell)} ({', '.join(facts)})"
        text = f"{head}\n{bounded(cell_source(cell), SOURCE_CHARS)}"
        outputs = cell.get("outputs") if kind == "code" else None
        if isinstance(outputs, list) and outputs:
            text += f"\n[outputs]\n{digest([o for o in outputs if isinstance(o, dict)], output_chars)}"
        parts.append(text)
    return bounded("\n".join(parts), total)


_PENDING = {
    "new": f"ran by the agent, {PENDING_NOTE}: the notebook gets it when opened",
    "edit": f"edited by the agent, the edit {PENDING_NOTE}",
}


def run_order(notebook: JsonObject) -> str:
    ran = [
        (c.get("execution_count"), i)
        for i, c in enumerate(c for c in json_items(notebook["cells"]) if isinstance(c, dict))
    ]
    ran = sorted((count, index) for count, index in ran if isinstance(count, int))
    if not ran:
        return "No cell of the notebook has run."
    return "Run order in the notebook (execution_count: cell): " + ", ".join(f"[{n}]: {i}" for n, i in ran[-60:])


async def kernel_history(env: object) -> str:
    """The kernel's last inputs of its current session, oldest first; '' when it cannot tell."""
    if not isinstance(env, HasKernelHistory):
        return ""
    history = env.kernel_history
    try:
        async with within(HISTORY_TIMEOUT + 1):  # sent now, not on the loop's next turn (deadlines.py)
            entries = await history(HISTORY_ENTRIES)
    except (asyncio.TimeoutError, ToolInputError) as exc:
        return f"(the kernel's input history is not available: {exc or 'no answer'})"
    except Exception as exc:  # a dead kernel, a protocol error
        return f"(the kernel's input history is not available: {type(exc).__name__})"
    if not entries:
        return ""
    lines = [f"The kernel's last {len(entries)} inputs, in the order they ran (execution count: code):"]
    lines += [f"[{line}]: {bounded(source, HISTORY_CHARS)}" for line, source in entries]
    return "\n".join(lines)


async def read_notebook(args: ReadNotebookArgs, ctx: ToolContext) -> ToolOutcome:
    view, graph = await view_graph(ctx, args.path)
    notebook: JsonObject = {"cells": view.cells}
    start = args.start or 0
    body = f"{view.path}: {cells_text(notebook, start, args.end, marks=stale_marks(graph))}\n\n{run_order(notebook)}"
    stale = stale_text(graph)
    if stale:
        body += f"\n\n{stale}"
    bound = not args.path or args.path == ctx.notebook_path
    history = await kernel_history(ctx.env) if bound else ""
    if history:
        body += f"\n\n{history}"
    return ToolOutcome("ok", body, summary=f"Read {view.path} ({len(view.cells)} cells)")


READ_NOTEBOOK = ToolSpec(
    name="read_notebook",
    description=(
        "Read the cells of the notebook (default: the one this thread is bound to) with their outputs, by "
        "index range, and which cells ran in which order, including the user's own cells run in the kernel. "
        "Each cell is shown as `--- cell <index>, id <cell id> (...)`: edit_cell takes that id or index. Your own "
        "cells appear even before the notebook is opened and saved (marked so). Stale cells (a name they read was "
        "redefined after they ran, or their source changed) are marked and listed with the reason."
    ),
    args=ReadNotebookArgs,
    action=read_notebook,
    touches="nothing",
    outside_agents=True,
    read_only=True,
)
