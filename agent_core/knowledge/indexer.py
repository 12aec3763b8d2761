"""What goes into the index, and when: a full scan (the initial build, and again after the
watcher lost track) and updates of single paths (the watcher's batches).

Only what the file tools may read is indexed: the workspace's hidden-file rule and its denied
folders (Cellwright's data folder, Jupyter's runtime folder) apply through agent_core.workspace,
and the same folders the file listing skips (node_modules, .git, __pycache__) are skipped. Sizes
are capped per file and per workspace. Blocking: run in a worker thread."""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from agent_core.knowledge.chunking import chunk_document, kind_of
from agent_core.knowledge.store import IndexStore
from agent_core.workspace import Workspace, WorkspaceError, relative_to_root, walk  # the file listing's walk

MAX_FILE_BYTES = 2_000_000
MAX_NOTEBOOK_BYTES = 20_000_000  # notebooks carry their outputs, which are not indexed
MAX_WORKSPACE_BYTES = 500_000_000
MAX_FILES = 50_000
MAX_ERRORS = 20


@dataclass
class IndexState:
    """What the panel's status line shows (GET knowledge/status)."""

    state: str = "idle"  # idle, building, ready, stopped
    last_update: float | None = None
    errors: deque[dict[str, str]] = field(default_factory=lambda: deque(maxlen=MAX_ERRORS))
    skipped: int = 0  # files left out by the workspace caps
    lock: threading.Lock = field(default_factory=threading.Lock)

    def error(self, path: str, message: str) -> None:
        with self.lock:
            self.errors.append({"path": path, "message": message[:300]})


def _cap(path: str) -> int:
    return MAX_NOTEBOOK_BYTES if path.endswith(".ipynb") else MAX_FILE_BYTES


class Indexer:
    def __init__(self, workspace: Workspace, store: IndexStore, state: IndexState | None = None) -> None:
        self.workspace = workspace
        self.store = store
        self.state = state or IndexState()

    def _candidates(self) -> dict[str, tuple[Path, os.stat_result]]:
        found: dict[str, tuple[Path, os.stat_result]] = {}
        total = skipped = 0
        for entry in walk(self.workspace.root, recursive=True, workspace=self.workspace):
            if kind_of(entry.name) is None or not entry.is_file(follow_symlinks=False):
                continue
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            rel = relative_to_root(self.workspace, Path(entry.path))
            if info.st_size > _cap(rel):
                continue
            if len(found) >= MAX_FILES or total + info.st_size > MAX_WORKSPACE_BYTES:
                skipped += 1
                continue
            total += info.st_size
            found[rel] = (Path(entry.path), info)
        self.state.skipped = skipped
        return found

    def scan(self) -> list[str]:
        """Bring the index in line with the workspace; returns the paths (re)indexed or removed."""
        found = self._candidates()
        known = self.store.sources("file")
        changed = []
        for rel, (path, info) in found.items():
            if known.get(rel) != (info.st_mtime_ns, info.st_size):
                self._index(rel, path, info, new=rel not in known)
                changed.append(rel)
        gone = [rel for rel in known if rel not in found]
        self.store.remove(gone)
        self.state.last_update = time.time()
        return changed + gone

    def update(self, paths: Iterable[Path]) -> list[str]:
        """Re-index (or drop) the given absolute paths; what the policy hides is dropped, never read.
        A folder (renamed, moved, deleted: the watcher names only the folder) is brought in line whole."""
        changed = []
        for path in paths:
            try:
                rel = relative_to_root(self.workspace, Path(os.path.abspath(path)))
            except ValueError:
                continue
            if kind_of(rel) is None:
                if not os.path.isfile(path):  # a Makefile or LICENSE edit is nothing to the index
                    changed += self._update_folder(rel)
                continue
            try:
                resolved = self.workspace.resolve(rel)
                info = resolved.stat() if resolved.is_file() else None
            except (WorkspaceError, OSError):
                resolved, info = None, None
            if resolved is None or info is None or info.st_size > _cap(rel):
                self.store.remove([rel])
            else:
                self._index(rel, resolved, info)
            changed.append(rel)
        if changed:
            self.state.last_update = time.time()
        return changed

    def _update_folder(self, rel: str) -> list[str]:
        prefix = "" if rel == "." else rel.rstrip("/") + "/"
        indexed = [path for path in self.store.sources("file") if path.startswith(prefix)]
        found: list[Path] = []
        try:
            folder = self.workspace.resolve(rel)
            if folder.is_dir():
                found = [
                    Path(e.path)
                    for e in walk(folder, recursive=True, workspace=self.workspace)
                    if kind_of(e.name) is not None and e.is_file(follow_symlinks=False)
                ]
        except WorkspaceError:
            pass  # hidden or denied: whatever was indexed under it goes
        present = {relative_to_root(self.workspace, path) for path in found}
        gone = [path for path in indexed if path not in present]
        self.store.remove(gone)
        fresh = [path for path in found if relative_to_root(self.workspace, path) not in indexed]
        return gone + (self.update(fresh) if fresh else [])

    def _index(self, rel: str, path: Path, info: os.stat_result, new: bool = False) -> None:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
            chunks = chunk_document(rel, text)
        except (OSError, RecursionError, MemoryError) as exc:
            self.state.error(rel, f"{type(exc).__name__}: {exc}")
            return
        self.store.replace(rel, "file", info.st_mtime_ns, info.st_size, chunks, new=new)
