"""The checker: the `@name[value]` answers of a final answer against the expected ones, numbers
within a tolerance, names ignoring case and spaces, lists item by item; and a figure's data."""

from __future__ import annotations

import math
import re
from typing import Any

ANSWER = re.compile(r"@(\w+)\[([^\[\]]*)\]")
RELATIVE = 1e-3


def answers_in(text: str) -> dict[str, str]:
    """Every `@name[value]` in `text`, the last one of a name winning (a model may restate it)."""
    return {name: value.strip() for name, value in ANSWER.findall(text or "")}


def _number(text: str) -> float | None:
    try:
        value = float(text.strip().replace("_", ""))
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def same_value(expected: str, given: str, tolerance: float) -> bool:
    if "," in expected:
        wanted, got = expected.split(","), given.split(",")
        return len(wanted) == len(got) and all(same_value(w, g, tolerance) for w, g in zip(wanted, got, strict=True))
    number, answer = _number(expected), _number(given)
    if number is not None:
        return answer is not None and abs(answer - number) <= max(tolerance, RELATIVE * abs(number)) + 1e-9
    return " ".join(expected.lower().split()) == " ".join(given.lower().split())


def same_data(expected: Any, given: Any, tolerance: float) -> bool:
    """A figure's data (nested lists of numbers and labels) against the reference's."""
    if isinstance(expected, list):
        return (
            isinstance(given, list)
            and len(expected) == len(given)
            and all(same_data(e, g, tolerance) for e, g in zip(expected, given, strict=True))
        )
    if isinstance(expected, (int, float)) and not isinstance(expected, bool):
        return isinstance(given, (int, float)) and abs(given - expected) <= max(tolerance, RELATIVE * abs(expected))
    return bool(expected == given)


def wrong_answers(expected: dict[str, str], answer: str, tolerance: float) -> list[str]:
    """The names whose value is missing from `answer` or not the expected one."""
    given = answers_in(answer)
    return [
        name for name, value in expected.items() if name not in given or not same_value(value, given[name], tolerance)
    ]
