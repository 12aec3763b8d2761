"""File tools: read and list files (writing and editing is in writes.py, searching in search.py).

Every path goes through the environment's Workspace (agent_core.workspace): confined to the root,
no hidden files unless the server allows them, never the folders that hold secrets; walks skip
what the policy hides. Reads are bounded. The blocking work runs in a thread so the event loop never
waits on the disk."""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import Field

from agent_core.tools.arguments import ToolArgs
from agent_core.tools.base import ToolContext, ToolInputError, ToolOutcome, ToolSpec
from agent_core.workspace import (
    Workspace,
    WorkspaceError,
    human_size,
    relative_to_root,
    resolve_in_root,
    walk,
    workspace_for,
    workspace_of,
)

SNIFF_BYTES = 8192
MAX_READ_BYTES = 5 * 1024 * 1024  # a whole-file read; larger files need a line range
MAX_SCAN_BYTES = 256 * 1024 * 1024  # how far a line-range read may scan into a huge file
MAX_READ_LINES = 2000
MAX_READ_CHARS = 40_000
MAX_LINE_CHARS = 2000
MAX_LIST_ENTRIES = 500
MAX_LIST_SCAN = 20_000


def confined(root: Workspace | Path | str, path: Any) -> Path:
    """`path` resolved by the policy of `root` (a Workspace, or the policy registered for that
    root), or a ToolInputError the model can act on."""
    try:
        return resolve_in_root(root, path)
    except WorkspaceError as exc:
        raise ToolInputError(exc.message) from None


def is_binary(head: bytes) -> bool:
    return b"\x00" in head


def sniff(path: Path) -> bytes:
    with open(path, "rb") as handle:
        return handle.read(SNIFF_BYTES)


def existing_file(root: Path, path: Path) -> os.stat_result:
    rel = relative_to_root(root, path)
    if not path.exists():
        raise ToolInputError(f"there is no file {rel!r}; call list_files to see what is there")
    if path.is_dir():
        raise ToolInputError(f"{rel!r} is a directory, not a file; call list_files on it")
    if not path.is_file():
        raise ToolInputError(f"{rel!r} is not a regular file")
    return path.stat()


# -- read_file


@dataclass
class FileText:
    lines: list[str]  # the selected lines, without line endings
    first: int  # 1-based number of lines[0]
    total: int | None  # lines in the file, when known
    not_utf8: bool = False
    stopped_at: int | None = None  # the next line to read when the output was cut


def read_text(root: Path, path: Path, start_line: int | None = None, end_line: int | None = None) -> FileText:
    """Lines `start_line`..`end_line` (1-based, inclusive) of a text file, bounded."""
    stat = existing_file(root, path)
    rel = relative_to_root(root, path)
    if start_line is not None and start_line < 1 or end_line is not None and end_line < 1:
        raise ToolInputError("start_line and end_line count from 1")
    if start_line and end_line and end_line < start_line:
        raise ToolInputError(f"end_line ({end_line}) is before start_line ({start_line})")
    if is_binary(sniff(path)):
        raise ToolInputError(
            f"{rel!r} is a binary file ({human_size(stat.st_size)}); read_file reads text only. "
            "Inspect it in a cell instead (e.g. pandas for data files, PIL for images)."
        )
    first = start_line or 1
    if stat.st_size <= MAX_READ_BYTES:
        raw = path.read_bytes()
        try:
            text, not_utf8 = raw.decode("utf-8"), False
        except UnicodeDecodeError:
            text, not_utf8 = raw.decode("utf-8", errors="replace"), True
        all_lines = text.splitlines()
        total = len(all_lines)
        if first > max(total, 1):
            raise ToolInputError(f"{rel!r} has only {total} lines; start_line {first} is past its end")
        selected = all_lines[first - 1 : end_line]
        return _cap_lines(FileText(selected, first, total, not_utf8))
    if start_line is None and end_line is None:
        raise ToolInputError(
            f"{rel!r} is {human_size(stat.st_size)}, too big to read whole (limit {human_size(MAX_READ_BYTES)}). "
            f"Pass start_line and end_line (at most {MAX_READ_LINES} lines), search it with search_workspace, "
            "or load it in a cell."
        )
    return _cap_lines(_read_range_streaming(path, rel, first, end_line or first + MAX_READ_LINES - 1))


def _read_range_streaming(path: Path, rel: str, first: int, last: int) -> FileText:
    selected: list[str] = []
    not_utf8 = False
    scanned = 0
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            scanned += len(raw)
            if number >= first:
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError:
                    line, not_utf8 = raw.decode("utf-8", errors="replace"), True
                selected.append(line.rstrip("\r\n"))
                if number >= last or len(selected) > MAX_READ_LINES:
                    break
            elif scanned > MAX_SCAN_BYTES:
                raise ToolInputError(
                    f"line {first} of {rel!r} is more than {human_size(MAX_SCAN_BYTES)} into the file; "
                    "search it with search_workspace or read it in a cell"
                )
    if not selected:
        raise ToolInputError(f"{rel!r} has fewer than {first} lines")
    return FileText(selected, first, None, not_utf8)


def _cap_lines(text: FileText) -> FileText:
    kept: list[str] = []
    chars = 0
    for index, line in enumerate(text.lines):
        if len(line) > MAX_LINE_CHARS:
            line = f"{line[:MAX_LINE_CHARS]} [... {len(line) - MAX_LINE_CHARS} more characters on this line]"
        if index >= MAX_READ_LINES or chars + len(line) > MAX_READ_CHARS:
            text.stopped_at = text.first + index
            break
        kept.append(line)
        chars += len(line) + 8
    text.lines = kept
    return text


def format_file_text(rel: str, text: FileText) -> str:
    last = text.first + len(text.lines) - 1
    of_total = f" of {text.total}" if text.total is not None else ""
    header = f"{rel} (lines {text.first}-{last}{of_total})" if text.lines else f"{rel} (empty file)"
    parts = [header]
    if text.not_utf8:
        parts.append("[note: the file is not valid UTF-8; undecodable bytes are shown as \ufffd]")
    parts += [f"{number:>6}\t{line}" for number, line in enumerate(text.lines, start=text.first)]
    if text.stopped_at is not None:
        parts.append(
            f"[... output cut at line {text.stopped_at - 1}; call read_file with start_line={text.stopped_at} to read on]"
        )
    return "\n".join(parts)


PATH_HELP = "A path relative to the workspace root."


class ReadFileArgs(ToolArgs):
    path: str = Field(description=PATH_HELP)
    start_line: int | None = Field(default=None, description="First line to read (1-based).")
    end_line: int | None = Field(default=None, description="Last line to read (inclusive).")


async def read_file(args: ReadFileArgs, ctx: ToolContext) -> ToolOutcome:
    workspace = workspace_of(ctx.env)
    root = workspace.root
    path = confined(workspace, args.path)
    text = await asyncio.to_thread(read_text, root, path, args.start_line, args.end_line)
    rel = relative_to_root(root, path)
    return ToolOutcome("ok", format_file_text(rel, text), summary=f"Read {rel} ({len(text.lines)} lines)")


# -- list_files


@dataclass
class Listing:
    entries: list[str] = field(default_factory=list)
    more: int = 0
    more_is_lower_bound: bool = False


def _entry_line(root: Path, entry: os.DirEntry[str]) -> str:
    rel = Path(entry.path).relative_to(root.resolve()).as_posix()  # where it sits, not where a symlink points
    if entry.is_symlink():
        return rel + ("/" if entry.is_dir() else "") + "  (symlink)"
    if entry.is_dir(follow_symlinks=False):
        return rel + "/"
    try:
        return f"{rel}  ({human_size(entry.stat(follow_symlinks=False).st_size)})"
    except OSError:
        return rel


def list_entries(
    where: Workspace | Path, directory: Path, recursive: bool = False, limit: int | None = None
) -> Listing:
    workspace = workspace_for(where)
    root = workspace.root
    limit = limit or MAX_LIST_ENTRIES
    rel = relative_to_root(root, directory)
    if not directory.exists():
        raise ToolInputError(f"there is no directory {rel!r}; list '.' to see the root")
    if not directory.is_dir():
        raise ToolInputError(f"{rel!r} is a file, not a directory; use read_file to read it")
    listing = Listing()
    for seen, entry in enumerate(walk(directory, recursive, workspace=workspace), start=1):
        if len(listing.entries) < limit:
            listing.entries.append(_entry_line(root, entry))
        else:
            listing.more += 1
        if seen >= MAX_LIST_SCAN:
            listing.more_is_lower_bound = True
            break
    return listing


class ListFilesArgs(ToolArgs):
    path: str = Field(default=".", description="Folder to list, relative to the root.")
    recursive: bool = Field(default=False, description="Also list the contents of subfolders.")


async def list_files(args: ListFilesArgs, ctx: ToolContext) -> ToolOutcome:
    workspace = workspace_of(ctx.env)
    root = workspace.root
    directory = confined(workspace, args.path or ".")
    listing = await asyncio.to_thread(list_entries, workspace, directory, args.recursive)
    rel = relative_to_root(root, directory)
    lines = [f"{rel}/ ({'recursive' if args.recursive else 'top level'}; paths relative to the root):"]
    lines += listing.entries or ["(empty)"]
    if listing.more:
        plus = "+" if listing.more_is_lower_bound else ""
        lines.append(f"... {listing.more}{plus} more (list a subfolder, or search with search_workspace)")
    return ToolOutcome("ok", "\n".join(lines), summary=f"{len(listing.entries)} entries in {rel}")


READ_FILE = ToolSpec(
    name="read_file",
    description=(
        "Read a text file of the workspace, with line numbers. For big files pass start_line/end_line "
        f"(1-based, inclusive; at most {MAX_READ_LINES} lines per call). Binary files are refused."
    ),
    args=ReadFileArgs,
    action=read_file,
    touches="nothing",
    outside_agents=True,
    read_only=True,
)

LIST_FILES = ToolSpec(
    name="list_files",
    description=(
        "List files and folders of the workspace (sizes included; hidden files, node_modules and __pycache__ "
        f"are skipped; at most {MAX_LIST_ENTRIES} entries)."
    ),
    args=ListFilesArgs,
    action=list_files,
    touches="nothing",
    outside_agents=True,
    read_only=True,
)
