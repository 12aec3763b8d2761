"""Path confinement: every path a tool or route touches stays inside the server's root directory,
out of hidden files (unless the server allows them) and out of the folders that hold secrets.

A path is resolved (symlinks followed, `..` collapsed) and checked against the resolved root, so
neither `../x` nor a symlink pointing out of the root gets through. The hidden-file rule and the
denied folders are checked on the path as written (normalised) AND on where it resolves to: a
plain-looking symlink must not reach `.env`, and `a/../.env` must not slip past a check of the
first component only.

Denied folders are Cellwright's data directory (settings.json holds the API key) and Jupyter's
runtime directory (kernel connection files hold the keys that let anyone run code in a kernel).
They are denied even when hidden files are allowed, and even when they are not hidden at all
(JUPYTER_DATA_DIR under the root, ~/Library/Jupyter on macOS with the home folder as root).

The errors here do not derive from ToolInputError on purpose (agent_core.tools imports this
module): tools turn a WorkspaceError into a ToolInputError, routes into a 400 with its `kind`."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from jupyter_core.paths import is_file_hidden, is_hidden, jupyter_data_dir, jupyter_runtime_dir

from agent_core.contract.choices import RouteErrorKind
from agent_core.errors import BadRequest

IGNORED_DIRS = frozenset({".git", "node_modules", ".ipynb_checkpoints", "__pycache__"})  # never listed nor searched


class Rooted(Protocol):
    """What has a root directory and may have a policy of its own (a ToolEnvironment, agent_core.environment)."""

    @property
    def root_dir(self) -> Path: ...


class WorkspaceError(BadRequest):
    """A path the caller can correct; `kind` is the error kind of the HTTP routes."""

    kind: RouteErrorKind = "bad_path"


class PathOutsideRoot(WorkspaceError):
    kind = "path_outside_root"


class HiddenPath(WorkspaceError):
    kind = "hidden_path"


class PathDenied(WorkspaceError):
    kind = "path_denied"


def default_denied() -> tuple[Path, ...]:
    """Where secrets live when nothing else is configured: `<jupyter data dir>/cellwright` and the
    runtime directory. Read at call time: tests and kernels set JUPYTER_DATA_DIR and friends."""
    return (Path(jupyter_data_dir()) / "cellwright", Path(jupyter_runtime_dir()))


def _folded(path: Path | str) -> str:
    # Compared case-insensitively: on macOS and Windows `JUPYTER-DATA/CellWright` is the same folder,
    # and resolve() does not fix the case. Over-denying a differently-cased folder on Linux is harmless.
    return os.path.normcase(os.fspath(path)).casefold().rstrip(os.sep) or os.sep


def _inside(path: Path | str, folder: str) -> bool:
    text = _folded(path)
    return text == folder or text.startswith(folder if folder.endswith(os.sep) else folder + os.sep)


def _is_file_hidden(path: str, stat_result: os.stat_result | None = None) -> bool:
    """Jupyter's own rule for one name (a leading dot, or the UF_HIDDEN flag on macOS)."""
    try:
        return bool(is_file_hidden(path, stat_res=stat_result))
    except OSError:  # cannot even be stat'ed: treat as hidden rather than guess
        return True


def _is_hidden_below(path: Path, root: Path) -> bool:
    """Whether `path` (inside `root`) is hidden or inside a hidden folder, by Jupyter's rule."""
    if any(part.startswith(".") for part in path.relative_to(root).parts):
        return True  # also for paths that do not exist yet (write_file)
    probe = path
    while probe != root and not os.path.lexists(probe):  # a new file: its nearest existing folder decides
        probe = probe.parent
    try:
        return bool(is_hidden(str(probe), str(root)))
    except (OSError, ValueError):
        return True


@dataclass(frozen=True)
class Workspace:
    """What the file, search and shell tools (and the routes) may touch: `root` and below, minus
    hidden paths unless `allow_hidden` (Jupyter's ContentsManager.allow_hidden), minus the `denied`
    folders always. One policy object so no caller re-implements a part of it."""

    root: Path
    allow_hidden: bool = False
    denied: tuple[Path, ...] = ()
    _root_forms: tuple[Path, ...] = field(init=False, repr=False, compare=False)
    _denied_forms: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        given = Path(os.path.abspath(os.path.expanduser(os.fspath(self.root))))
        resolved = given.resolve()
        object.__setattr__(self, "root", resolved)
        object.__setattr__(self, "_root_forms", (resolved,) if given == resolved else (resolved, given))
        forms: set[str] = set()
        for folder in self.denied:
            absolute = Path(os.path.abspath(os.path.expanduser(os.fspath(folder))))
            forms.update({_folded(absolute), _folded(absolute.resolve())})
        object.__setattr__(self, "denied", tuple(Path(os.path.abspath(os.fspath(f))) for f in self.denied))
        object.__setattr__(self, "_denied_forms", tuple(sorted(forms)))

    @classmethod
    def default(cls, root: Path | str) -> Workspace:
        """The safe policy: no hidden paths, and the default secret folders denied."""
        return cls(Path(root), allow_hidden=False, denied=default_denied())

    # -- checks

    def is_denied(self, path: Path | str) -> bool:
        return any(_inside(path, folder) for folder in self._denied_forms)

    def resolve(self, path: str | os.PathLike[str] | None) -> Path:
        """The absolute, resolved form of `path` (relative to the root, or absolute inside it).

        Raises PathOutsideRoot, HiddenPath, PathDenied, or a plain WorkspaceError when it is not a
        usable path at all. The path need not exist."""
        if path is None:
            path = "."
        if not isinstance(path, (str, os.PathLike)):
            raise WorkspaceError(f"a path must be a string, not {type(path).__name__}")
        text = os.fspath(path)
        if "\x00" in text:
            raise WorkspaceError("a path cannot contain a NUL character")
        candidate = Path(text.strip() or ".")
        if not candidate.is_absolute():
            candidate = self.root / candidate
        lexical = Path(os.path.normpath(candidate))
        try:
            resolved = candidate.resolve()
        except (OSError, RuntimeError) as exc:  # a symlink loop, a name too long
            raise WorkspaceError(f"cannot resolve the path {text!r}: {exc}") from None
        if not resolved.is_relative_to(self.root):
            raise PathOutsideRoot(
                f"the path {text!r} is outside the workspace root; use a path inside it, relative to the root"
            )
        if self.is_denied(lexical) or self.is_denied(resolved):
            raise PathDenied(
                f"the path {text!r} is in a folder that holds Cellwright's or Jupyter's secrets (API keys, "
                "kernel connection keys); no tool reads, lists or writes there. Work with other files of the workspace"
            )
        if not self.allow_hidden:
            hidden = _is_hidden_below(resolved, self.root) or any(
                _is_hidden_below(lexical, form) for form in self._root_forms if lexical.is_relative_to(form)
            )
            if hidden:
                raise HiddenPath(
                    f"the path {text!r} is hidden (a dot-file or inside a dot-folder, or a link to one); Cellwright's "
                    "tools skip hidden files as Jupyter does (ContentsManager.allow_hidden is off). Use a file that is "
                    "not hidden, or ask the user for what you need from it"
                )
        return resolved

    def visible(self, path: str | os.PathLike[str], entry: os.DirEntry[str] | None = None) -> bool:
        """Whether a walker may show or open `path` (an absolute path inside the root, usually the
        `os.DirEntry` found while walking a resolved folder). Never raises: walks skip silently."""
        text = os.fspath(path)
        try:
            if self.is_denied(text):
                return False
            is_link = entry.is_symlink() if entry is not None else os.path.islink(text)
            if not self.allow_hidden:
                stat_result = entry.stat(follow_symlinks=False) if entry is not None else None
                if _is_file_hidden(text, stat_result):
                    return False
            if is_link:
                target = Path(text).resolve()
                if self.is_denied(target):
                    return False
                if not self.allow_hidden and target.is_relative_to(self.root) and _is_hidden_below(target, self.root):
                    return False
        except (OSError, RuntimeError, ValueError):
            return False
        return True

    def denied_under_root(self) -> list[str]:
        """The denied folders inside the root, relative to it (for ripgrep's exclusion globs)."""
        found: list[str] = []
        root_forms = [_folded(form) for form in self._root_forms]
        for folder in self._denied_forms:
            for root in root_forms:
                if folder != root and _inside(folder, root):
                    rel = folder[len(root) :].strip(os.sep).replace(os.sep, "/")
                    if rel and rel not in found:
                        found.append(rel)
        return found


def workspace_for(root: Workspace | Path | str) -> Workspace:
    if isinstance(root, Workspace):
        return root
    return Workspace.default(Path(os.path.abspath(os.path.expanduser(os.fspath(root)))))


def workspace_of(env: Rooted) -> Workspace:
    """The policy of a ToolEnvironment: its `workspace` when it has one, else the one for its root."""
    workspace = getattr(env, "workspace", None)
    if isinstance(workspace, Workspace):
        return workspace
    return workspace_for(env.root_dir)


def resolve_in_root(root: Workspace | Path | str, path: str | os.PathLike[str] | None) -> Path:
    """`path` resolved and checked by the policy of `root` (see Workspace.resolve)."""
    return workspace_for(root).resolve(path)


def relative_to_root(root: Workspace | Path | str, path: Path) -> str:
    """`path` as shown to the model and the user: relative to the root, with forward slashes."""
    base = root.root if isinstance(root, Workspace) else Path(root).resolve()
    rel = path.relative_to(base).as_posix()
    return rel or "."


def _scan_sorted(directory: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(directory) as it:
            return sorted((e for e in it if e.name not in IGNORED_DIRS), key=lambda e: e.name)
    except OSError:  # unreadable, vanished
        return []


def walk(directory: Path, recursive: bool = True, workspace: Workspace | None = None) -> Iterator[os.DirEntry[str]]:
    """Entries in path order (pre-order, names sorted, as `rg --sort path`); symlinked folders are not
    entered. With a workspace, what its policy hides is skipped (and never entered)."""
    visible: Callable[[os.DirEntry[str]], bool] = (
        (lambda entry: True) if workspace is None else (lambda entry: workspace.visible(entry.path, entry))
    )
    stack = [iter(_scan_sorted(directory))]
    while stack:
        entry = next(stack[-1], None)
        if entry is None:
            stack.pop()
            continue
        if not visible(entry):
            continue
        yield entry
        if recursive and entry.is_dir(follow_symlinks=False):
            stack.append(iter(_scan_sorted(Path(entry.path))))


def human_size(size: int | float) -> str:
    """1536 -> '1.5 KiB'."""
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"  # pragma: no cover
