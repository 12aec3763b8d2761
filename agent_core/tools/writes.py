"""File tools that change the workspace: write a file, edit one by exact replacements. Both need
approval; their approval card shows a unified diff (the preview), and a call that would fail says so
on the card. Writes are atomic: a failure never leaves a half-written file."""

from __future__ import annotations

import asyncio
import difflib
from pathlib import Path

from pydantic import Field, field_validator

from agent_core.json_types import JsonObject
from agent_core.output_digest import bounded
from agent_core.tools.arguments import ToolArgs, argument_error
from agent_core.tools.base import ToolContext, ToolInputError, ToolOutcome, ToolSpec
from agent_core.tools.files import MAX_READ_BYTES, PATH_HELP, SNIFF_BYTES, confined, existing_file, is_binary
from agent_core.undo.preimages import capture, write_atomic
from agent_core.workspace import Workspace, human_size, relative_to_root, workspace_of

MAX_WRITE_BYTES = 5 * 1024 * 1024
MAX_DIFF_CHARS = 100_000  # on the approval card
MAX_DIFF_TO_MODEL = 4000


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


class WriteFileArgs(ToolArgs):
    path: str = Field(description=PATH_HELP)
    content: str = Field(description="The whole content of the file.")
    overwrite: bool = Field(default=False, description="Replace the file if it exists.")


def _check_write(workspace: Workspace, args: WriteFileArgs) -> tuple[Path, str, bool]:
    root = workspace.root
    path = confined(workspace, args.path)
    rel = relative_to_root(root, path)
    content = args.content
    if path == root.resolve() or path.is_dir():
        raise ToolInputError(f"{rel!r} is a directory; give a file path")
    if len(utf8(content)) > MAX_WRITE_BYTES:
        raise ToolInputError(
            f"the content is larger than {human_size(MAX_WRITE_BYTES)}; write big data from a cell instead"
        )
    exists = path.exists()
    if exists and not args.overwrite:
        raise ToolInputError(
            f"{rel!r} already exists; pass overwrite=true to replace it, or use edit_file to change part of it"
        )
    for parent in path.parents:
        if parent.exists() and not parent.is_dir():
            raise ToolInputError(f"{relative_to_root(root, parent)!r} is a file, so it cannot hold {rel!r}")
        if parent == root.resolve():
            break
    return path, rel, exists


async def write_file(args: WriteFileArgs, ctx: ToolContext) -> ToolOutcome:
    path, rel, exists = _check_write(workspace_of(ctx.env), args)
    data = utf8(args.content)
    preimage = await asyncio.to_thread(capture, path, rel, data)
    await asyncio.to_thread(write_atomic, path, data)
    lines = args.content.count("\n") + (0 if args.content.endswith("\n") or not args.content else 1)
    verb = "Replaced" if exists else "Created"
    return ToolOutcome("ok", f"{verb} {rel} ({lines} lines, {human_size(len(data))}).", preimage=preimage)


async def write_file_preview(args: WriteFileArgs, ctx: ToolContext) -> JsonObject:
    path, rel, exists = _check_write(workspace_of(ctx.env), args)
    old, why = await asyncio.to_thread(_old_text_for_diff, path)
    if old is None:
        return {
            "diff": f"{why}; it is replaced by:\n" + bounded(unified_diff("", args.content, rel, True), MAX_DIFF_CHARS)
        }
    return {"diff": bounded(unified_diff(old, args.content, rel, new_file=not exists), MAX_DIFF_CHARS)}


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


class Edit(ToolArgs):
    old: str = Field(description="Exact text to replace.")
    new: str = Field(description="Replacement text.")

    @field_validator("old")
    @classmethod
    def _something(cls, old: str) -> str:
        if not old:
            raise argument_error("'old' is empty; to add text, include the neighbouring line in 'old'")
        return old


class EditFileArgs(ToolArgs):
    path: str = Field(description=PATH_HELP)
    edits: list[Edit] = Field(description="Applied in order; each 'old' must appear exactly once.")

    @field_validator("edits")
    @classmethod
    def _some(cls, edits: list[Edit]) -> list[Edit]:
        if not edits:
            raise argument_error('edits must be a non-empty list of {"old": exact text, "new": replacement}')
        return edits


def apply_edits(text: str, edits: list[tuple[str, str]], rel: str) -> str:
    """Apply the exact replacements (old, new) in order; any missing or ambiguous search text fails
    the whole call."""
    for number, (old, new) in enumerate(edits, start=1):
        count = text.count(old)
        if count == 0:
            after = " (after the previous edits)" if number > 1 else ""
            raise ToolInputError(
                f"edit {number}: the search text was not found in {rel}{after}; nothing was written. "
                f"Copy the exact current text, whitespace included (read_file shows it).{_closest_line_hint(text, old)}"
            )
        if count > 1:
            starts: list[str] = []
            at = -1
            while len(starts) < 5 and (at := text.find(old, at + 1)) != -1:
                starts.append(str(_line_of(text, at)))
            raise ToolInputError(
                f"edit {number}: the search text appears {count} times in {rel} (lines {', '.join(starts)}); "
                "nothing was written. Include more surrounding lines so it matches exactly once."
            )
        text = text.replace(old, new, 1)
    return text


def _planned_edit(workspace: Workspace, args: EditFileArgs) -> tuple[Path, str, str, str, bool]:
    root = workspace.root
    path = confined(workspace, args.path)
    rel = relative_to_root(root, path)
    stat = existing_file(root, path)
    if stat.st_size > MAX_READ_BYTES:
        raise ToolInputError(
            f"{rel!r} is {human_size(stat.st_size)}, too big for edit_file; change it from a cell or with execute_command"
        )
    raw = path.read_bytes()
    if is_binary(raw[:SNIFF_BYTES]):
        raise ToolInputError(f"{rel!r} is a binary file; edit_file edits text files only")
    try:
        original = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolInputError(
            f"{rel!r} is not valid UTF-8; edit_file would corrupt it. Change it from a cell instead."
        ) from None
    crlf = "\r\n" in original and "\n" not in original.replace("\r\n", "")
    text = original.replace("\r\n", "\n") if crlf else original
    edits = [(e.old.replace("\r\n", "\n"), e.new.replace("\r\n", "\n")) if crlf else (e.old, e.new) for e in args.edits]
    updated = apply_edits(text, edits, rel)
    if updated == text:
        raise ToolInputError("the edits leave the file unchanged")
    return path, rel, text, updated, crlf


async def edit_file(args: EditFileArgs, ctx: ToolContext) -> ToolOutcome:
    path, rel, before, after, crlf = await asyncio.to_thread(_planned_edit, workspace_of(ctx.env), args)
    data = utf8(after.replace("\n", "\r\n") if crlf else after)
    preimage = await asyncio.to_thread(capture, path, rel, data)
    await asyncio.to_thread(write_atomic, path, data)
    diff = unified_diff(before, after, rel)
    count = len(args.edits)
    return ToolOutcome(
        "ok",
        f"Edited {rel}: {count} replacement{'s' if count != 1 else ''} applied.\n{bounded(diff, MAX_DIFF_TO_MODEL)}",
        summary=f"Edited {rel} ({count} replacement{'s' if count != 1 else ''})",
        preimage=preimage,
    )


async def edit_file_preview(args: EditFileArgs, ctx: ToolContext) -> JsonObject:
    _, rel, before, after, _ = await asyncio.to_thread(_planned_edit, workspace_of(ctx.env), args)
    return {"diff": bounded(unified_diff(before, after, rel), MAX_DIFF_CHARS)}


WRITE_FILE = ToolSpec(
    name="write_file",
    description=(
        "Create a text file (or replace one with overwrite=true); folders are created as needed. "
        "The user approves it first, seeing the diff. To change part of a file use edit_file."
    ),
    args=WriteFileArgs,
    action=write_file,
    touches="files",
    undone_by="file_preimage",
    outside_agents=True,
    needs_approval=True,
    describe=lambda args: f"Write the file {args.path}",
    card=write_file_preview,
)

EDIT_FILE = ToolSpec(
    name="edit_file",
    description=(
        "Change a text file by exact replacements, applied in order: each 'old' must appear exactly once "
        "(copy it from read_file, whitespace included, without the line numbers; add neighbouring lines to make "
        "it unique). If any edit does not apply, nothing is written. The user approves the diff first."
    ),
    args=EditFileArgs,
    action=edit_file,
    touches="files",
    undone_by="file_preimage",
    outside_agents=True,
    needs_approval=True,
    describe=lambda args: f"Edit the file {args.path}",
    card=edit_file_preview,
)
