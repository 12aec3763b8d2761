"""Undo of an outside agent's approved file writes (jupyter_ext.acp_host): its fs/write_text_file
writes, and the files its own commands changed (jupyter_ext.acp_watch); each file as it was before
the step, taken as our own write_file takes it (agent_core.undo.preimages: bounded, UTF-8 only) and
kept in the data folder (owner-only), one file per thread, so an undo still works after a restart and
the copies go with the thread when it is deleted. A file changed since the write is left alone."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import cast

from agent_core.messages import Preimage
from agent_core.private_files import private_file
from agent_core.undo import preimages
from agent_core.workspace import Workspace, WorkspaceError

from .errors import Conflict

MAX_UNDOABLE = 100  # approved file writes per thread kept for undo; the oldest stops being undoable first
_THREAD_ID = re.compile(r"[\w-]{1,100}")  # as the routes' thread_id: a file name, never a path


class HostedWrites:
    """card id -> the pre-image of its write, per thread, in `folder`."""

    def __init__(self, folder: Path, workspace: Workspace) -> None:
        self._folder = folder
        self._workspace = workspace

    def keep(self, thread_id: str, card_id: str, images: list[Preimage], not_undoable: Sequence[str] = ()) -> None:
        """The files step `card_id` wrote (one for fs/write_text_file; those a command changed, as
        jupyter_ext.acp_watch saw them), and what it changed that cannot be undone."""
        kept = self._read(thread_id)
        kept[card_id] = {"images": [dict(image) for image in images], "not_undoable": list(not_undoable)[:100]}
        while len(kept) > MAX_UNDOABLE:
            kept.pop(next(iter(kept)))
        self._write(thread_id, kept)

    def undo(self, thread_id: str, card_id: str) -> tuple[list[str], list[str], list[str]]:
        """Put the files of step `card_id` back as they were (deleted, if the step made them): the paths
        restored, removed, and not undone (each with why). A file changed since is left alone."""
        kept = self._read(thread_id)
        entry = kept.get(card_id)
        if isinstance(entry, dict) and "path" in entry:  # kept before a step could hold several files
            entry = {"images": [entry], "not_undoable": []}
        if not isinstance(entry, dict) or not isinstance(entry.get("images"), list):
            raise Conflict(f"{card_id[:200]!r} is no file write of this thread that can be undone.", "conflict")
        images = [cast(Preimage, image) for image in entry["images"] if isinstance(image, dict)]
        not_undone = [str(why) for why in entry.get("not_undoable") or []]
        restored: list[str] = []
        removed: list[str] = []
        for image in images:
            relative = str(image.get("path", ""))
            try:
                problem = preimages.revert(self._workspace.resolve(relative), image)
            except WorkspaceError as exc:  # a path the policy refuses now (the root's settings changed)
                problem = f"{relative}: {exc.message}"
            if problem:
                not_undone.append(problem)
            else:
                (restored if image.get("existed") else removed).append(relative)
        if not restored and not removed:
            problem = "; ".join(not_undone) or "nothing it changed is left to put back"
            raise Conflict(problem[:1].upper() + problem[1:2000] + ".", "conflict")
        del kept[card_id]
        self._write(thread_id, kept)
        return restored, removed, not_undone

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
