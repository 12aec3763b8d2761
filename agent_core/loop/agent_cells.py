"""The agent cells of a notebook, derived from the stored events of the owner's threads of that
notebook: what the panel reconciles into a notebook that lacks them (issue 23, POST agent_cells).

A cell is folded from the events the live bridge (labextension_src/notebook.ts) writes from:
`cell_started` (with the nbformat id the server gave it; `edit` for edit_cell), `cell_output` (the
stored ones: live-only outputs never reach the log), `cell_finished`, `tool_call add_markdown`, and
`step_undone`. Cells without an nbformat id are the %agent magic's: they live in the magic's own
cell, not as cells of the notebook, and are left out."""

from __future__ import annotations

import logging
import weakref
from collections import OrderedDict
from collections.abc import Iterable

from pydantic import ValidationError

from agent_core.contract.notebook_cells import AgentCell, AgentCells, AgentCellsRequest
from agent_core.json_types import JsonObject
from agent_core.storage.event_log import EventLog, seq_of
from agent_core.storage.thread_store import ThreadRecord, ThreadStore
from agent_core.tools.notebook import new_cell_id

log = logging.getLogger(__name__)

EVENT_PAGE = 1000
MAX_CELLS = 5000  # a notebook with more agent cells is not one a browser reconciles at once
KEPT_FOLDS = 256  # threads' folds kept between reads (the least recently read go first)


class CellFold:
    """The cells of one thread, in the order their first event came."""

    def __init__(self, thread_id: str, notebook_path: str) -> None:
        self.thread_id = thread_id  # a thread of this notebook: add_markdown, which names none, is its
        self.notebook_path = notebook_path
        self.cells: dict[str, JsonObject] = {}
        self.undone: set[str] = set()
        self.last_seq = 0  # the last event folded

    def add(self, event: JsonObject) -> None:
        """Fold `event` in, unless it was already (two reads at once may both fetch it)."""
        if seq_of(event) <= self.last_seq:
            return
        self.last_seq = seq_of(event)
        kind, call_id = event.get("type"), event.get("id")
        if kind == "forked":  # the cells before it are the origin thread's copied events: its own
            self.cells.clear()
            self.undone.clear()
            return
        if not isinstance(call_id, str):
            return
        cell = self.cells.get(call_id)
        if kind == "cell_started":
            path = event.get("notebook_path") or ""
            if cell is None and event.get("cell_id") and path in (self.notebook_path, ""):
                self.cells[call_id] = self._started(event)
            elif cell is not None:  # the second cell_started of a cell that waited for the kernel
                cell["seq"] = event["seq"]
        elif kind == "tool_call" and event.get("name") == "add_markdown" and cell is None:
            args = event.get("args")
            content = args.get("content") if isinstance(args, dict) else None
            if isinstance(content, str):
                self.cells[call_id] = {
                    **self._stamps(event),
                    "cell_type": "markdown",
                    "cell_id": new_cell_id(call_id),
                    "source": content,
                    "finished": True,
                }
        elif kind == "cell_output" and cell is not None:
            if isinstance(outputs := cell["outputs"], list):  # _started's list
                outputs.append(event["output"])
            cell["seq"] = event["seq"]
        elif kind == "cell_finished" and cell is not None:
            cell.update(execution_count=event.get("execution_count"), finished=True, seq=event["seq"])
        elif kind == "step_undone":
            self.undone.add(call_id)

    def _stamps(self, event: JsonObject) -> JsonObject:
        return {
            "tool_call_id": event["id"],
            "thread_id": self.thread_id,
            "run_id": event["run_id"],
            "seq": event["seq"],
        }

    def _started(self, event: JsonObject) -> JsonObject:
        cell: JsonObject = {
            **self._stamps(event),
            "cell_type": "code",
            "cell_id": event["cell_id"],
            "edit": bool(event.get("edit")),
            "source": event.get("code") or "",
            "outputs": [],
            "finished": False,
        }
        if event.get("provenance"):
            cell["provenance"] = event["provenance"]
        return cell

    def result(self) -> Iterable[JsonObject]:
        for call_id, cell in self.cells.items():
            yield {**cell, "undone": call_id in self.undone}


async def agent_cells(store: ThreadStore, request: AgentCellsRequest) -> AgentCells:
    """A page of the agent cells of `request.notebook_path` (already confined to the root), from the
    store's owner's threads only: another owner's thread is not read."""
    cells = await _folded(store, request.notebook_path)
    end = request.offset + request.limit
    page = [found for cell in cells[request.offset : end] if (found := _valid(cell)) is not None]
    return AgentCells(cells=page, next_offset=end if end < len(cells) else None)


async def notebook_agent_cells(store: ThreadStore, path: str) -> list[AgentCell]:
    """Every agent cell of the notebook `path` (root-relative), as the pages of `agent_cells` give
    them: what a reconcile would place, for the server's own view of the notebook."""
    return [found for cell in await _folded(store, path) if (found := _valid(cell)) is not None]


async def _folded(store: ThreadStore, path: str) -> list[JsonObject]:
    folds = _FOLDS.get(store.events)
    if folds is None:
        folds = _FOLDS[store.events] = CellFolds()
    cells: list[JsonObject] = []
    for record in await store.for_notebook(path):
        cells.extend(await folds.cells(store.events, record, path, MAX_CELLS - len(cells)))
        if len(cells) >= MAX_CELLS:
            break
    return cells[:MAX_CELLS]


class CellFolds:
    """Each thread's fold of a notebook's cells, kept between reads and carried on from the last event it
    folded: a thread's log only grows (seq by seq), so a read folds the events since, not the whole log
    again (issue 41: every read_notebook re-read every event of the notebook's threads, a cost that grew
    with each call of a long MCP session)."""

    def __init__(self) -> None:
        self._folds: OrderedDict[tuple[str, str], CellFold] = OrderedDict()

    async def cells(self, events: EventLog, record: ThreadRecord, path: str, room: int) -> list[JsonObject]:
        key = (record.thread_id, path)
        fold = self._folds.pop(key, None) or CellFold(record.thread_id, path)
        self._folds[key] = fold  # the most recently read last; a read of it meanwhile carries on the same fold
        while len(self._folds) > KEPT_FOLDS:
            self._folds.popitem(last=False)
        while len(fold.cells) < room:
            page = await events.events_after(record.thread_id, fold.last_seq, EVENT_PAGE)
            for event in page:
                fold.add(event)
            if len(page) < EVENT_PAGE:
                break
        return list(fold.result())


# Per event log (a server's thread store, a magic's): the folds of its threads.
_FOLDS: weakref.WeakKeyDictionary[EventLog, CellFolds] = weakref.WeakKeyDictionary()


def _valid(cell: JsonObject) -> AgentCell | None:
    """The cell as the contract has it. An event stored by an older release may not fit today's
    models: its provenance is left out, and a cell that still does not fit is skipped (logged), rather
    than failing the notebook's every other cell."""
    for attempt in (cell, {k: v for k, v in cell.items() if k != "provenance"}):
        try:
            return AgentCell.model_validate(attempt)
        except ValidationError:
            continue
    log.warning("agent_cells: a stored cell of tool call %s does not fit the contract; left out", cell["tool_call_id"])
    return None
