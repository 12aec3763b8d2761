"""Pre-images of the files the agent writes (write_file, edit_file), so a rewind can put them back
(issue 25). Kept on the step's tool message in the thread's state (PREIMAGE_KEY, never sent to the
model): it lives as long as the conversation that made it, survives a restart and is deleted with
the thread. The agent's file writes and their reverts go through write_atomic. Bounded: a file over MAX_PREIMAGE_BYTES, or not UTF-8 text, is not kept (a rewind then
names it as not reversible)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import uuid
from pathlib import Path

from agent_core.messages import Preimage

MAX_PREIMAGE_BYTES = 1024 * 1024
ABSENT = "absent"  # an image's `after` when the step deleted the file (an outside agent's command can)


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def capture(path: Path, rel: str, after: bytes) -> Preimage:
    """What `path` holds before the write of `after` (read just before it)."""
    image: Preimage = {"path": rel, "existed": path.exists(), "after": digest(after)}
    if not image["existed"]:
        return image
    size = path.stat().st_size
    if size > MAX_PREIMAGE_BYTES:
        image["why"] = f"the file was {size} bytes before the step, more than the {MAX_PREIMAGE_BYTES} kept"
        return image
    try:
        image["content"] = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        image["why"] = "the file was not UTF-8 text before the step"
    return image


def check(image: Preimage) -> str | None:
    """Why `image` cannot put its file back (None: it can)."""
    if image.get("existed") and "content" not in image:
        return f"{image.get('path')}: no copy from before the step was kept ({image.get('why', 'unknown')})"
    return None


def current(path: Path) -> bytes | None:
    return path.read_bytes() if path.is_file() else None


def blocked(path: Path, image: Preimage) -> str | None:
    """Why `image` cannot put `path` back now (None: it can). A file changed since the step (by the
    user, or a command) is left alone: no edit is lost."""
    problem = check(image)
    if problem:
        return problem
    now = current(path)
    after = image.get("after")
    if (now is None) != (after == ABSENT) or (now is not None and digest(now) != after):
        return f"{image.get('path')}: changed since the step (not by the agent's later steps), so left as it is"
    return None


def revert(path: Path, image: Preimage) -> str | None:
    """Put `path` back as it was before the step; the reason when it is not (then it is untouched)."""
    problem = blocked(path, image)
    if problem:
        return problem
    if image.get("existed"):
        write_atomic(path, str(image["content"]).encode("utf-8"))
    else:
        path.unlink()
    return None


def write_atomic(path: Path, data: bytes) -> None:
    """Write through a temporary file in the same folder (new files get the umask's mode, replaced
    files keep theirs), so a failure never leaves a half-written file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o7777 if path.exists() else None
    tmp = path.parent / f".{path.name}.{uuid.uuid4().hex[:8]}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
