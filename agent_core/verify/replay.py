"""Re-run a saved notebook's code cells, top to bottom, in a shadow kernel, and judge each against
what was recorded: the verify_notebook tool and the POST verify route both end here."""

from __future__ import annotations

import time
from collections.abc import Mapping

from agent_core.contract.verify import CellVerdict, VerifiedCell, VerifyResult, VerifyStatus
from agent_core.environment import HasShadowKernel, ToolInputError
from agent_core.json_types import JsonObject, json_items, json_object
from agent_core.verify.hidden_state import hidden_state, out_of_order
from agent_core.verify.outputs import DETAIL_CHARS, difference
from agent_core.verify.stale import stale_explanations

VERIFY_SECONDS = 300.0  # the whole re-run: a notebook slower than this is not one to re-run on a click
MAX_CODE_CELLS = 500


def _source(cell: JsonObject) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def _provenance(cell: JsonObject) -> tuple[str, str] | None:
    """(thread id, tool call id) of an agent cell, from its `cellwright` metadata; None for the user's."""
    meta = json_object(cell.get("metadata")).get("cellwright")
    if not isinstance(meta, dict) or not isinstance(call_id := meta.get("tool_call_id"), str):
        return None
    return str(meta.get("thread_id") or ""), call_id


def _error_text(outputs: list[JsonObject]) -> str:
    for output in outputs:
        if output.get("output_type") == "error":
            return f"{output.get('ename')}: {output.get('evalue')}"[:DETAIL_CHARS]
    return "the cell did not finish"


def kernel_name_of(notebook: JsonObject) -> str | None:
    spec = json_object(notebook.get("metadata")).get("kernelspec")
    name = spec.get("name") if isinstance(spec, dict) else None
    return name if isinstance(name, str) and name else None


async def verify_notebook(
    notebook: JsonObject,
    path: str,
    env: HasShadowKernel,
    recorded: Mapping[tuple[str, str], list[JsonObject]] | None = None,
    time_limit: float = VERIFY_SECONDS,
) -> VerifyResult:
    """Run every code cell of `notebook` (the saved file of `path`, root-relative) in order in a
    shadow kernel, stopping at the first that fails. An agent cell's outputs are compared with
    `recorded` ((thread id, tool call id) -> outputs, from the thread's stored events; some models
    number their calls call_0, call_1... in every thread), else with the outputs
    saved in the notebook, which the panel wrote from those events."""
    started = time.monotonic()
    indexed = [(i, c) for i, c in enumerate(json_items(notebook.get("cells"))) if isinstance(c, dict)]
    code_cells = [(i, c) for i, c in indexed if c.get("cell_type") == "code"]
    if len(code_cells) > MAX_CODE_CELLS:
        raise ToolInputError(
            f"{path} has {len(code_cells)} code cells; verify_notebook re-runs at most {MAX_CODE_CELLS}"
        )
    sources = [_source(c) for _, c in code_cells]
    explanations = stale_explanations([c for _, c in indexed])
    cells: list[VerifiedCell] = []
    failed = False
    async with env.shadow_kernel(path, kernel_name_of(notebook)) as shadow:
        for number, ((index, cell), source) in enumerate(zip(code_cells, sources, strict=True), start=1):
            provenance = _provenance(cell)
            call_id = provenance[1] if provenance else None
            found = VerifiedCell(index=index, number=number, cell_id=cell.get("id"), tool_call_id=call_id, status="ran")
            if failed:
                cells.append(found.model_copy(update={"status": "not_run"}))
                continue
            if not source.strip():
                cells.append(found)
                continue
            remaining = time_limit - (time.monotonic() - started)
            run = await shadow.run(source, max(remaining, 0.1))
            status: CellVerdict = "ran"
            detail = ""
            if run.status != "ok":
                status, detail, failed = "fails", _error_text(run.outputs), True
            elif provenance is not None:
                before = (recorded or {}).get(provenance, cell.get("outputs") or [])
                detail = difference(before, run.outputs)
                status = "differs" if detail else "same"
            update: dict[str, object] = {"status": status, "detail": detail}
            if status == "differs":
                update["explained"] = explanations.get(index)
            cells.append(found.model_copy(update=update))
        kernel_name = shadow.kernel_name
    hidden = hidden_state(sources)
    late = out_of_order([c.get("execution_count") for _, c in code_cells])
    failing = next((c.number for c in cells if c.status == "fails"), None)
    differing = next((c.number for c in cells if c.status == "differs"), None)
    overall: VerifyStatus = "fails" if failing else "differs" if (differing or hidden or late) else "verified"
    return VerifyResult(
        status=overall,
        path=path,
        kernel_name=kernel_name,
        cells=cells,
        hidden_state=hidden,
        out_of_order=late,
        at_cell=failing or differing or (late[0] if late else None),
        seconds=round(time.monotonic() - started, 3),
    )


def summary(result: VerifyResult) -> str:
    """One line for the model and the panel: verified, or where it first went wrong."""
    if result.status == "verified":
        text = f"{result.path} re-runs from the top in a fresh kernel: every agent cell gives what it gave."
    else:
        word = "fails" if result.status == "fails" else "differs"
        text = f"{result.path} {word}" + (f" at cell {result.at_cell}" if result.at_cell else "")
        cell = next((c for c in result.cells if c.number == result.at_cell), None)
        if cell is not None and cell.detail:
            text += f": {cell.detail}"
        if cell is not None and cell.explained:
            text += f" (expected: {cell.explained})"
    if result.hidden_state:
        text += f"\nNames read before any cell defines them (hidden state): {', '.join(result.hidden_state[:20])}."
    if result.out_of_order:
        text += f"\nCells run out of order (saved execution counts): {', '.join(map(str, result.out_of_order[:20]))}."
    return text
