"""The one error hierarchy of what a caller asked for and cannot have: every refusal that reaches a
route is a `CellwrightError` with a `kind` (what the panel and API clients switch on, listed in the
contract as `ErrorKind`) and a `category` (what the server maps to an HTTP status, once, in
jupyter_ext/errors.py). The magic shows the same errors as a line in the cell."""

from __future__ import annotations

from typing import Literal

Category = Literal["bad_request", "not_found", "conflict", "too_large", "unavailable", "misconfigured"]


class CellwrightError(Exception):
    """A refusal the caller can act on: `message` says what went wrong and what to do."""

    category: Category = "bad_request"
    kind: str = "bad_request"

    def __init__(self, message: str, kind: str | None = None, category: Category | None = None) -> None:
        super().__init__(message)
        self.message = message
        if kind:
            self.kind = kind
        if category:
            self.category = category


class BadRequest(CellwrightError):
    category = "bad_request"


class NotFound(CellwrightError):
    category = "not_found"
    kind = "not_found"


class Conflict(CellwrightError):
    """The thread's (or the step's) state does not allow it now."""

    category = "conflict"
    kind = "conflict"


class Unavailable(CellwrightError):
    """Something the server needs is down (the shared database): retry later."""

    category = "unavailable"
    kind = "unavailable"


class Misconfigured(CellwrightError):
    """The server cannot serve this until its operator fixes the configuration (the message says how)."""

    category = "misconfigured"
    kind = "misconfigured"
