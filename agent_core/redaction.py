"""Secrets never leave in a URL: user info (`https://alice:hunter2@host`) and secret-looking query
parameters are blanked wherever a URL is shown (events, errors, the config route)."""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

REDACTED = "***"
SECRET_PARAMS = re.compile(r"(key|token|secret|password|passwd|pwd|auth|signature|sig|credential|session)", re.I)
# A URL inside free text; bounded so a hostile message cannot make the scan slow.
URL_IN_TEXT = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]{0,20}://[^\s'\"<>()\[\]{}]{1,2048}")


def redact_url(url: str) -> str:
    """`url` with its user info and secret query values replaced by ***."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{REDACTED}@{netloc.rsplit('@', 1)[1]}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(SECRET_PARAMS.search(name) for name, _ in pairs):
            query = urlencode(
                [(name, REDACTED if SECRET_PARAMS.search(name) else value) for name, value in pairs], safe="*"
            )
    if netloc == parts.netloc and query == parts.query:
        return url  # nothing secret: as given (urlunsplit would turn sqlite:////abs/path into sqlite://abs/path)
    return urlunsplit(parts._replace(netloc=netloc, query=query))


def redact_text(text: str) -> str:
    """Every URL inside `text`, redacted."""
    if "://" not in text:
        return text
    return URL_IN_TEXT.sub(lambda match: redact_url(match.group(0)), text)
