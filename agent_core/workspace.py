"""Path confinement: every path a tool or route touches stays inside the server's root directory.

A path is resolved first (symlinks followed, `..` collapsed) and only then checked against the
resolved root, so neither `../x` nor a symlink pointing out of the root gets through.

The errors here do not derive from ToolInputError on purpose (agent_core.tools imports this
module): tools turn a WorkspaceError into a ToolInputError, routes into a 400 with its `kind`."""
from __future__ import annotations

import os
from pathlib import Path


class WorkspaceError(Exception):
    """A path the caller can correct; `kind` is the error kind of the HTTP routes."""

    kind = "bad_path"

    def __init__(self, message: str, kind: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if kind:
            self.kind = kind


class PathOutsideRoot(WorkspaceError):
    kind = "path_outside_root"


def resolve_in_root(root: Path | str, path: str | os.PathLike[str] | None) -> Path:
    """The absolute, resolved form of `path` (relative to `root`, or absolute inside it).

    Raises PathOutsideRoot when it resolves outside the root, WorkspaceError when it is not a
    usable path at all. The path need not exist."""
    if path is None:
        path = "."
    if not isinstance(path, (str, os.PathLike)):
        raise WorkspaceError(f"a path must be a string, not {type(path).__name__}")
    text = os.fspath(path)
    if "\x00" in text:
        raise WorkspaceError("a path cannot contain a NUL character")
    base = Path(root).resolve()
    candidate = Path(text.strip() or ".")
    if not candidate.is_absolute():
        candidate = base / candidate
    try:
        resolved = candidate.resolve()
    except (OSError, RuntimeError) as exc:  # a symlink loop, a name too long
        raise WorkspaceError(f"cannot resolve the path {text!r}: {exc}") from None
    if not resolved.is_relative_to(base):
        raise PathOutsideRoot(
            f"the path {text!r} is outside the workspace root; use a path inside it, relative to the root"
        )
    return resolved


def relative_to_root(root: Path | str, path: Path) -> str:
    """`path` as shown to the model and the user: relative to the root, with forward slashes."""
    rel = path.relative_to(Path(root).resolve()).as_posix()
    return rel or "."


def human_size(size: int | float) -> str:
    """1536 -> '1.5 KiB'."""
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"  # pragma: no cover
