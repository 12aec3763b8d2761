"""schema_only: what a tool result or a context message becomes so that no data value leaves. Each
text keeps its structure (names, types, shapes, counts, error names) and loses its values. These
read Cellwright's own result formats (agent_core.tools, agent_core.loop.mentions); anything they do
not know is reduced to its size."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from functools import lru_cache
from pathlib import PurePosixPath

from agent_core.json_types import JsonObject

# Files whose contents are code or configuration, not data: read_file returns them as they are.
SOURCE_SUFFIXES = frozenset(
    ".py .pyi .r .jl .js .mjs .ts .tsx .jsx .java .kt .scala .c .h .cc .cpp .hpp .go .rs .rb .php .sh .bash"
    " .sql .toml .cfg .ini .yaml .yml .css .scss .html .dockerfile .mk .cmake .gradle".split()
)
SOURCE_NAMES = frozenset(("Makefile", "Dockerfile", "Justfile"))
TABLE_SUFFIXES = frozenset((".csv", ".tsv", ".psv"))
# Tools whose results hold no data values: what the agent did, sizes, names, its own reports.
SAFE_TOOLS = frozenset(
    (
        "list_files",
        "check_resource",
        "write_file",
        "edit_file",
        "diagnostics",
        "load_skill",
        "write_todos",
        "add_markdown",
        "task",
        "final_answer",
        "restart_kernel",
    )
)
ERROR_LINE = re.compile(
    r"^[ \t]*([A-Za-z_][\w.]{0,100}(?:Error|Exception|Warning|Exit|Interrupt))\b(?::[ \t]?([^\n]{0,300}))?", re.M
)
QUOTED = re.compile(r"'[^'\n]{0,300}'|\"[^\"\n]{0,300}\"")
NUMBER = re.compile(r"\b\d[\d.,_]{0,40}\b")
FRAME_FOOTER = re.compile(r"^[ \t]*(\[\d+ rows x \d+ columns\])[ \t]*$", re.M)
CELL_FACTS = re.compile(r"^\[(?:cell_id [\w-]{1,80}(?:, )?)?(?:execution_count \d{1,10})?\]$")
WITHHELD = "withheld: data_policy is schema_only"


def masked_message(text: str) -> str:
    """An error message with its values masked: quoted strings and numbers."""
    return NUMBER.sub("#", QUOTED.sub("'…'", text))


def shape(text: str, what: str = "output") -> str:
    """`text` as its size, with the names and masked messages of any errors in it."""
    lines = text.count("\n") + 1 if text else 0
    out = [f"[{what}: {lines} lines, {len(text)} characters; values {WITHHELD}]"]
    out += [m.group(1) for m in FRAME_FOOTER.finditer(text)][-5:]  # a DataFrame print's shape
    errors = [m.group(1) + (f": {masked_message(m.group(2))}" if m.group(2) else "") for m in ERROR_LINE.finditer(text)]
    out += [f"error {e}" for e in dict.fromkeys(errors)][-5:]
    return "\n".join(out)


def _cell_result(text: str, args: JsonObject) -> str:
    first, _, rest = text.partition("\n")
    if CELL_FACTS.match(first.strip()):
        return f"{first}\n{shape(rest, 'cell output')}" if rest.strip() else first
    if first.startswith("The cell was aborted."):
        return f"The cell was aborted.\n{shape(rest, 'cell output')}"
    return shape(text, "cell output")


def _is_source(path: str) -> bool:
    pure = PurePosixPath(path)
    return pure.suffix.lower() in SOURCE_SUFFIXES or pure.name in SOURCE_NAMES


def _file_result(text: str, args: JsonObject) -> str:
    path = str(args.get("path") or "")
    if _is_source(path):
        return text
    header, _, body = text.partition("\n")
    lines = body.splitlines()
    kept = [header]
    if PurePosixPath(path).suffix.lower() in TABLE_SUFFIXES and lines and lines[0].lstrip().startswith("1\t"):
        kept.append(f"columns: {lines[0].split(chr(9), 1)[1]}")  # a table's header row: its column names
    kept.append(f"[{len(lines)} lines of contents {WITHHELD}]")
    return "\n".join(kept)


def _sql_result(text: str, args: JsonObject) -> str:
    first, _, rest = text.partition("\n")
    table, hint_mark, hint = rest.partition("\n\nTo work with the full result")
    rows = table.splitlines()
    columns = f"\ncolumns: {rows[0]}" if rows else ""
    return f"{first}{columns}\n[{max(0, len(rows) - 1)} rows {WITHHELD}]{hint_mark}{hint}"


def _notebook_result(text: str, args: JsonObject) -> str:
    """Cells' sources stay (code); their outputs become shapes."""
    out: list[str] = []
    outputs: list[str] | None = None

    def close() -> None:
        nonlocal outputs
        if outputs is not None:
            out.append(shape("\n".join(outputs), "outputs"))
            outputs = None

    for line in text.splitlines():
        if line.startswith("--- cell ") or line.startswith("Run order in the notebook"):
            close()
        if outputs is not None:
            outputs.append(line)
        elif line == "[outputs]":
            out.append(line)
            outputs = []
        else:
            out.append(line)
    close()
    return "\n".join(out)


Transform = Callable[[str, JsonObject], str]
TRANSFORMS: dict[str, Transform] = {
    "run_cell": _cell_result,
    "edit_cell": _cell_result,
    "read_file": _file_result,
    "sql_query": _sql_result,
    "read_notebook": _notebook_result,
}


# Results Cellwright wrote, not the tool: the user's decisions and stops (agent_core.loop.approvals,
# storage.tool_ledger), which the model needs as they are.
OWN_RESULTS = ("The user rejected this call.", "The user stopped the run", "Not run: the run was stopped.")


def tool_result(name: str, args: JsonObject, text: str) -> str:
    """What a tool's result may say under schema_only (each result shaped once: a history is sent
    again with every turn)."""
    return _tool_result(name, json.dumps(args, sort_keys=True, default=str), text)


@lru_cache(maxsize=512)  # a result is at most ~8 KB (output_digest.MAX_CHARS and the tools' caps)
def _tool_result(name: str, args_json: str, text: str) -> str:
    args: JsonObject = json.loads(args_json)
    if name in SAFE_TOOLS or text.startswith(OWN_RESULTS):
        return text
    failed = f"{name} failed: "
    if text.startswith(failed):  # the tool's error (agent_core.loop.graph): its words stay, its values not
        return failed + masked_message(text[len(failed) :])[:2000]
    transform = TRANSFORMS.get(name)
    if transform is not None:
        return transform(text, args)
    return shape(text, f"{name} result")


def forget_shaped() -> None:
    _tool_result.cache_clear()


NAMESPACE_LINE = re.compile(r"^(?:The user's kernel namespace: .*|- [\w.]{1,200}: .*|\(.*\))$")
MENTION_HEAD = re.compile(r"^@\S{1,300}: ")
DATA_HEAD = re.compile(r"^@\S{1,300}: (?:file .*, head:|notebook .*)$")  # a file's or notebook's contents follow
COLUMN_LINE = re.compile(
    r"^(?:columns \(name: dtype, nulls\):|  \S.{0,300}: .{1,100}, \d+ null|  \(and \d+ more columns\))$"
)


def context_message(text: str, preamble: str) -> str:
    """A context message (agent_core.loop.mentions) with only its structural lines: the namespace
    snapshot's names, types and shapes; each mention's header and a variable's columns; no rows,
    reprs or file contents."""
    lines = text.splitlines()
    kept: list[str] = []
    dropped = 0
    snapshot = any(line.startswith("The user's kernel namespace: ") for line in lines)
    columns_ok = False
    previous = ""
    for line in lines:
        keep = line == preamble
        if not keep and snapshot:
            keep = bool(NAMESPACE_LINE.match(line))
        elif not keep:
            if MENTION_HEAD.match(line) and previous in ("", preamble):  # a mention starts a block
                keep = True
                columns_ok = not DATA_HEAD.match(line)
            else:
                keep = columns_ok and bool(COLUMN_LINE.match(line))
                columns_ok = columns_ok and bool(line)  # a variable's block ends at a blank line
        if keep:
            kept.append(line)
        elif line:
            dropped += 1
        previous = line
    if dropped:
        kept.append(f"[{dropped} lines of values (rows, reprs, file contents) {WITHHELD}]")
    return "\n".join(kept)
