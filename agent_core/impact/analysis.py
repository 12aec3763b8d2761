"""Static impact of a code cell, before it runs: the variables it reads, assigns, changes in place
and deletes, the files it writes, its network access, package installs and shell escapes, each with
the line it comes from. What static analysis cannot see is listed under `unknown`, never guessed
as safe. Pure Python (`ast` plus IPython's input transformer), bounded, and it never raises."""

from __future__ import annotations

import ast
import functools
import keyword
import warnings
from dataclasses import dataclass, field

from agent_core.impact import magics, syntax
from agent_core.impact.scopes import Sink
from agent_core.impact.visitor import ImpactVisitor

MAX_CELL_CHARS = 200_000
CATEGORIES = ("reads", "assigns", "mutates", "deletes", "files_written", "network", "installs", "shell", "unknown")
OUTSIDE_KERNEL = ("files_written", "network", "installs", "shell", "unknown")


@dataclass(frozen=True)
class Finding:
    name: str  # variable name, file path (source text, shortened), module, package or command
    line: int  # 1-based line in the cell

    def as_dict(self) -> dict[str, object]:
        return {"name": self.name, "line": self.line}


def _is_variable(name: str) -> bool:
    return name.isidentifier() and not keyword.iskeyword(name)


def _unique(names: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(names))


@dataclass(frozen=True)
class CodeImpact:
    reads: tuple[Finding, ...] = ()
    assigns: tuple[Finding, ...] = ()
    mutates: tuple[Finding, ...] = ()
    deletes: tuple[Finding, ...] = ()
    files_written: tuple[Finding, ...] = ()
    network: tuple[Finding, ...] = ()
    installs: tuple[Finding, ...] = ()
    shell: tuple[Finding, ...] = ()
    unknown: tuple[Finding, ...] = field(default=())
    parse_error: str | None = None
    # Names from before the cell that a call may change, by means only the value's type tells
    # (`gen.send(None)`, `for v in it`, `list(it)`; `df.head()` too): not one of the card's
    # categories, the kernel decides (agent_core.undo.card). Reads as well, as before.
    touched: tuple[Finding, ...] = ()

    def names(self, category: str) -> tuple[str, ...]:
        """The names found in one category, in order (e.g. `impact.names("mutates")`)."""
        return tuple(finding.name for finding in getattr(self, category))

    def changed_names(self) -> tuple[str, ...]:
        """Variables assigned, mutated or deleted (the snapshot candidates; which of them exist
        before the cell runs only the kernel knows), de-duplicated, in order."""
        found = [*self.assigns, *self.mutates, *self.deletes]
        return _unique([item.name for item in sorted(found, key=lambda item: item.line) if _is_variable(item.name)])

    def mutated_names(self) -> tuple[str, ...]:
        """Variables changed in place (not only rebound): their old value must be a copy."""
        return _unique([item.name for item in self.mutates if _is_variable(item.name)])

    def touched_names(self) -> tuple[str, ...]:
        """Variables a call may change in place, depending on their type in the kernel, that the
        cell does not otherwise change (those are among `changed_names` already)."""
        changed = set(self.changed_names())
        return _unique([item.name for item in self.touched if item.name not in changed and _is_variable(item.name)])

    def created_names(self) -> tuple[str, ...]:
        """Variables only assigned, never mutated or deleted here: the ones that may be new."""
        other = {item.name for item in (*self.mutates, *self.deletes)}
        return _unique([item.name for item in self.assigns if item.name not in other and _is_variable(item.name)])

    def touches_outside_kernel(self) -> bool:
        return any(getattr(self, category) for category in OUTSIDE_KERNEL)

    def undo_blockers(self) -> tuple[str, ...]:
        """Why restoring the changed variables would not undo this cell, one sentence per reason
        (empty when the analysis sees nothing beyond the kernel's variables)."""
        reasons = []
        labels = {
            "files_written": "writes or deletes files",
            "network": "uses the network",
            "installs": "installs packages",
            "shell": "runs shell commands",
            "unknown": "does things static analysis cannot see",
        }
        for category, label in labels.items():
            found = getattr(self, category)
            if found:
                shown = ", ".join(item.name for item in found[:3]) + (", …" if len(found) > 3 else "")
                reasons.append(f"{label}: {shown}")
        wiped = [item.name for item in self.deletes if not _is_variable(item.name)]
        if wiped:
            reasons.append(f"deletes variables by magic: {', '.join(wiped[:3])}")
        return tuple(reasons)

    def as_dict(self) -> dict[str, list[dict[str, object]]]:
        """Every category as `[{"name", "line"}]`: the `impact` lists of the approval card (API.md),
        plus `unknown`; the undo fields are the caller's."""
        return {category: [item.as_dict() for item in getattr(self, category)] for category in CATEGORIES}


def _unanalysable(reason: str, line: int = 1, parse_error: str | None = None) -> CodeImpact:
    return CodeImpact(unknown=(Finding(reason, line),), parse_error=parse_error)


def _parse(code: str, first_line: int) -> ast.Module:
    """Python source of a cell (or a magic's code) with its lines placed where they are in the cell."""
    try:
        python = syntax.to_python(code)
    except (SyntaxError, ValueError, IndentationError):  # IPython's tokenizer on broken input
        python = code
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SyntaxWarning for odd escapes is not our business
        tree = ast.parse(python)
    if first_line > 1:
        ast.increment_lineno(tree, first_line - 1)
    return tree


def _magic_code(code: str, first_line: int) -> ast.Module | None:
    try:
        return _parse(code, first_line)
    except (SyntaxError, ValueError):
        return None


def _impact(sink: Sink, parse_error: str | None = None) -> CodeImpact:
    def findings(category: str) -> tuple[Finding, ...]:
        items = [Finding(name, line) for name, line in sink.found.get(category, {}).items()]
        return tuple(sorted(items, key=lambda item: item.line))

    return CodeImpact(
        **{category: findings(category) for category in (*CATEGORIES, "touched")}, parse_error=parse_error
    )


def _analyze(code: str) -> CodeImpact:
    sink = Sink()
    visitor = ImpactVisitor(sink, _magic_code)
    magic = syntax.split_cell_magic(code)
    if magic is not None:
        visitor.apply_magic(magics.cell_magic(magic.name, magic.args, magic.body), magic.line, f"%%{magic.name}")
        return _impact(sink)
    try:
        tree = _parse(code, 1)
    except SyntaxError as exc:
        line = max(1, exc.lineno or 1)
        message = f"syntax error (line {line}): {exc.msg}"
        return _unanalysable(message, line, parse_error=message)
    except ValueError as exc:  # null bytes (Python 3.11 says ValueError, 3.12 SyntaxError)
        message = f"cannot be parsed: {exc}"
        return _unanalysable(message, parse_error=message)
    visitor.visit(tree)
    return _impact(sink)


def analyze_code(code: str) -> CodeImpact:
    """What `code` will touch when it runs in the kernel. Never raises."""
    if not isinstance(code, str):
        return _unanalysable("not code: nothing to analyse")
    return _analyzed(code)


# The card analyses a cell and its approval runs the same code (snapshot first): once is enough.
@functools.lru_cache(maxsize=64)
def _analyzed(code: str) -> CodeImpact:
    if len(code) > MAX_CELL_CHARS:
        return _unanalysable(f"cell too large to analyse ({len(code)} characters, limit {MAX_CELL_CHARS})")
    try:
        return _analyze(code)
    except syntax.TooComplex as exc:
        return _unanalysable(f"cell too large to analyse: {exc}")
    except (RecursionError, MemoryError):
        return _unanalysable("cell too large to analyse: nested too deeply")
    except Exception as exc:  # noqa: BLE001 - the card must show something, and say it is unknown
        return _unanalysable(f"analysis failed ({type(exc).__name__}): effects unknown")
