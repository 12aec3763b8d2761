"""The model's search pattern, made safe to run. The pattern is hostile input: Python's `re`
backtracks (`(a|aa)+$` on a line of 40 a's runs for minutes holding the GIL, which froze the whole
Jupyter server), so patterns are checked for their compile cost and matched with the `regex`
package, which releases the GIL while matching a str and takes a per-call `timeout`."""

from __future__ import annotations

import re
import threading
import time

import regex

from agent_core.tools.base import ToolInputError

# A sane pattern matches a line in microseconds; one that needs seconds on a single line is
# backtracking exponentially and would not finish in any useful time.
MATCH_SECONDS = 2.0
MAX_PATTERN_CHARS = 1000
# `regex` expands counted repeats when it compiles, holding the GIL: (a{60000}){60000} compiles for
# many minutes. 100k expanded atoms compile in about 0.1 s.
MAX_REPEAT_COST = 100_000


class PatternTooSlow(ToolInputError):
    """The model's pattern backtracks catastrophically: it must simplify it."""


class DeadlinePassed(Exception):
    pass


def _smart_case_flags(pattern: str) -> int:
    return 0 if any(ch.isupper() for ch in pattern) else regex.IGNORECASE


_COUNTED = re.compile(r"\{(\d*)(?:,(\d*))?\}")


def repeat_cost(pattern: str) -> int:
    """An upper estimate of the atoms `regex` expands `pattern` into: counted repeats multiply what
    they repeat, sequences and alternatives add up. Errs high (escapes and classes count as one)."""
    stack: list[list[int]] = [[0, 0]]  # per open group: [cost of the finished items, cost of the last item]
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        top = stack[-1]
        if ch == "{" and (counted := _COUNTED.match(pattern, i)) and (counted.group(1) or counted.group(2)):
            low, high = counted.group(1), counted.group(2)
            bound = int(high) if high else int(low or 0)
            top[1] *= max(min(bound, 10**9), 1)
            i = counted.end()
            continue
        if ch in "*+?":
            i += 1
            continue
        if ch == "|":
            top[0], top[1] = top[0] + top[1], 0
            i += 1
            continue
        if ch == "(":
            stack.append([0, 0])
            i += 1
            continue
        if ch == ")" and len(stack) > 1:
            inner = stack.pop()
            top = stack[-1]
            top[0], top[1] = top[0] + top[1], max(inner[0] + inner[1], 1)
            i += 1
            continue
        top[0], top[1] = top[0] + top[1], 1
        if ch == "\\":
            i += 2
            if i < n and pattern[i] in "{<" and pattern[i - 1] in "pPNxgku":  # \p{L}, \x{41}, \g<name>
                close = pattern.find("}" if pattern[i] == "{" else ">", i)
                i = n if close == -1 else close + 1
            continue
        if ch == "[":
            i += 1
            if i < n and pattern[i] == "^":
                i += 1
            if i < n and pattern[i] == "]":
                i += 1
            while i < n and pattern[i] != "]":
                i += 2 if pattern[i] == "\\" else 1
        i += 1
    while len(stack) > 1:  # unbalanced: the compiler will say so; estimate what is there
        inner = stack.pop()
        stack[-1][0] += inner[0] + inner[1]
    return stack[0][0] + stack[0][1]


def check_pattern(pattern: object) -> str:
    """Cheap checks, safe on the event loop, before any engine sees the pattern."""
    if not isinstance(pattern, str) or not pattern:
        raise ToolInputError("pattern must be a non-empty regular expression")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise ToolInputError(
            f"the pattern is longer than {MAX_PATTERN_CHARS} characters; search for a shorter, distinctive part"
        )
    if repeat_cost(pattern) > MAX_REPEAT_COST:
        raise ToolInputError(
            "the pattern's counted repeats ({n} and {m,n}) are too large or too deeply nested to compile quickly; "
            "use smaller counts, or + and * instead"
        )
    return pattern


def _compile(pattern: str) -> regex.Pattern[str]:
    check_pattern(pattern)
    try:
        return regex.compile(pattern, _smart_case_flags(pattern))
    except (regex.error, OverflowError, RecursionError) as exc:
        raise ToolInputError(f"the pattern is not a valid regular expression: {exc}") from None


class Matcher:
    """The model's pattern with a time limit on every match and a deadline for the whole search.
    Make and use it in a worker thread: compiling holds the GIL, matching lets go of it."""

    def __init__(self, pattern: str, seconds: float, stop: threading.Event | None = None) -> None:
        self.regex = _compile(pattern)
        self.seconds = seconds
        self.deadline = time.monotonic() + self.seconds
        self.stop = stop or threading.Event()

    def search(self, line: str, where: str) -> bool:
        remaining = self.deadline - time.monotonic()
        if remaining <= 0 or self.stop.is_set():
            raise DeadlinePassed
        limit = min(MATCH_SECONDS, remaining)
        try:
            return self.regex.search(line, timeout=limit) is not None
        except TimeoutError:
            if limit < MATCH_SECONDS:
                raise DeadlinePassed from None
            raise PatternTooSlow(
                f"the pattern took too long: more than {MATCH_SECONDS:g} s on a single line of {where}, so the "
                "search was stopped. Simplify it: avoid groups that repeat and can match the same text in many "
                "ways, such as (a|aa)+, (.*){10} or (\\w+\\s?)*; search for a literal word or a short, "
                "anchored pattern instead"
            ) from None

    def stopped_note(self) -> str:
        return (
            f"the search stopped after {self.seconds:.0f} s; narrow the path, or simplify the pattern "
            "if it is slow on every line"
        )
