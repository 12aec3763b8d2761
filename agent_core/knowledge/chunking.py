"""Documents as chunks that keep their headings: Markdown and reStructuredText sections,
notebooks' Markdown and code cells (under the Markdown heading they follow), Python docstrings
(module, classes, functions, under their qualified names), and plain text by paragraphs.

A chunk's `heading` is the path of headings above it ("Guide > Metrics > Churn"), so a hit says
where in the document it was found. Long sections are cut into pieces of at most CHUNK_CHARS."""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from pathlib import PurePosixPath

CHUNK_CHARS = 2000
MAX_CHUNKS_PER_FILE = 400
SUFFIXES = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".rst": "rst",
    ".txt": "text",
    ".ipynb": "notebook",
    ".py": "python",
}

_MD_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_FENCE = re.compile(r"^(```|~~~)")
_RST_UNDERLINE = re.compile(r"^([=\-~^\"'`#*+:.])\1{2,}\s*$")


@dataclass(frozen=True)
class Chunk:
    heading: str
    text: str
    kind: str  # markdown, rst, text, notebook-markdown, notebook-code, python, table


def kind_of(path: str) -> str | None:
    return SUFFIXES.get(PurePosixPath(path).suffix.lower())


def _pieces(heading: str, text: str, kind: str) -> list[Chunk]:
    """`text` as chunks of at most CHUNK_CHARS, cut at paragraph, then line, then hard bounds."""
    text = text.strip()
    if not text:
        return []
    if len(text) <= CHUNK_CHARS:
        return [Chunk(heading, text, kind)]
    out: list[Chunk] = []
    current = ""
    for paragraph in re.split(r"\n\s*\n", text):
        while len(paragraph) > CHUNK_CHARS:  # one huge paragraph (or a minified line)
            cut = paragraph.rfind("\n", 0, CHUNK_CHARS)
            cut = cut if cut > CHUNK_CHARS // 2 else CHUNK_CHARS
            if current:
                out.append(Chunk(heading, current, kind))
                current = ""
            out.append(Chunk(heading, paragraph[:cut].strip(), kind))
            paragraph = paragraph[cut:]
        if current and len(current) + len(paragraph) + 2 > CHUNK_CHARS:
            out.append(Chunk(heading, current, kind))
            current = ""
        current = f"{current}\n\n{paragraph}" if current else paragraph
    if current.strip():
        out.append(Chunk(heading, current.strip(), kind))
    return out


def _heading_path(stack: list[tuple[int, str]]) -> str:
    return " > ".join(title for _, title in stack)


def _push(stack: list[tuple[int, str]], level: int, title: str) -> None:
    while stack and stack[-1][0] >= level:
        stack.pop()
    stack.append((level, title.strip()[:200]))


def chunk_markdown(text: str, kind: str = "markdown", stack: list[tuple[int, str]] | None = None) -> list[Chunk]:
    """Sections by ATX headings (`#`..`######`), fenced code kept in its section. `stack` carries
    the heading path across calls (a notebook's Markdown cells)."""
    stack = [] if stack is None else stack
    chunks: list[Chunk] = []
    lines: list[str] = []
    in_fence = False
    body = [False]  # whether the section has more than its title: a bare title is no passage

    def flush() -> None:
        if body[0]:
            chunks.extend(_pieces(_heading_path(stack), "\n".join(lines), kind))
        lines.clear()
        body[0] = False

    for line in text.splitlines():
        if _FENCE.match(line.strip()):
            in_fence = not in_fence
        match = None if in_fence else _MD_HEADING.match(line)
        if match:
            flush()
            _push(stack, len(match.group(1)), match.group(2))
            lines.append(match.group(2))  # the heading's words count for its own section
        else:
            lines.append(line)
            body[0] = body[0] or bool(line.strip())
    flush()
    return chunks


def chunk_rst(text: str) -> list[Chunk]:
    """Sections by underlined (and overlined) titles; levels in the order the adornments appear."""
    stack: list[tuple[int, str]] = []
    levels: list[str] = []
    chunks: list[Chunk] = []
    lines = text.splitlines()
    body: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        below = lines[i + 1] if i + 1 < len(lines) else ""
        title = line.strip()
        if (
            title
            and not _RST_UNDERLINE.match(line)
            and _RST_UNDERLINE.match(below)
            and len(below.strip()) >= len(title)
        ):
            if body and _RST_UNDERLINE.match(body[-1]):  # an overline belongs to this title
                body.pop()
            chunks.extend(_pieces(_heading_path(stack), "\n".join(body), "rst"))
            body = [title]
            char = below.strip()[0]
            if char not in levels:
                levels.append(char)
            _push(stack, levels.index(char) + 1, title)
            i += 2
            continue
        body.append(line)
        i += 1
    chunks.extend(_pieces(_heading_path(stack), "\n".join(body), "rst"))
    return chunks


def chunk_text(text: str, title: str) -> list[Chunk]:
    return _pieces(title, text, "text")


def chunk_notebook(text: str) -> list[Chunk]:
    """Markdown cells by their headings; each code cell a chunk under the heading it follows."""
    try:
        cells = json.loads(text).get("cells", [])
    except (ValueError, AttributeError):
        return []
    stack: list[tuple[int, str]] = []
    chunks: list[Chunk] = []
    for cell in cells if isinstance(cells, list) else []:
        if not isinstance(cell, dict):
            continue
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else str(source)
        if cell.get("cell_type") == "markdown":
            chunks.extend(chunk_markdown(source, "notebook-markdown", stack))
        elif cell.get("cell_type") == "code":
            chunks.extend(_pieces(_heading_path(stack), source, "notebook-code"))
    return chunks


def chunk_python(text: str, module: str) -> list[Chunk]:
    """Docstrings with the signature line they document, under module.Class.function names."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return []
    chunks: list[Chunk] = []
    doc = ast.get_docstring(tree)
    if doc:
        chunks.extend(_pieces(module, doc, "python"))

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}.{child.name}"
                doc = ast.get_docstring(child)
                if doc:
                    chunks.extend(_pieces(name, f"{child.name}\n{doc}", "python"))
                if isinstance(child, ast.ClassDef):
                    visit(child, name)

    visit(tree, module)
    return chunks


def chunk_document(path: str, text: str) -> list[Chunk]:
    """The chunks of the file at `path` (relative, for headings) with contents `text`."""
    kind = kind_of(path)
    name = PurePosixPath(path)
    if kind == "markdown":
        chunks = chunk_markdown(text)
    elif kind == "rst":
        chunks = chunk_rst(text)
    elif kind == "notebook":
        chunks = chunk_notebook(text)
    elif kind == "python":
        chunks = chunk_python(text, ".".join(name.with_suffix("").parts))
    elif kind == "text":
        chunks = chunk_text(text, name.name)
    else:
        return []
    return chunks[:MAX_CHUNKS_PER_FILE]
