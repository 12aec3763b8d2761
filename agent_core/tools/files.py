"""File tools: read, list, write and edit files (searching is in search.py).

Every path goes through the environment's Workspace (agent_core.workspace): confined to the root,
no hidden files unless the server allows them, never the folders that hold secrets; walks skip
what the policy hides. Reads and searches are bounded; writes and edits need approval, and their
approval card shows a unified diff (`preview`). The blocking work runs in a thread so the event loop never waits on the disk."""
from __future__ import annotations

import asyncio
import contextlib
import difflib
import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from ..output_digest import bounded
from ..workspace import Workspace, WorkspaceError, human_size, relative_to_root, resolve_in_root, workspace_for, workspace_of
from .base import ToolContext, ToolInputError, ToolOutcome, ToolSpec

IGNORED_DIRS = frozenset({".git", "node_modules", ".ipynb_checkpoints", "__pycache__"})
SNIFF_BYTES = 8192
MAX_READ_BYTES = 5 * 1024 * 1024  # a whole-file read; larger files need a line range
MAX_SCAN_BYTES = 256 * 1024 * 1024  # how far a line-range read may scan into a huge file
MAX_READ_LINES = 2000
MAX_READ_CHARS = 40_000
MAX_LINE_CHARS = 2000
MAX_LIST_ENTRIES = 500
MAX_LIST_SCAN = 20_000
MAX_WRITE_BYTES = 5 * 1024 * 1024
MAX_DIFF_CHARS = 100_000  # on the approval card
MAX_DIFF_TO_MODEL = 4000


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


def _existing_file(root: Path, path: Path) -> os.stat_result:
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
    stat = _existing_file(root, path)
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
        parts.append(f"[... output cut at line {text.stopped_at - 1}; call read_file with start_line={text.stopped_at} to read on]")
    return "\n".join(parts)


async def read_file(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
    workspace = workspace_of(ctx.env)
    root = workspace.root
    path = confined(workspace, args["path"])
    text = await asyncio.to_thread(read_text, root, path, args.get("start_line"), args.get("end_line"))
    rel = relative_to_root(root, path)
    return ToolOutcome("ok", format_file_text(rel, text), summary=f"Read {rel} ({len(text.lines)} lines)")


# -- list_files


@dataclass
class Listing:
    entries: list[str] = field(default_factory=list)
    more: int = 0
    more_is_lower_bound: bool = False


def _scan_sorted(directory: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(directory) as it:
            return sorted((e for e in it if e.name not in IGNORED_DIRS), key=lambda e: e.name)
    except OSError:  # unreadable, vanished
        return []


def walk(directory: Path, recursive: bool = True, workspace: Workspace | None = None) -> Iterator[os.DirEntry[str]]:
    """Entries in path order (pre-order, names sorted, as `rg --sort path`); symlinked folders are not
    entered. With a workspace, what its policy hides is skipped (and never entered)."""
    visible: Callable[[os.DirEntry[str]], bool] = (lambda entry: True) if workspace is None else (
        lambda entry: workspace.visible(entry.path, entry)
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


async def list_files(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
    workspace = workspace_of(ctx.env)
    root = workspace.root
    directory = confined(workspace, args.get("path") or ".")
    listing = await asyncio.to_thread(list_entries, workspace, directory, bool(args.get("recursive")))
    rel = relative_to_root(root, directory)
    lines = [f"{rel}/ ({'recursive' if args.get('recursive') else 'top level'}; paths relative to the root):"]
    lines += listing.entries or ["(empty)"]
    if listing.more:
        plus = "+" if listing.more_is_lower_bound else ""
        lines.append(f"... {listing.more}{plus} more (list a subfolder, or search with search_workspace)")
    return ToolOutcome("ok", "\n".join(lines), summary=f"{len(listing.entries)} entries in {rel}")


# -- write_file and edit_file


def unified_diff(old: str, new: str, rel: str, new_file: bool = False) -> str:
    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile="/dev/null" if new_file else f"a/{rel}",
        tofile=f"b/{rel}",
    )
    out = []
    for line in lines:
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def _old_text_for_diff(path: Path) -> tuple[str | None, str]:
    """The current text of `path` for a diff, or None with the reason it is not shown."""
    if not path.exists():
        return "", ""
    size = path.stat().st_size
    if size > MAX_READ_BYTES:
        return None, f"(the current file, {human_size(size)}, is too big to diff)"
    raw = path.read_bytes()
    if is_binary(raw[:SNIFF_BYTES]):
        return None, f"(the current file is binary, {human_size(size)})"
    return raw.decode("utf-8", errors="replace"), ""


def utf8(text: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:  # lone surrogates from a "\\ud800" in the JSON arguments
        raise ToolInputError(f"the text has a character that is not valid Unicode at position {exc.start}") from None


def _check_write(workspace: Workspace, args: dict[str, Any]) -> tuple[Path, str, bool]:
    root = workspace.root
    path = confined(workspace, args["path"])
    rel = relative_to_root(root, path)
    content = args["content"]
    if path == root.resolve() or path.is_dir():
        raise ToolInputError(f"{rel!r} is a directory; give a file path")
    if len(utf8(content)) > MAX_WRITE_BYTES:
        raise ToolInputError(f"the content is larger than {human_size(MAX_WRITE_BYTES)}; write big data from a cell instead")
    exists = path.exists()
    if exists and not args.get("overwrite"):
        raise ToolInputError(f"{rel!r} already exists; pass overwrite=true to replace it, or use edit_file to change part of it")
    for parent in path.parents:
        if parent.exists() and not parent.is_dir():
            raise ToolInputError(f"{relative_to_root(root, parent)!r} is a file, so it cannot hold {rel!r}")
        if parent == root.resolve():
            break
    return path, rel, exists


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


async def write_file(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
    path, rel, exists = _check_write(workspace_of(ctx.env), args)
    data = utf8(args["content"])
    await asyncio.to_thread(write_atomic, path, data)
    lines = args["content"].count("\n") + (0 if args["content"].endswith("\n") or not args["content"] else 1)
    verb = "Replaced" if exists else "Created"
    return ToolOutcome("ok", f"{verb} {rel} ({lines} lines, {human_size(len(data))}).")


async def write_file_preview(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    try:
        path, rel, exists = _check_write(workspace_of(ctx.env), args)
        old, why = await asyncio.to_thread(_old_text_for_diff, path)
    except ToolInputError as exc:
        return {"description": f"write_file will fail: {exc}"}
    if old is None:
        return {"diff": f"{why}; it is replaced by:\n" + bounded(unified_diff("", args["content"], rel, True), MAX_DIFF_CHARS)}
    return {"diff": bounded(unified_diff(old, args["content"], rel, new_file=not exists), MAX_DIFF_CHARS)}


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def _closest_line_hint(text: str, old: str) -> str:
    wanted = next((line.strip() for line in old.splitlines() if line.strip()), "")
    if not wanted:
        return ""
    lines = text.splitlines()
    if len(lines) > 20_000:
        return ""
    stripped = [line.strip() for line in lines]
    match = difflib.get_close_matches(wanted, stripped, n=1, cutoff=0.6)
    if not match:
        return ""
    number = stripped.index(match[0]) + 1
    return f" The closest line is {number}: {lines[number - 1].strip()[:200]!r}."


def apply_edits(text: str, edits: Any, rel: str) -> tuple[str, int]:
    """Apply the exact replacements in order; any missing or ambiguous search text fails the whole call."""
    if not isinstance(edits, list) or not edits:
        raise ToolInputError('edits must be a non-empty list of {"old": exact text, "new": replacement}')
    for number, edit in enumerate(edits, start=1):
        if not isinstance(edit, dict) or not isinstance(edit.get("old"), str) or not isinstance(edit.get("new"), str):
            raise ToolInputError(f'edit {number} must be {{"old": str, "new": str}}')
        unknown = set(edit) - {"old", "new"}
        if unknown:
            raise ToolInputError(f"edit {number} has unknown keys {sorted(unknown)}; each edit is {{\"old\", \"new\"}}")
        old, new = edit["old"], edit["new"]
        if not old:
            raise ToolInputError(f"edit {number}: 'old' is empty; to add text, include the neighbouring line in 'old'")
        count = text.count(old)
        if count == 0:
            after = " (after the previous edits)" if number > 1 else ""
            raise ToolInputError(
                f"edit {number}: the search text was not found in {rel}{after}; nothing was written. "
                f"Copy the exact current text, whitespace included (read_file shows it).{_closest_line_hint(text, old)}"
            )
        if count > 1:
            starts, at = [], -1
            while len(starts) < 5 and (at := text.find(old, at + 1)) != -1:
                starts.append(str(_line_of(text, at)))
            raise ToolInputError(
                f"edit {number}: the search text appears {count} times in {rel} (lines {', '.join(starts)}); "
                "nothing was written. Include more surrounding lines so it matches exactly once."
            )
        text = text.replace(old, new, 1)
    return text, len(edits)


def _planned_edit(workspace: Workspace, args: dict[str, Any]) -> tuple[Path, str, str, str, bool]:
    root = workspace.root
    path = confined(workspace, args["path"])
    rel = relative_to_root(root, path)
    stat = _existing_file(root, path)
    if stat.st_size > MAX_READ_BYTES:
        raise ToolInputError(f"{rel!r} is {human_size(stat.st_size)}, too big for edit_file; change it from a cell or with execute_command")
    raw = path.read_bytes()
    if is_binary(raw[:SNIFF_BYTES]):
        raise ToolInputError(f"{rel!r} is a binary file; edit_file edits text files only")
    try:
        original = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolInputError(f"{rel!r} is not valid UTF-8; edit_file would corrupt it. Change it from a cell instead.") from None
    crlf = "\r\n" in original and "\n" not in original.replace("\r\n", "")
    text = original.replace("\r\n", "\n") if crlf else original
    edits = args["edits"]
    if crlf and isinstance(edits, list):
        edits = [
            {k: v.replace("\r\n", "\n") if isinstance(v, str) else v for k, v in e.items()} if isinstance(e, dict) else e
            for e in edits
        ]
    updated, _ = apply_edits(text, edits, rel)
    if updated == text:
        raise ToolInputError("the edits leave the file unchanged")
    return path, rel, text, updated, crlf


async def edit_file(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
    path, rel, before, after, crlf = await asyncio.to_thread(_planned_edit, workspace_of(ctx.env), args)
    data = utf8(after.replace("\n", "\r\n") if crlf else after)
    await asyncio.to_thread(write_atomic, path, data)
    diff = unified_diff(before, after, rel)
    count = len(args["edits"])
    return ToolOutcome(
        "ok",
        f"Edited {rel}: {count} replacement{'s' if count != 1 else ''} applied.\n{bounded(diff, MAX_DIFF_TO_MODEL)}",
        summary=f"Edited {rel} ({count} replacement{'s' if count != 1 else ''})",
    )


async def edit_file_preview(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    try:
        _, rel, before, after, _ = await asyncio.to_thread(_planned_edit, workspace_of(ctx.env), args)
    except ToolInputError as exc:
        return {"description": f"edit_file will fail: {exc}"}
    return {"diff": bounded(unified_diff(before, after, rel), MAX_DIFF_CHARS)}


# -- search_workspace


_PATH = {"type": "string", "description": "A path relative to the workspace root."}

READ_FILE = ToolSpec(
    name="read_file",
    description=(
        "Read a text file of the workspace, with line numbers. For big files pass start_line/end_line "
        f"(1-based, inclusive; at most {MAX_READ_LINES} lines per call). Binary files are refused."
    ),
    parameters={
        "type": "object",
        "properties": {
            "path": _PATH,
            "start_line": {"type": "integer", "description": "First line to read (1-based)."},
            "end_line": {"type": "integer", "description": "Last line to read (inclusive)."},
        },
        "required": ["path"],
    },
    run=read_file,
    read_only=True,
)

LIST_FILES = ToolSpec(
    name="list_files",
    description=(
        "List files and folders of the workspace (sizes included; hidden files, node_modules and __pycache__ "
        f"are skipped; at most {MAX_LIST_ENTRIES} entries)."
    ),
    parameters={
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": 'Folder to list, relative to the root (default ".").'},
            "recursive": {"type": "boolean", "description": "Also list the contents of subfolders."},
        },
    },
    run=list_files,
    read_only=True,
)

WRITE_FILE = ToolSpec(
    name="write_file",
    description=(
        "Create a text file (or replace one with overwrite=true); folders are created as needed. "
        "The user approves it first, seeing the diff. To change part of a file use edit_file."
    ),
    parameters={
        "type": "object",
        "properties": {
            "path": _PATH,
            "content": {"type": "string", "description": "The whole content of the file."},
            "overwrite": {"type": "boolean", "description": "Replace the file if it exists (default false)."},
        },
        "required": ["path", "content"],
    },
    run=write_file,
    needs_approval=True,
    describe=lambda args: f"Write the file {args.get('path', '?')}",
    preview=write_file_preview,
)

EDIT_FILE = ToolSpec(
    name="edit_file",
    description=(
        "Change a text file by exact replacements, applied in order: each 'old' must appear exactly once "
        "(copy it from read_file, whitespace included, without the line numbers; add neighbouring lines to make "
        "it unique). If any edit does not apply, nothing is written. The user approves the diff first."
    ),
    parameters={
        "type": "object",
        "properties": {
            "path": _PATH,
            "edits": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "old": {"type": "string", "description": "Exact text to replace."},
                        "new": {"type": "string", "description": "Replacement text."},
                    },
                    "required": ["old", "new"],
                },
            },
        },
        "required": ["path", "edits"],
    },
    run=edit_file,
    needs_approval=True,
    describe=lambda args: f"Edit the file {args.get('path', '?')}",
    preview=edit_file_preview,
)
