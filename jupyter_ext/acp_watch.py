"""Undo for what an outside agent changes with its own hands (jupyter_ext.acp_host). Codex's ACP adapter
runs its commands and applies its patches itself: it asks session/request_permission, then writes
through its own shell, never through our fs/write_text_file or terminal/* (codex-acp 0.16 has neither
method; it ignores the client's fs capability). So when the user approves one of an agent's requests
that may change files, the workspace is looked at just before the approval goes back (each file's
size and modification time, and the text of each small file), and again when that tool call ends:
every file it created, changed or deleted gets a pre-image, kept under the card as our own writes'
are (jupyter_ext.acp_undo), and undo puts them back. What cannot be undone is named in undo's answer.

Bounded: hidden files and folders, denied folders and symbolic links are not looked at (the agent may
not write them through our tools either); at most MAX_FILES files, and MAX_KEPT_BYTES of text kept per look. A
workspace larger than that is watched for changes to the files seen, not for new ones (a new file
could be the user's, and undo would delete it)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from stat import S_ISREG

from agent_core.messages import Preimage
from agent_core.undo import preimages
from agent_core.workspace import Workspace

MAX_FILES = 20_000
MAX_KEPT_BYTES = 64 * 1024 * 1024
MAX_HASHED_BYTES = 256 * 1024 * 1024  # a file larger after the step is not undoable (named as such)
# ACP tool kinds that read or think only; any other request approved may change files.
READ_ONLY_KINDS = frozenset({"read", "search", "think", "fetch", "switch_mode"})


@dataclass(frozen=True)
class _Seen:
    size: int
    mtime_ns: int
    text: str | None  # the file's text, when it is UTF-8 and small enough to keep
    why: str = ""  # why the text was not kept


@dataclass(frozen=True)
class Snapshot:
    files: dict[str, _Seen]
    complete: bool  # every file of the workspace was seen: a file absent here did not exist


def take(workspace: Workspace) -> Snapshot:
    """The workspace's files as they are now (run in a worker thread: it reads files)."""
    root = workspace.root
    files: dict[str, _Seen] = {}
    budget = MAX_KEPT_BYTES
    for path, stat in _walk(workspace):
        if len(files) >= MAX_FILES:
            return Snapshot(files, complete=False)
        text, why = None, ""
        if stat.st_size > preimages.MAX_PREIMAGE_BYTES:
            why = f"it was {stat.st_size} bytes, more than the {preimages.MAX_PREIMAGE_BYTES} kept"
        elif stat.st_size > budget:
            why = f"the workspace held more than {MAX_KEPT_BYTES} bytes of files to keep"
        else:
            try:
                text = path.read_bytes().decode("utf-8")
                budget -= stat.st_size
            except UnicodeDecodeError:
                why = "it was not UTF-8 text"
            except OSError as exc:
                why = f"it could not be read ({type(exc).__name__})"
        files[path.relative_to(root).as_posix()] = _Seen(stat.st_size, stat.st_mtime_ns, text, why)
    return Snapshot(files, complete=True)


def changes(before: Snapshot, workspace: Workspace, skip: set[str]) -> tuple[list[Preimage], list[str]]:
    """Pre-images of the files created, changed or deleted since `before` (not those in `skip`, which
    have their own undo), and what cannot be undone, each with why."""
    root = workspace.root
    images: list[Preimage] = []
    not_undoable: list[str] = []
    seen_now: dict[str, os.stat_result] = {}
    if before.complete:  # new files count only when every file was seen before
        walked = _walk(workspace)
        if len(walked) > MAX_FILES:
            not_undoable.append(f"new files past the first {MAX_FILES} of the workspace were not looked at")
        seen_now = {path.relative_to(root).as_posix(): stat for path, stat in walked[:MAX_FILES]}
    for rel in before.files.keys() - seen_now.keys():  # gone, or past the walk's bound: asked directly
        stat = _stat(root / rel)
        if stat is not None:
            seen_now[rel] = stat
    for rel in sorted(before.files.keys() | seen_now.keys()):
        old, stat = before.files.get(rel), seen_now.get(rel)
        unchanged = (
            old is not None and stat is not None and (old.size, old.mtime_ns) == (stat.st_size, stat.st_mtime_ns)
        )
        if rel in skip or unchanged:
            continue
        after = preimages.ABSENT if stat is None else _digest(root / rel, stat.st_size)
        if after is None:
            not_undoable.append(f"{rel}: more than {MAX_HASHED_BYTES} bytes after the step")
            continue
        image: Preimage = {"path": rel, "existed": old is not None, "after": after}
        if old is not None:
            if old.text is None:
                not_undoable.append(f"{rel}: no copy from before the step was kept ({old.why})")
                continue
            image["content"] = old.text
        images.append(image)
    return images, not_undoable


def _walk(workspace: Workspace) -> list[tuple[Path, os.stat_result]]:
    """The workspace's regular files, in a stable order; one more than MAX_FILES when there are more."""
    found: list[tuple[Path, os.stat_result]] = []
    for folder, dirs, names in os.walk(workspace.root):  # symbolic links to folders are not followed
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and not workspace.is_denied(Path(folder) / d))
        for name in sorted(names):
            if name.startswith("."):
                continue
            stat = _stat(Path(folder) / name)
            if stat is not None:
                found.append((Path(folder) / name, stat))
            if len(found) > MAX_FILES:
                return found
    return found


def _stat(path: Path) -> os.stat_result | None:
    """A regular file's stat (not a link's, nor a gone file's)."""
    try:
        found = path.lstat()
    except OSError:
        return None
    return found if S_ISREG(found.st_mode) else None


def _digest(path: Path, size: int) -> str | None:
    if size > MAX_HASHED_BYTES:
        return None
    try:
        return preimages.digest(path.read_bytes())
    except OSError:
        return preimages.ABSENT  # gone between the look and the read


@dataclass
class _Window:
    card_id: str
    tool_call_id: str
    before: Snapshot
    skip: set[str] = field(default_factory=set)


class Watch:
    """One hosted thread's open window: from an approval to the end of its tool call (or of the turn,
    or the next approval, whichever comes first). `keep(card_id, images, not_undoable)` records it."""

    def __init__(self, workspace: Workspace, keep: Callable[[str, list[Preimage], list[str]], None]) -> None:
        self._workspace = workspace
        self._keep = keep
        self._open: _Window | None = None
        self._lock = asyncio.Lock()

    async def open(self, card_id: str, tool_call_id: str) -> None:
        """The user approved `card_id` for the agent's tool call: look before it acts."""
        async with self._lock:
            await self._close()
            before = await asyncio.to_thread(take, self._workspace)
            self._open = _Window(card_id, tool_call_id, before)

    def wrote(self, relative: str) -> None:
        """A file written through fs/write_text_file: its own card undoes it, not the open window's."""
        if self._open is not None:
            self._open.skip.add(relative)

    async def settle(self, tool_call_id: str | None = None) -> None:
        """The tool call ended (None: the turn did): what it changed is kept for undo."""
        async with self._lock:
            if self._open is not None and tool_call_id in (None, self._open.tool_call_id):
                await self._close()

    async def _close(self) -> None:
        window, self._open = self._open, None
        if window is None:
            return
        images, not_undoable = await asyncio.to_thread(changes, window.before, self._workspace, window.skip)
        if images or not_undoable:
            self._keep(window.card_id, images, not_undoable)
