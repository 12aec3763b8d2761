"""With jupyter-collaboration, the server writes the agent's cells into the notebook's shared document
(jupyter_server_ydoc's room, a jupyter_ydoc YNotebook), as the run goes: every browser with the
notebook open sees them arrive live, and the collaboration extension saves them. The panel then only
decorates (`Health.shared_document`). What is written mirrors the panel's NotebookBridge
(labextension_src/notebook.ts) exactly, so a notebook looks the same whoever wrote its cells.

Care taken, since a peer that writes a shared notebook can lose users' work (jupyter-ai's "whole
notebooks cleared under RTC"): only the shared document's own API, never the .ipynb file nor the
whole document (`YNotebook.set` would replace every cell); one transaction per change, which only
appends a cell at the end or changes the agent's own cell; cells are found by their
`metadata.cellwright.tool_call_id`, so an event seen twice changes nothing twice. An agent cell the
user deleted is not written again: outputs for it are dropped.

A notebook nobody has open has no room: the writer opens one through the extension's API
(`get_document(create=True)`), which loads the file and saves the changes like any room. Writing the
file instead would race a browser that opens the notebook meanwhile, and leaving the cells to the
panel would lose them (the panel does not insert cells under RTC)."""

from __future__ import annotations

import asyncio
import copy
import inspect
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from agent_core.json_types import JsonObject

from .inert_markdown import inert_markdown_source

if TYPE_CHECKING:
    from jupyter_ydoc import YNotebook
    from pycrdt import Map

log = logging.getLogger(__name__)

METADATA_KEY = "cellwright"
COLLABORATION_EXTENSION = "jupyter_server_ydoc"
HANDLED = {"cell_started", "cell_output", "cell_finished", "step_undone", "tool_call"}
KEPT = 2000  # tool calls remembered per kind: far more than the cells of one run


class Memory:
    """What the writer remembers of the cells it wrote, beyond what the document says. Keyed by thread
    and tool call: some models number their calls (call_0, call_1, ...) in every thread."""

    def __init__(self) -> None:
        self.live_only: deque[tuple[str, str]] = deque(maxlen=KEPT)  # got live-only outputs (the bridge's _liveOnly)
        self._written: dict[tuple[str, str], None] = {}  # inserted once: never again, even after the user deleted it
        self._where: dict[tuple[str, str], int] = {}  # the index a call's cell had: checked, then rescanned if moved

    def written(self, key: tuple[str, str]) -> bool:
        return key in self._written

    def wrote(self, key: tuple[str, str]) -> None:
        self._written[key] = None
        if len(self._written) > KEPT:
            del self._written[next(iter(self._written))]

    def locate(self, notebook: YNotebook, key: tuple[str, str]) -> int | None:
        """The index of the agent's cell for `key`: where it was last time if it is still there (each
        output of a cell would otherwise read every cell's metadata), else found by scanning."""
        hint = self._where.get(key)
        if hint is not None and hint < len(notebook.ycells) and _belongs(notebook.ycells[hint], key):
            return hint
        index = next((i for i, ycell in enumerate(notebook.ycells) if _belongs(ycell, key)), None)
        if index is None:
            self._where.pop(key, None)
        else:
            self._where[key] = index
            if len(self._where) > KEPT:
                del self._where[next(iter(self._where))]
        return index


class SharedDocuments(Protocol):
    """What jupyter_server_ydoc's YDocExtension offers (>= 3.0): the live document of a room."""

    async def get_document(
        self,
        *,
        path: str | None = None,
        content_type: str | None = None,
        file_format: Any = None,
        room_id: str | None = None,
        copy: bool = True,
        create: bool = False,
    ) -> Any: ...


def collaboration_documents(serverapp: Any) -> SharedDocuments | None:
    """The collaboration extension loaded into `serverapp` when it shares documents (not disabled
    with `disable_rtc`), else None."""
    apps = getattr(serverapp.extension_manager, "extension_apps", {}).get(COLLABORATION_EXTENSION) or ()
    for app in apps:
        if getattr(app, "disable_rtc", False):
            continue
        if not _documents_api(app):
            log.warning(
                "Cellwright: this jupyter-collaboration cannot give the server a notebook's live document "
                "(jupyter_server_ydoc 3.0 or later can): the panel writes the agent's cells, as without it"
            )
            continue
        return app
    return None


def _documents_api(app: Any) -> bool:
    """Whether `get_document` gives the live document and opens a room (jupyter_server_ydoc >= 3.0)."""
    try:
        parameters = inspect.signature(app.get_document).parameters
    except (AttributeError, TypeError, ValueError):
        return False
    return "copy" in parameters and "create" in parameters


class SharedNotebookWriter:
    """An EventLog observer: events are queued as they come and applied in order by one task."""

    def __init__(
        self,
        documents: SharedDocuments,
        notebook_of: Callable[[str], Awaitable[str | None]],
        exists: Callable[[str], Awaitable[bool]],
    ) -> None:
        self._documents = documents
        self._notebook_of = notebook_of  # a thread's notebook path (add_markdown, step_undone)
        self._exists = exists  # whether that notebook is a file: a room is never made for one that is not
        self._queue: deque[tuple[str, JsonObject]] = deque()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._paths: dict[tuple[str, str], str] = {}  # (thread, tool call) -> notebook, from its cell_started
        self._applied: dict[str, int] = {}  # thread -> last stored seq applied
        self._memory = Memory()

    def __call__(self, thread_id: str, event: JsonObject) -> None:
        kind = event.get("type")
        if kind not in HANDLED or (kind == "tool_call" and event.get("name") != "add_markdown"):
            return
        self._queue.append((thread_id, event))
        self._wake.set()
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._work())

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _work(self) -> None:
        while True:
            while self._queue:
                thread_id, event = self._queue.popleft()
                try:
                    await self._apply(thread_id, event)
                except Exception:  # one bad event must not stop the cells after it
                    log.exception("Cellwright could not write a %s event into the shared notebook", event.get("type"))
            self._wake.clear()
            await self._wake.wait()

    async def _apply(self, thread_id: str, event: JsonObject) -> None:
        seq = event.get("seq")
        if isinstance(seq, int):  # stored: each once (live-only outputs have no seq)
            if seq <= self._applied.get(thread_id, 0):
                return
            self._applied[thread_id] = seq
        call_id = str(event.get("id") or "")
        path = await self._path(thread_id, event, call_id)
        if not path:
            return
        notebook = await self._document(path)
        if notebook is None:
            return
        with notebook.ydoc.transaction(origin=METADATA_KEY):
            write_event(notebook, event, self._memory)

    async def _path(self, thread_id: str, event: JsonObject, call_id: str) -> str | None:
        if event["type"] == "cell_started":
            given = event.get("notebook_path")
            path = given if isinstance(given, str) and given else await self._notebook_of(thread_id)
            if path:
                self._paths[(thread_id, call_id)] = path
                if len(self._paths) > KEPT:
                    del self._paths[next(iter(self._paths))]
            return path
        if event["type"] in ("cell_output", "cell_finished"):
            return self._paths.get((thread_id, call_id))  # a cell started by another process is not ours to finish
        return await self._notebook_of(thread_id)

    async def cells(self, path: str) -> list[JsonObject] | None:
        """The cells of `path`'s shared document if someone (or this writer) has it open, else None (the
        saved file is then current). Read from a copy: YNotebook.get renumbers duplicate ids in place."""
        if not path.endswith(".ipynb"):
            return None
        try:
            document = await self._documents.get_document(
                path=path, content_type="notebook", file_format="json", copy=True, create=False
            )
        except Exception as exc:
            log.warning("Cellwright cannot read the shared document of %s: %s", path, exc)
            return None
        return list(document.get()["cells"]) if document is not None and hasattr(document, "get") else None

    async def _document(self, path: str) -> YNotebook | None:
        if not path.endswith(".ipynb") or not await self._exists(path):
            return None  # a thread without a notebook (or one deleted since): the events are all there is
        try:
            document = await self._documents.get_document(
                path=path, content_type="notebook", file_format="json", copy=False, create=True
            )
        except Exception as exc:  # e.g. the notebook was deleted or renamed meanwhile
            log.warning("Cellwright cannot open the shared document of %s: %s", path, exc)
            return None
        # jupyter_ydoc and pycrdt come with jupyter-collaboration: loaded only when a shared document is written
        from jupyter_ydoc import YNotebook

        return document if isinstance(document, YNotebook) else None


# -- one event into the document (inside the caller's transaction)


def write_event(notebook: YNotebook, event: JsonObject, memory: Memory) -> None:
    """What NotebookBridge.handle does for `event`, done to the shared document."""
    kind, call_id = event["type"], str(event.get("id") or "")
    key = (str(event.get("thread_id") or ""), call_id)
    if kind == "cell_started":
        given = event.get("cell_id")
        cell_id = given if isinstance(given, str) and given else None
        if memory.locate(notebook, key) is None and not memory.written(key):
            memory.wrote(key)  # the second cell_started of a cell that waited must not bring it back
            if event.get("edit") and cell_id:
                _edit(notebook, cell_id, str(event.get("code") or ""), call_id, event)
            else:
                cell: JsonObject = {"cell_type": "code", "source": str(event.get("code") or ""), "outputs": []}
                _insert(notebook, cell, provenance_metadata(event), cell_id)
        code = _code_cell(notebook, key, memory)
        if code is not None:
            code["execution_state"] = "running"  # "[*]", as JupyterLab shows it
    elif kind == "cell_output":
        if event.get("live_only"):
            memory.live_only.append(key)
        elif event.get("overflow_summary") and key in memory.live_only:
            return  # this cell already has every output the summary stands for
        code = _code_cell(notebook, key, memory)
        if code is not None and isinstance(output := event.get("output"), dict):
            _add_output(code, output)
    elif kind == "cell_finished":
        code = _code_cell(notebook, key, memory)
        if code is not None:
            count = event.get("execution_count")
            code["execution_count"] = float(count) if isinstance(count, int) else None
            code["execution_state"] = "idle"
    elif kind == "step_undone":
        _undo(notebook, memory.locate(notebook, key))
    elif kind == "tool_call" and event.get("name") == "add_markdown":
        args = event.get("args")
        content = args.get("content") if isinstance(args, dict) else None
        if isinstance(content, str) and memory.locate(notebook, key) is None and not memory.written(key):
            memory.wrote(key)

            markdown: JsonObject = {"cell_type": "markdown", "source": inert_markdown_source(content)}
            _insert(notebook, markdown, {"tool_call_id": call_id}, None)


def provenance_metadata(event: JsonObject, previous_source: str | None = None) -> JsonObject:
    """The cell metadata `cellwright` of a cell_started, as the panel's provenanceMetadata writes it."""
    meta: JsonObject = {
        "thread_id": event.get("thread_id"),
        "run_id": event.get("run_id"),
        "tool_call_id": event["id"],
    }
    provenance = event.get("provenance")
    if isinstance(provenance, dict):
        for key in ("model", "agent", "decision", "undoable"):
            meta[key] = provenance.get(key)
        if isinstance(provenance.get("edited_from"), str):
            meta["edited_from"] = provenance["edited_from"]
    if previous_source is not None:
        meta["previous_source"] = previous_source
    return meta


def agent_metadata(ycell: Map) -> JsonObject | None:
    metadata = ycell.get("metadata")
    meta: Any = metadata.get(METADATA_KEY) if metadata is not None and hasattr(metadata, "get") else None
    if meta is not None and hasattr(meta, "to_py"):  # written as a nested shared map by some client
        meta = meta.to_py()
    return meta if isinstance(meta, dict) else None


def _belongs(ycell: Map, key: tuple[str, str]) -> bool:
    """Whether the agent wrote `ycell` for (thread, tool call) `key` (a markdown cell names no thread)."""
    meta = agent_metadata(ycell)
    return meta is not None and meta.get("tool_call_id") == key[1] and meta.get("thread_id") in (None, key[0])


def _cell_index_by_id(notebook: YNotebook, cell_id: str) -> int | None:
    return next((i for i, ycell in enumerate(notebook.ycells) if ycell.get("id") == cell_id), None)


def _code_cell(notebook: YNotebook, key: tuple[str, str], memory: Memory) -> Map | None:
    index = memory.locate(notebook, key)
    if index is None:
        return None
    ycell = notebook.ycells[index]
    return ycell if ycell.get("cell_type") == "code" else None


def _is_blank(notebook: YNotebook) -> bool:
    """A new notebook: one code cell, empty."""
    if len(notebook.ycells) != 1:
        return False
    only = notebook.ycells[0]
    outputs = only.get("outputs")
    return only.get("cell_type") == "code" and not str(only.get("source") or "").strip() and not len(outputs or [])


def _insert(notebook: YNotebook, cell: JsonObject, meta: JsonObject, cell_id: str | None) -> None:
    """Append the agent's cell (with the nbformat id the server gave, unless a cell has it already);
    a blank notebook gets it in place of its one empty cell. Never anywhere but at the end."""
    cell = {**cell, "metadata": {METADATA_KEY: meta}}
    if cell["cell_type"] == "code":
        cell["execution_count"] = None
    if cell_id and _cell_index_by_id(notebook, cell_id) is None:
        cell["id"] = cell_id
    blank = _is_blank(notebook)
    notebook.ycells.append(notebook.create_ycell(cell))
    if blank:
        del notebook.ycells[0]


def _edit(notebook: YNotebook, cell_id: str, source: str, call_id: str, event: JsonObject) -> None:
    """edit_cell: the cell with nbformat id `cell_id` gets the new source and loses its outputs."""
    index = _cell_index_by_id(notebook, cell_id)
    if index is None:
        log.warning("Cellwright: edit_cell: no cell %s in the shared notebook", cell_id)
        return
    ycell = notebook.ycells[index]
    previous = str(ycell.get("source") or "")
    notebook.set_cell(index, source=source)  # a text diff: the rest of the cell stays the same object
    if ycell.get("cell_type") == "code":
        outputs = ycell.get("outputs")
        if outputs is not None:
            outputs.clear()
        ycell["execution_count"] = None
    meta = {**(agent_metadata(ycell) or {}), **provenance_metadata(event, previous), "tool_call_id": call_id}
    _set_agent_metadata(ycell, meta)


def _set_agent_metadata(ycell: Map, meta: JsonObject) -> None:
    from pycrdt import Map

    metadata = ycell.get("metadata")
    if isinstance(metadata, Map):
        metadata[METADATA_KEY] = meta
    else:
        ycell["metadata"] = Map({**(metadata or {}), METADATA_KEY: meta})


def _add_output(code: Map, output: JsonObject) -> None:
    """Append an output as JupyterLab's model does: a stream right after a stream of the same name
    joins it (one output per run of text), numbers as Yjs numbers (floats)."""
    from jupyter_ydoc.utils import cast_all
    from pycrdt import Array, Map, Text

    outputs = code.get("outputs")
    if not isinstance(outputs, Array):
        outputs = code["outputs"] = Array()
    output = cast_all(copy.deepcopy(output), int, float)  # type: ignore[assignment]
    if output.get("output_type") == "stream":
        text = output.get("text", "")
        text = "".join(text) if isinstance(text, list) else str(text)
        last = outputs[len(outputs) - 1] if len(outputs) else None
        if (
            isinstance(last, Map)
            and last.get("output_type") == "stream"
            and last.get("name") == output.get("name")
            and isinstance(joined := last.get("text"), Text)
        ):
            joined.insert(len(joined), text)  # not `last["text"] += text`: setting the map's own Text again empties it
            return
        output["text"] = Text(text)
    outputs.append(Map(output))


def _undo(notebook: YNotebook, index: int | None) -> None:
    """The user undid a step: its cell (at `index`) goes (run_cell), or an edited cell gets its source
    from before the edit back (edit_cell). Once only: the metadata then says it was undone."""
    if index is None:
        return
    ycell = notebook.ycells[index]
    meta = agent_metadata(ycell) or {}
    if meta.get("undone"):
        return
    if isinstance(previous := meta.get("previous_source"), str):
        notebook.set_cell(index, source=previous)
        rest = {key: value for key, value in meta.items() if key != "previous_source"}
        _set_agent_metadata(ycell, {**rest, "undone": True})
    else:
        del notebook.ycells[index]
