"""Domain errors of the server extension; the base handler maps each to its HTTP status, once."""
from __future__ import annotations


class CellwrightError(Exception):
    status = 400
    kind = "bad_request"

    def __init__(self, message: str, kind: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if kind:
            self.kind = kind


class BadRequest(CellwrightError):
    status = 400


class NotFound(CellwrightError):
    status = 404
    kind = "not_found"


class Unavailable(CellwrightError):
    """Something the server needs is down (the shared database): retry later."""

    status = 503
    kind = "unavailable"


class Conflict(CellwrightError):
    status = 409
    kind = "conflict"

