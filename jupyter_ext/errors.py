"""Errors as the routes answer them: agent_core's one hierarchy (agent_core.errors), and the one
table from an error's category to its HTTP status."""

from __future__ import annotations

from agent_core.errors import BadRequest, Category, CellwrightError, Conflict, Misconfigured, NotFound, Unavailable

STATUS: dict[Category, int] = {
    "bad_request": 400,
    "not_found": 404,
    "conflict": 409,
    "too_large": 413,
    "unavailable": 503,
    "misconfigured": 503,
}

__all__ = [
    "STATUS",
    "BadRequest",
    "CellwrightError",
    "Conflict",
    "Misconfigured",
    "NotFound",
    "Unavailable",
    "status_of",
]


def status_of(error: CellwrightError) -> int:
    return STATUS[error.category]
