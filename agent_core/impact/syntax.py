"""IPython syntax to plain Python, line numbers kept: `%magic`, `!cmd`, `x = !cmd`, `x?` become
`get_ipython()....` calls on the line they were written on, so every finding keeps the line the
user sees on the card. A cell magic (`%%bash`) is split off first: its body is not Python.

IPython's own `TransformerManager` translates each escaped line (ipykernel depends on IPython, so
it is always there; imported on first use because it costs ~0.2 s). Run on a whole cell it
re-tokenises the cell once per magic (minutes for a big hostile cell), so lines are found here and
translated one by one; the whole-cell transformer is only the fallback for ambiguous cells."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

# Each escaped line costs one small IPython translation: bounded for hostile cells.
MAX_ESCAPED_LINES = 1000
FULL_TRANSFORM_BUDGET = 200_000  # escaped lines x characters: about a second of tokenising


class TooComplex(Exception):
    """The cell's IPython syntax is beyond what is analysed in bounded time."""


@dataclass(frozen=True)
class CellMagic:
    name: str  # "bash" for `%%bash`
    args: str  # the rest of the magic's line
    line: int  # 1-based line of the `%%` line
    body: str  # the lines after it


def split_cell_magic(code: str) -> CellMagic | None:
    """The cell magic when the cell starts with one (leading blank lines allowed, as IPython does)."""
    lines = code.splitlines()
    for index, line in enumerate(lines):
        if not line.strip():
            continue
        if not line.startswith("%%"):
            return None
        head = line[2:].strip()
        name, _, args = head.partition(" ")
        return CellMagic(name=name, args=args.strip(), line=index + 1, body="\n".join(lines[index + 1 :]))
    return None


def _kind(stripped: str) -> str | None:
    """Whether a line may be IPython syntax: "escape" (`%x`, `!x`, `?x`, `x?`), "assign"
    (`x = !ls`, `y = %who_ls`) or None. A candidate inside a string is sorted out after parsing."""
    if not stripped or stripped.startswith("#"):
        return None
    if stripped[0] in "%!?" and not stripped.startswith("!="):
        return "escape"
    if stripped.endswith("?"):  # `df.head?`, `%timeit??`: a dotted name only, as IPython's rule
        name = stripped.rstrip("?").lstrip("%")
        if name and all(part.replace("*", "x").isidentifier() for part in name.split(".")):
            return "escape"
    at = stripped.find("=")
    if 0 < at < len(stripped) - 1 and stripped[at + 1] != "=" and stripped[at - 1] not in "!<>=:+-*/%&|^@":
        target, value = stripped[:at], stripped[at + 1 :].lstrip()
        if value[:1] in ("!", "%") and all(char.isalnum() or char in "_ ,.()[]*" for char in target):
            return "assign"
    return None


@lru_cache(maxsize=1)
def _manager() -> Any:
    from IPython.core import inputtransformer2 as it2

    manager = it2.TransformerManager()
    manager.cleanup_transforms = []
    manager.line_transforms = []  # split_cell_magic handles `%%`
    return manager


@lru_cache(maxsize=1)
def _full_manager() -> Any:
    """IPython's whole-cell transformer, with joined continuation lines put back as blank lines."""
    from IPython.core import inputtransformer2 as it2

    def padded(cls: type[Any]) -> type:
        def transform(self: Any, lines: list[str]) -> list[str]:
            result = cls.transform(self, lines)
            lost = len(lines) - len(result)
            if lost > 0:
                at = self.start_line + 1
                result = result[:at] + ["\n"] * lost + result[at:]
            return result

        return type("LinePreserving" + cls.__name__, (cls,), {"transform": transform})

    manager = it2.TransformerManager()
    manager.cleanup_transforms = [it2.leading_indent, it2.classic_prompt, it2.ipython_prompt]
    manager.line_transforms = []
    manager.token_transformers = [padded(cls) for cls in manager.token_transformers]
    return manager


def _logical_end(lines: list[str], start: int) -> int:
    end = start
    while end + 1 < len(lines) and lines[end].rstrip().endswith("\\"):
        end += 1
    return end


def _translate(logical: str) -> str:
    """One escaped logical line (no indent) as one line of Python: IPython's own translation."""
    translated = _manager().transform_cell(logical).strip("\n")
    return translated if "\n" not in translated else "get_ipython().run_cell(" + repr(logical) + ")"


def to_python(code: str) -> str:
    """The cell as Python source with the same line numbers (IPython syntax as `get_ipython()`
    calls). Escaped lines are first replaced by placeholders and parsed once: a placeholder that
    lands inside a string literal was string content, not a magic, and gets its text back."""
    lines = code.split("\n")
    escaped = [index for index, line in enumerate(lines) if _kind(line.strip())]
    if not escaped:
        return code
    if len(escaped) > MAX_ESCAPED_LINES:
        raise TooComplex(f"more than {MAX_ESCAPED_LINES} magic or shell lines")
    try:
        ast.parse(code)
        return code  # plain Python: `% b` on a continuation line is an operator, not a magic
    except SyntaxError:
        pass
    try:
        return _with_placeholders(code, lines, escaped)
    except SyntaxError:
        pass
    operators = [index for index in escaped if lines[index].strip()[:2] not in ("% ", "%(")]
    try:  # `% b` continuing an expression is the modulo operator: no magic has a blank name
        return _with_placeholders(code, lines, operators)
    except SyntaxError:
        # An ambiguous line (a magic next to `% x` inside brackets): IPython's whole-cell
        # transformer re-tokenises the cell once per escaped line, so only when that is cheap.
        if len(escaped) * len(code) > FULL_TRANSFORM_BUDGET:
            raise
        try:
            return _full_manager().transform_cell(code)
        except RuntimeError as exc:  # IPython's own loop limit
            raise TooComplex(str(exc)) from exc


def _with_placeholders(code: str, lines: list[str], escaped: list[int]) -> str:
    placeholder = list(lines)
    spans: dict[int, int] = {}
    for index in escaped:
        if index in spans or any(start < index <= end for start, end in spans.items()):
            continue
        end = _logical_end(lines, index)
        stripped = lines[index].strip()
        indent = lines[index][: len(lines[index]) - len(lines[index].lstrip())]
        target = stripped[: stripped.find("=")].strip() + " = " if _kind(stripped) == "assign" else ""
        placeholder[index] = f"{indent}{target}__cellwright_escape__({index})"
        placeholder[index + 1 : end + 1] = [""] * (end - index)
        spans[index] = end
    tree = ast.parse("\n".join(placeholder))  # SyntaxError: the caller reports it
    real = {
        node.args[0].value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "__cellwright_escape__"
        and node.args
        and isinstance(node.args[0], ast.Constant)
    }
    result = list(lines)
    for index, end in spans.items():
        if index in real:
            indent = lines[index][: len(lines[index]) - len(lines[index].lstrip())]
            logical = "\n".join(line.strip() for line in lines[index : end + 1])
            result[index] = indent + _translate(logical)
            result[index + 1 : end + 1] = [""] * (end - index)
    return "\n".join(result)
