"""A suggestion as the model writes it, made fit to show: Markdown fences of a chat reply removed,
cut at a sensible boundary (a blank line, the end of the cursor's block, a line budget), no text the
suffix already has, and dropped when it makes the Python around it stop parsing."""

from __future__ import annotations

import ast
import re
import warnings

MAX_LINES = 16
_MAGIC = re.compile(r"^(\s*)[%!]")
_FENCE = re.compile(r"^```[\w+-]*[ \t]*\n?")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


class Boundary:
    """Fed the model's text piece by piece: `text` is what may be shown so far; `done` once the
    suggestion reached its end (the rest of the model's reply is not needed: its request is closed)."""

    def __init__(self, prefix: str, chat: bool) -> None:
        current = prefix.rsplit("\n", 1)[-1]
        self._base = _indent(current)  # the cursor line's indentation
        self._chat = chat
        self._raw = ""
        self.text = ""
        self.done = False

    def feed(self, piece: str) -> None:
        if self.done:
            return
        self._raw += piece
        raw = self._raw
        if self._chat:
            if raw.lstrip().startswith("```"):
                stripped = raw.lstrip()
                if "\n" not in stripped:
                    return  # the fence's language is still coming
                raw = _FENCE.sub("", stripped, count=1)
            if "```" in raw:
                raw = raw[: raw.index("```")]
                self.done = True
        self.text = self._cut(raw)

    def _cut(self, raw: str) -> str:
        lines = raw.split("\n")
        kept = [lines[0]]
        for number, line in enumerate(lines[1:], start=1):
            complete = number < len(lines) - 1  # the last line may still grow
            if not line.strip():
                if complete and any(part.strip() for part in kept):  # a blank line ends it
                    self.done = True
                    break
                kept.append(line)
                continue
            if _indent(line) < self._base and (complete or line.strip()):  # dedented past the cursor's block
                self.done = True
                break
            if len(kept) >= MAX_LINES:
                self.done = True
                break
            kept.append(line)
        return "\n".join(kept).rstrip() if self.done else "\n".join(kept)

    def final(self) -> str:
        """The suggestion once the model has finished: without trailing blank lines."""
        return self.text.rstrip()


def without_overlap(suggestion: str, suffix: str) -> str:
    """The suggestion without an end the suffix's first line already begins with (a closing bracket
    the model wrote again)."""
    head = suffix.split("\n", 1)[0]
    for size in range(min(len(head), len(suggestion), 40), 0, -1):
        if suggestion.endswith(head[:size]) and head[:size].strip():
            return suggestion[:-size]
    return suggestion


def fits_python(prefix: str, suggestion: str, suffix: str) -> bool:
    """Whether the cell or file still parses with the suggestion in it. IPython's `%magic` and `!shell`
    lines count as statements; a syntax error that lies before the cursor is not the suggestion's."""
    if not suggestion.strip():
        return True
    if prefix.lstrip().startswith("%%"):  # a cell magic's body need not be Python
        return True
    code = prefix + suggestion + suffix
    code = "\n".join(_MAGIC.sub(r"\1pass #", line) for line in code.split("\n"))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escape sequences and the like are not ours to report
            ast.parse(code)
    except SyntaxError as exc:
        before = prefix.count("\n") + 1  # the cursor's line
        return exc.lineno is not None and exc.lineno < before
    except (ValueError, RecursionError, MemoryError):
        return False
    return True
