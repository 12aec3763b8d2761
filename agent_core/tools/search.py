"""Search tools: the workspace's text files (ripgrep when installed, the same results from Python
otherwise) and the cells of its notebooks (nbformat). Paths go through the environment's Workspace
(confined to the root, hidden files and secret folders skipped); results and time are bounded.

The pattern comes from the model, so it is hostile input: ripgrep matches in linear time, in
another process; Python-side matching goes through search_patterns.Matcher (a time limit per
line). Every search also has an overall deadline, and runs in a worker thread."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import shutil
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field

from agent_core.json_types import JsonObject
from agent_core.tools.arguments import ToolArgs
from agent_core.tools.base import ToolContext, ToolInputError, ToolOutcome, ToolSpec
from agent_core.tools.files import confined, is_binary, sniff
from agent_core.tools.notebook_view import PENDING_NOTE, notebook_view, shown_id
from agent_core.tools.search_patterns import DeadlinePassed, Matcher, check_pattern
from agent_core.tools.spawn import start_process
from agent_core.workspace import (
    IGNORED_DIRS,
    Workspace,
    WorkspaceError,
    relative_to_root,
    walk,
    workspace_for,
    workspace_of,
)

MAX_SEARCH_RESULTS = 100
MAX_SEARCH_FILE_BYTES = 5 * 1024 * 1024
MAX_NOTEBOOK_BYTES = 50 * 1024 * 1024
MAX_NOTEBOOKS = 1000
SEARCH_SECONDS = 30.0
EXCERPT_CHARS = 300


@dataclass
class SearchResult:
    matches: list[JsonObject]
    truncated: bool = False
    engine: str = "ripgrep"
    note: str = ""


_TYPE_RE = re.compile(r"^[A-Za-z0-9_+-]{1,20}$")


def _file_types(raw: object) -> list[str]:
    if raw is None:
        return []
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list):
        raise ToolInputError('file_types must be a list of extensions, e.g. ["py", "csv"]')
    types = []
    for item in raw:
        ext = str(item).strip().lstrip("*").lstrip(".")
        if not _TYPE_RE.match(ext):
            raise ToolInputError(f"file type {item!r} is not an extension like 'py' or 'csv'")
        types.append(ext)
    return types


async def _off_the_loop(search: Any, *args: Any, **kwargs: Any) -> SearchResult:
    """Run a blocking search in a worker thread. A thread cannot be cancelled: when the run is
    (Stop, server shutdown), the search is told to stop at its next line instead of matching on
    for up to SEARCH_SECONDS and holding up the server's exit."""
    stop = threading.Event()
    try:
        return await asyncio.to_thread(search, *args, stop=stop, **kwargs)
    finally:
        stop.set()


def _glob_literal(text: str) -> str:
    return re.sub(r"([\\*?\[\]{}])", r"\\\1", text)


def _match(path: str, number: int, text: str) -> JsonObject:
    text = text.rstrip("\r\n").strip()
    if len(text) > EXCERPT_CHARS:
        text = text[:EXCERPT_CHARS] + " [...]"
    return {"path": path, "line": number, "text": text}


def _rg_text(value: JsonObject) -> str:
    if isinstance(text := value.get("text"), str):
        return text
    return base64.b64decode(str(value.get("bytes", ""))).decode("utf-8", errors="replace")


async def search_with_ripgrep(
    rg: str, where: Workspace | Path, target: Path, pattern: str, types: list[str], limit: int = MAX_SEARCH_RESULTS
) -> SearchResult:
    """`rg --json` from the root; raises ToolInputError for a pattern ripgrep rejects. ripgrep does
    not follow symlinks while it walks, so a link cannot lead it into a hidden or denied folder."""
    workspace = workspace_for(where)
    root = workspace.root
    cmd = [rg, "--json", "--sort", "path", "--smart-case", "--max-filesize", "5M", "--no-messages"]
    if workspace.allow_hidden:
        cmd.append("--hidden")
    for ext in types:
        cmd += ["--type-add", f"cellwright:*.{ext}"]
    if types:
        cmd += ["-t", "cellwright"]
        if not workspace.allow_hidden:
            cmd += ["-g", "!.*"]  # a type whitelist would let hidden files in again
    for name in sorted(IGNORED_DIRS):
        cmd += ["-g", f"!{name}/"]
    for rel in workspace.denied_under_root():  # anchored at the root (rg's cwd), any case
        cmd += ["--iglob", f"!/{_glob_literal(rel)}/"]
    cmd += ["-e", pattern, "--", os.path.relpath(target, root)]
    proc = await start_process(
        *cmd,
        cwd=str(root),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        limit=16 * 1024 * 1024,  # one JSON line holds a whole matching line
    )
    assert proc.stdout is not None and proc.stderr is not None
    matches: list[JsonObject] = []
    truncated = False
    note = ""
    deadline = time.monotonic() + SEARCH_SECONDS
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                truncated, note = True, f"the search stopped after {SEARCH_SECONDS:.0f} s"
                break
            try:
                line = await asyncio.wait_for(proc.stdout.readline(), remaining)
            except asyncio.TimeoutError:
                truncated, note = True, f"the search stopped after {SEARCH_SECONDS:.0f} s"
                break
            except ValueError:  # one JSON line longer than the stream limit: skip it
                continue
            if not line:
                break
            try:
                item = json.loads(line)
            except ValueError:
                continue
            if item.get("type") != "match":
                continue
            if len(matches) >= limit:
                truncated = True
                break
            data = item["data"]
            path = os.path.normpath(_rg_text(data["path"]))
            matches.append(_match(Path(path).as_posix(), int(data.get("line_number") or 0), _rg_text(data["lines"])))
    finally:
        if proc.returncode is None:
            if truncated:
                proc.kill()
            stderr = b""
            try:
                stderr = await asyncio.wait_for(proc.stderr.read(), 5)
                await asyncio.wait_for(proc.wait(), 5)
            except asyncio.TimeoutError:
                proc.kill()
                await proc.wait()
        else:
            stderr = await proc.stderr.read()
    if proc.returncode == 2 and not matches and not truncated:
        message = stderr.decode("utf-8", errors="replace").strip()
        raise ToolInputError(f"ripgrep rejected the search: {message[:500]}")
    return SearchResult(matches, truncated, "ripgrep", note)


def _walk_files(workspace: Workspace, target: Path, types: list[str]) -> Iterator[Path]:
    if target.is_file():
        yield target  # already checked by workspace.resolve
        return
    for entry in walk(target, recursive=True, workspace=workspace):  # hidden skipped as ripgrep does, unless allowed
        if entry.is_file(follow_symlinks=False) and (not types or any(entry.name.endswith(f".{ext}") for ext in types)):
            yield Path(entry.path)


def search_with_python(
    where: Workspace | Path,
    target: Path,
    pattern: str,
    types: list[str],
    limit: int = MAX_SEARCH_RESULTS,
    stop: threading.Event | None = None,
) -> SearchResult:
    """The same search and result shape as search_with_ripgrep, without ripgrep (no .gitignore
    rules). Blocking: run it in a worker thread."""
    workspace = workspace_for(where)
    matcher = Matcher(pattern, SEARCH_SECONDS, stop)
    root = workspace.root
    matches: list[JsonObject] = []
    try:
        for path in _walk_files(workspace, target, types):
            if time.monotonic() > matcher.deadline:
                raise DeadlinePassed
            try:
                if path.stat().st_size > MAX_SEARCH_FILE_BYTES or is_binary(sniff(path)):
                    continue
                with open(path, encoding="utf-8", errors="replace") as handle:
                    rel = os.path.relpath(path, root).replace(os.sep, "/")
                    for number, line in enumerate(handle, start=1):
                        if matcher.search(line, rel):
                            if len(matches) >= limit:
                                return SearchResult(matches, True, "python")
                            matches.append(_match(rel, number, line))
            except OSError:
                continue
    except DeadlinePassed:
        return SearchResult(matches, True, "python", matcher.stopped_note())
    return SearchResult(matches, False, "python")


async def search_files(
    where: Workspace | Path, pattern: str, path: object = None, file_types: object = None
) -> SearchResult:
    workspace = workspace_for(where)
    check_pattern(pattern)
    target = confined(workspace, path or ".")
    if not target.exists():
        raise ToolInputError(f"there is no {relative_to_root(workspace, target)!r} to search; call list_files")
    types = _file_types(file_types)
    rg = shutil.which("rg")
    if rg:
        try:
            return await search_with_ripgrep(rg, workspace, target, pattern, types)
        except ToolInputError:
            # ripgrep's dialect lacks look-around and backreferences: Python's may take the pattern
            # (compiled in the worker thread below, which says why if it cannot).
            pass
    return await _off_the_loop(search_with_python, workspace, target, pattern, types)


class SearchWorkspaceArgs(ToolArgs):
    pattern: str = Field(description="A regular expression.")
    path: str | None = Field(default=None, description="Folder or file to search (default: the whole root).")
    file_types: list[str] | None = Field(default=None, description='Extensions to search, e.g. ["py", "csv"].')


async def search_workspace(args: SearchWorkspaceArgs, ctx: ToolContext) -> ToolOutcome:
    result = await search_files(workspace_of(ctx.env), args.pattern, args.path, args.file_types)
    if not result.matches:
        return ToolOutcome("ok", f"No matches for {args.pattern!r}." + (f" ({result.note})" if result.note else ""))
    lines = [f"{m['path']}:{m['line']}: {m['text']}" for m in result.matches]
    if result.truncated:
        lines.append(
            f"... more matches not shown (first {len(result.matches)}); narrow the pattern, path or file_types"
        )
    if result.note:
        lines.append(f"[{result.note}]")
    return ToolOutcome(
        "ok", "\n".join(lines), summary=f"{len(result.matches)}{'+' if result.truncated else ''} matches"
    )


# -- search_notebooks


def search_notebook_cells(
    where: Workspace | Path,
    pattern: str,
    notebook_path: object = None,
    limit: int = MAX_SEARCH_RESULTS,
    stop: threading.Event | None = None,
    views: Mapping[str, list[JsonObject]] | None = None,
) -> SearchResult:
    """Blocking: run it in a worker thread. `views`: the cells to search instead of the file's, by
    root-relative path (the thread's notebook with the agent's cells it lacks, notebook_view)."""
    workspace = workspace_for(where)
    matcher = Matcher(pattern, SEARCH_SECONDS, stop)
    root = workspace.root
    target = confined(workspace, notebook_path or ".")
    rel_target = relative_to_root(root, target)
    if not target.exists():
        raise ToolInputError(f"there is no {rel_target!r}; call list_files to find the notebook")
    if target.is_file() and target.suffix != ".ipynb":
        raise ToolInputError(f"{rel_target!r} is not a notebook (.ipynb); use search_workspace for other files")
    matches: list[JsonObject] = []
    skipped: list[str] = []
    try:
        return _search_cells(workspace, target, matcher, matches, skipped, limit, views or {})
    except DeadlinePassed:
        return SearchResult(
            matches, True, "nbformat", "; ".join(filter(None, [matcher.stopped_note(), _skipped_note(skipped)]))
        )


def _search_cells(
    workspace: Workspace,
    target: Path,
    matcher: Matcher,
    matches: list[JsonObject],
    skipped: list[str],
    limit: int,
    views: Mapping[str, list[JsonObject]],
) -> SearchResult:
    # nbformat loads with the first notebook search: %load_ext agent_core does not load it
    import nbformat

    root = workspace.root
    for count, path in enumerate(_walk_files(workspace, target, ["ipynb"])):
        rel = relative_to_root(root, path)
        if count >= MAX_NOTEBOOKS:
            return SearchResult(matches, True, "nbformat", "stopped early: too many notebooks; pass notebook_path")
        if time.monotonic() > matcher.deadline:
            raise DeadlinePassed
        if rel in views:
            cells = views[rel]
        else:
            try:
                if path.stat().st_size > MAX_NOTEBOOK_BYTES:
                    skipped.append(f"{rel} (too big)")
                    continue
                cells = nbformat.reads(path.read_text(encoding="utf-8", errors="replace"), as_version=4).get(
                    "cells", []
                )
            except Exception:  # not JSON, not a notebook
                skipped.append(f"{rel} (unreadable)")
                continue
        for index, cell in enumerate(cells):
            source = cell.get("source", "")
            source = "".join(source) if isinstance(source, list) else str(source)
            for number, line in enumerate(source.splitlines(), start=1):
                if matcher.search(line, f"{rel} cell {index}"):
                    if len(matches) >= limit:
                        return SearchResult(matches, True, "nbformat", _skipped_note(skipped))
                    excerpt = line.strip()
                    if len(excerpt) > EXCERPT_CHARS:
                        excerpt = excerpt[:EXCERPT_CHARS] + " [...]"
                    kind = cell.get("cell_type", "code")
                    matches.append(
                        {
                            "notebook": rel,
                            "cell_index": index,
                            "cell_id": shown_id(cell),
                            "cell_type": kind,
                            "pending": bool(cell.get("pending")),
                            "line": number,
                            "excerpt": excerpt,
                        }
                    )
    return SearchResult(matches, False, "nbformat", _skipped_note(skipped))


def _skipped_note(skipped: list[str]) -> str:
    if not skipped:
        return ""
    shown = ", ".join(skipped[:5]) + (f" and {len(skipped) - 5} more" if len(skipped) > 5 else "")
    return f"skipped: {shown}"


class SearchNotebooksArgs(ToolArgs):
    pattern: str = Field(description="A regular expression.")
    notebook_path: str | None = Field(default=None, description="One notebook, or a folder (default: all notebooks).")


async def _bound_view(args: SearchNotebooksArgs, ctx: ToolContext) -> dict[str, list[JsonObject]]:
    """The thread's notebook as the tools see it (with the agent's cells it lacks), when the search
    covers it; {} when it does not, or cannot be read (the file search then says why)."""
    if not ctx.notebook_path:
        return {}
    workspace = workspace_of(ctx.env)
    try:
        bound = workspace.resolve(ctx.notebook_path)
        target = workspace.resolve(args.notebook_path or ".")
    except WorkspaceError:
        return {}
    if bound != target and target not in bound.parents:
        return {}
    try:
        view = await notebook_view(ctx)
    except ToolInputError:
        return {}
    return {view.path: view.cells}


async def search_notebooks(args: SearchNotebooksArgs, ctx: ToolContext) -> ToolOutcome:
    check_pattern(args.pattern)
    views = await _bound_view(args, ctx)
    result = await _off_the_loop(
        search_notebook_cells, workspace_of(ctx.env), args.pattern, args.notebook_path, views=views
    )
    if not result.matches:
        return ToolOutcome(
            "ok", f"No notebook cell matches {args.pattern!r}." + (f" ({result.note})" if result.note else "")
        )
    lines = [
        f"{m['notebook']} cell {m['cell_index']}, id {m['cell_id']} "
        f"({m['cell_type']}{f', {PENDING_NOTE}' if m['pending'] else ''}) line {m['line']}: {m['excerpt']}"
        for m in result.matches
    ]
    if result.truncated:
        lines.append(
            f"... more matches not shown (first {len(result.matches)}); narrow the pattern or pass notebook_path"
        )
    if result.note:
        lines.append(f"[{result.note}]")
    header = "Cell indexes count from 0 (the notebook's order); edit_cell takes a cell's id."
    count = f"{len(result.matches)}{'+' if result.truncated else ''}"
    return ToolOutcome("ok", header + "\n" + "\n".join(lines), summary=f"{count} cell matches")


# -- specs


SEARCH_WORKSPACE = ToolSpec(
    name="search_workspace",
    description=(
        "Search the workspace's text files for a regular expression (ripgrep; case-insensitive unless the "
        "pattern has capitals; hidden and git-ignored files are skipped). Returns path:line: text, "
        f"at most {MAX_SEARCH_RESULTS} matches."
    ),
    args=SearchWorkspaceArgs,
    action=search_workspace,
    touches="nothing",
    outside_agents=True,
    read_only=True,
)

SEARCH_NOTEBOOKS = ToolSpec(
    name="search_notebooks",
    description=(
        "Search the cells of the workspace's notebooks (.ipynb) for a regular expression (case-insensitive "
        "unless it has capitals). Returns notebook, cell index (from 0), cell id, cell type, line and the "
        "matching line; the thread's notebook includes your cells not yet in its saved file."
    ),
    args=SearchNotebooksArgs,
    action=search_notebooks,
    touches="nothing",
    outside_agents=True,
    read_only=True,
)
