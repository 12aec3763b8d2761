"""One knowledge base per (workspace root, data folder): the index store, its initial build and
its file watcher as background tasks on the server's loop, and search.

Nothing starts at import. `start()` (the server calls it once it is up, a search calls it on
first use) schedules the initial build and the watcher without waiting for them; `stop()` ends
both (the server's shutdown). Watcher batches are debounced by watchfiles and indexed in a
worker thread, so the loop never reads a file.

The watcher waits for changes on a daemon thread of its own, not awatch's: awatch waits on one of
anyio's worker threads, which Python waits for at exit, and when Jupyter's loop ends without the
server's stop (a SIGINT with no terminal, how JupyterHub's LocalProcessSpawner stops a server) no
one would stop it: the process could never exit."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent_core.config.agent_settings import AgentSettings
from agent_core.json_types import JsonObject
from agent_core.knowledge.chunking import Chunk, kind_of
from agent_core.knowledge.database_catalog import index_databases
from agent_core.knowledge.embeddings import EmbeddingIndex, fuse
from agent_core.knowledge.fts_query import fts_expression
from agent_core.knowledge.indexer import Indexer, IndexState
from agent_core.knowledge.store import Hit, IndexStore
from agent_core.workspace import Workspace

log = logging.getLogger("cellwright.knowledge")

DEBOUNCE_MS = 300
INITIAL_BUILD_WAIT = 30.0  # a first search waits this long for the initial build, then searches what is there
POLL_SECONDS = 10.0  # when the watcher cannot run (no inotify watches left): a rescan this often
MAX_K = 20
CANDIDATES = 50  # per ranking, before fusion


class KnowledgeBase:
    def __init__(self, workspace: Workspace, data_dir: Path, settings: Callable[[], AgentSettings]) -> None:
        self.workspace = workspace
        self.settings = settings
        key = hashlib.sha256(str(workspace.root).encode()).hexdigest()[:16]
        folder = data_dir / "knowledge"
        self.store = IndexStore(folder / f"index-{key}.sqlite")
        self.state = IndexState()
        self.indexer = Indexer(workspace, self.store, self.state)
        self._qdrant_folder = folder / f"qdrant-{key}"
        self._embeddings: Any = None
        self._built = asyncio.Event()
        self._watching = asyncio.Event()  # the watcher's watches are in place (or it could not start)
        self._stop = threading.Event()  # read by the watcher's thread
        self._tasks: list[asyncio.Task[None]] = []
        self._databases_read: dict[str, str] = {}  # name -> the URL whose tables are indexed
        self._databases_lock = asyncio.Lock()
        self.loop: asyncio.AbstractEventLoop | None = None

    # -- life cycle

    @property
    def started(self) -> bool:
        return bool(self._tasks)

    def start(self) -> None:
        if self._tasks:
            return
        self.loop = asyncio.get_running_loop()
        self._tasks = [asyncio.create_task(self._watch()), asyncio.create_task(self._build())]

    async def stop(self) -> None:
        self._stop.set()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self.state.state = "stopped"
        if self._embeddings is not None:
            self._embeddings.close()
        await asyncio.to_thread(self.store.close)

    async def _build(self) -> None:
        self.state.state = "building"
        # The watches first, then the scan: no change falls between the scan and the watch.
        await self._watching.wait()
        try:
            changed = await asyncio.to_thread(self.indexer.scan)
            await self._embed(changed)
            await self.refresh_databases()
        except Exception as exc:  # an unreadable root: said in the status, search still answers (empty)
            log.warning("Cellwright: the knowledge index could not be built: %s", exc)
            self.state.error(".", f"initial build failed: {type(exc).__name__}: {exc}")
        finally:
            self.state.state = "ready"
            self._built.set()

    def _wanted(self, change: object, path: str) -> bool:
        # Documents, and folders (no suffix): a renamed or deleted folder is reported as the folder only.
        return (kind_of(path) is not None or not Path(path).suffix) and not self.workspace.is_denied(path)

    async def _watch(self) -> None:
        loop = asyncio.get_running_loop()
        batches: asyncio.Queue[set[tuple[Any, str]] | BaseException | None] = asyncio.Queue()
        flag = _WatchStop(self._stop, lambda: _post(loop, self._watching.set))
        thread = threading.Thread(
            target=self._watch_thread, args=(loop, batches, flag), name="cellwright-knowledge-watcher", daemon=True
        )
        try:
            thread.start()
            while (batch := await batches.get()) is not None:
                if isinstance(batch, BaseException):
                    raise batch
                paths = sorted({Path(path) for _, path in batch})
                changed = await asyncio.to_thread(self.indexer.update, paths)
                await self._embed(changed)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # no inotify watches left, a root that vanished: fall back to rescans
            self._watching.set()
            self.state.error(
                ".", f"the file watcher stopped ({type(exc).__name__}: {exc}); rescanning every {POLL_SECONDS:g} s"
            )
            while not self._stop.is_set():
                await asyncio.sleep(POLL_SECONDS)
                await self._embed(await asyncio.to_thread(self.indexer.scan))

    def _watch_thread(self, loop: asyncio.AbstractEventLoop, batches: asyncio.Queue[Any], flag: _WatchStop) -> None:
        """On the watcher's thread: watchfiles' batches, handed to the loop until `flag` is set."""
        outcome: BaseException | None = None
        try:
            # watchfiles loads with the first watcher: the server starts without it (bench/server_start.py)
            from watchfiles import watch

            for batch in watch(
                self.workspace.root,
                stop_event=flag,
                debounce=DEBOUNCE_MS,
                step=50,
                watch_filter=self._wanted,
                recursive=True,
                ignore_permission_denied=True,
                raise_interrupt=False,
            ):
                _post(loop, batches.put_nowait, batch)
        except BaseException as exc:
            outcome = exc
        _post(loop, batches.put_nowait, outcome)

    # -- embeddings (optional)

    def _embedding_index(self) -> Any:
        settings = self.settings()
        model = settings.embedding_model
        if not model or settings.data_policy == "schema_only":  # embeddings send the text: BM25 only
            return None
        if self._embeddings is None or self._embeddings.model != model:
            if self._embeddings is not None:
                self._embeddings.close()
            self._embeddings = EmbeddingIndex(self._qdrant_folder, model)
        return self._embeddings

    async def _embed(self, paths: list[str]) -> None:
        index = self._embedding_index()
        if index is None or not paths:
            return
        try:
            await index.update(self.settings(), self.store, paths)
        except Exception as exc:  # the endpoint refused, qdrant-client missing: BM25 still answers
            self.state.error(paths[0], f"embeddings failed: {type(exc).__name__}: {exc}")

    # -- what callers use

    async def refresh_databases(self, forget: str | None = None) -> None:
        """Index the tables of the configured databases not read yet (`forget`: read that one again)."""
        async with self._databases_lock:
            if forget is not None:
                self._databases_read.pop(forget, None)
            await index_databases(self, self.settings().databases, self._databases_read)

    async def index_documents(self, origin: str, documents: dict[str, list[Chunk]]) -> None:
        """Index non-file sources (a database's tables) under their own paths; they stay until replaced."""
        for path, chunks in documents.items():
            await asyncio.to_thread(self.store.replace, path, origin, 0, 0, chunks)
        await self._embed(list(documents))

    async def search(self, query: str, k: int = 5, origin: str | None = None) -> list[Hit]:
        self.start()
        if not self._built.is_set():
            try:
                await asyncio.wait_for(self._built.wait(), INITIAL_BUILD_WAIT)
            except asyncio.TimeoutError:
                pass
        k = max(1, min(int(k), MAX_K))
        await self.refresh_databases()  # databases configured since the build (nothing to do when read)
        expression = fts_expression(query)
        lexical = await asyncio.to_thread(self.store.search, expression, CANDIDATES, origin) if expression else []
        index = self._embedding_index()
        if index is None:
            return lexical[:k]
        try:
            nearest = await index.search(self.settings(), query, CANDIDATES)
        except Exception as exc:
            self.state.error("", f"embedding search failed: {type(exc).__name__}: {exc}")
            return lexical[:k]
        return await asyncio.to_thread(self._fused, lexical, nearest, k, origin)

    def _fused(self, lexical: list[Hit], nearest: list[tuple[str, int]], k: int, origin: str | None) -> list[Hit]:
        by_key = {hit.key: hit for hit in lexical}
        keys = fuse([[hit.key for hit in lexical], [f"{path}#{position}" for path, position in nearest]], CANDIDATES)
        found: list[Hit] = []
        for key in keys:
            hit = by_key.get(key)
            if hit is None:
                path, _, position = key.rpartition("#")
                hit = self.store.chunk(path, int(position))
            if hit is not None and (origin is None or hit.path.startswith("db:") == (origin == "database")):
                found.append(hit)
            if len(found) >= k:
                break
        return found

    def status(self) -> JsonObject:
        counts = self.store.counts() if self.state.state != "stopped" else {"files": 0, "chunks": 0, "tables": 0}
        with self.state.lock:
            errors = list(self.state.errors)
        return {
            "state": self.state.state if self.started else "idle",
            **counts,
            "last_update": self.state.last_update,
            "skipped": self.state.skipped,
            "errors": errors,
            "embedding_model": self.settings().embedding_model or None,
        }


class _WatchStop:
    """The watcher's stop flag. watchfiles reads it on the watcher's thread at every step, from the
    moment its watches are in place: the first read says so (`on_watching`)."""

    def __init__(self, stop: threading.Event, on_watching: Callable[[], None]) -> None:
        self._stop = stop
        self._on_watching: Callable[[], None] | None = on_watching

    def is_set(self) -> bool:
        if self._on_watching is not None:
            on_watching, self._on_watching = self._on_watching, None
            on_watching()
        return self._stop.is_set()


def _post(loop: asyncio.AbstractEventLoop, callback: Callable[..., Any], *args: Any) -> None:
    """`callback(*args)` on `loop`, from another thread; nothing once the loop is closed."""
    try:
        loop.call_soon_threadsafe(callback, *args)
    except RuntimeError:  # the loop is closed: no one is waiting any more
        pass


_BASES: dict[tuple[str, str], KnowledgeBase] = {}


def knowledge_base(workspace: Workspace, data_dir: Path | str, settings: Callable[[], AgentSettings]) -> KnowledgeBase:
    """The knowledge base of this root and data folder (one per process; its tasks live on the first caller's loop)."""
    key = (str(workspace.root), str(Path(data_dir).resolve()))
    base = _BASES.get(key)
    if (
        base is not None and base.loop is not None and base.loop.is_closed()
    ):  # its loop ended (a test's, a %agent call's)
        base._stop.set()  # its watcher's thread ends too
        base.store.close()
        base = None
    if base is None or base.state.state == "stopped":
        base = _BASES[key] = KnowledgeBase(workspace, Path(data_dir), settings)
    else:
        base.settings = settings
    return base


async def stop_all() -> None:
    for key in list(_BASES):
        await _BASES.pop(key).stop()
