"""Undo of an outside agent's approved file writes (jupyter_ext.acp_host): each file as it was before
the write, taken as our own write_file takes it (agent_core.undo.preimages: bounded, UTF-8 only) and
kept in the data folder (owner-only), one file per thread, so an undo still works after a restart and
the copies go with the thread when it is deleted. A file changed since the write is left alone."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import cast

from agent_core.messages import Preimage
from agent_core.private_files import private_file
from agent_core.undo import preimages
from agent_core.workspace import Workspace

from .errors import Conflict

MAX_UNDOABLE = 100  # approved file writes per thread kept for undo; the oldest stops being undoable first
_THREAD_ID = re.compile(r"[\w-]{1,100}")  # as the routes' thread_id: a file name, never a path


class HostedWrites:
    """card id -> the pre-image of its write, per thread, in `folder`."""

    def __init__(self, folder: Path, workspace: Workspace) -> None:
        self._folder = folder
        self._workspace = workspace

    def keep(self, thread_id: str, card_id: str, image: Preimage) -> None:
        kept = self._read(thread_id)
        kept[card_id] = dict(image)
        while len(kept) > MAX_UNDOABLE:
            kept.pop(next(iter(kept)))
        self._write(thread_id, kept)

    def undo(self, thread_id: str, card_id: str) -> tuple[list[str], list[str]]:
        """Put the file of write `card_id` back as it was (deleted, if the write made it): the paths
        restored, and removed."""
        kept = self._read(thread_id)
        image = kept.get(card_id)
        if not isinstance(image, dict):
            raise Conflict(f"{card_id[:200]!r} is no file write of this thread that can be undone.", "conflict")
        relative = str(image.get("path", ""))
        problem = preimages.revert(self._workspace.resolve(relative), cast(Preimage, image))
        if problem:
            raise Conflict(problem[:1].upper() + problem[1:] + ".", "conflict")
        del kept[card_id]
        self._write(thread_id, kept)
        return ([relative], []) if image.get("existed") else ([], [relative])

    def drop(self, thread_id: str) -> None:
        self._file(thread_id).unlink(missing_ok=True)

    def _file(self, thread_id: str) -> Path:
        if not _THREAD_ID.fullmatch(thread_id):
            raise ValueError(f"not a thread id: {thread_id[:100]!r}")
        return self._folder / f"{thread_id}.json"

    def _read(self, thread_id: str) -> dict[str, object]:
        try:
            data = json.loads(self._file(thread_id).read_text(encoding="utf-8"))
        except (OSError, ValueError):  # none kept yet
            return {}
        return data if isinstance(data, dict) else {}

    def _write(self, thread_id: str, kept: dict[str, object]) -> None:
        target = self._file(thread_id)
        partial = private_file(target.with_suffix(".partial"))
        partial.write_text(json.dumps(kept), encoding="utf-8")
        os.replace(partial, target)  # whole or not at all
