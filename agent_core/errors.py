"""The one error hierarchy of what a caller asked for and cannot have: every refusal that reaches a
route is a `CellwrightError` with a `kind` (what the panel and API clients switch on, listed in the
contract as `RouteErrorKind`) and a `category` (what the server maps to an HTTP status, once, in
jupyter_ext/errors.py). The magic shows the same errors as a line in the cell."""

from __future__ import annotations

from typing import Literal

from agent_core.contract.choices import RouteErrorKind

Category = Literal["bad_request", "not_found", "conflict", "too_large", "unavailable", "misconfigured"]


class CellwrightError(Exception):
    """A refusal the caller can act on: `message` says what went wrong and what to do."""

    category: Category = "bad_request"
    kind: RouteErrorKind = "bad_request"

    def __init__(self, message: str, kind: RouteErrorKind | None = None, category: Category | None = None) -> None:
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
    kind: RouteErrorKind = "not_found"


class Conflict(CellwrightError):
    """The thread's (or the step's) state does not allow it now."""

    category = "conflict"
    kind: RouteErrorKind = "conflict"


class Unavailable(CellwrightError):
    """Something the server needs is down (the shared database): retry later."""

    category = "unavailable"
    kind: RouteErrorKind = "unavailable"


class Misconfigured(CellwrightError):
    """The server cannot serve this until its operator fixes the configuration (the message says how)."""

    category = "misconfigured"
    kind: RouteErrorKind = "misconfigured"
