"""The FTS5 expression for a model's free-text query, built so that no FTS5 syntax from the text
survives: only word tokens are kept, each one double-quoted (a phrase of one word), joined by OR,
and bounded in number and length. `"` `*` `:` `^` `NEAR` `AND` `-` `(` are all just text then."""

from __future__ import annotations

import re

MAX_QUERY_CHARS = 2000
MAX_TERMS = 32
MAX_TERM_CHARS = 64
_WORD = re.compile(r"\w+", re.UNICODE)
# Words too common to help ranking; dropped unless nothing else is left.
STOP_WORDS = frozenset(
    "a an and are as at be by do does for from how i in is it of on or our the this to we what when where which who why with you".split()
)


def query_terms(text: str) -> list[str]:
    words = [w.lower()[:MAX_TERM_CHARS] for w in _WORD.findall(text[:MAX_QUERY_CHARS])]
    kept = [w for w in words if w not in STOP_WORDS] or words
    return list(dict.fromkeys(kept))[:MAX_TERMS]


def fts_expression(text: str) -> str | None:
    """An FTS5 MATCH expression, or None when the text has no words at all."""
    terms = query_terms(text)
    if not terms:
        return None
    return " OR ".join(f'"{term}"' for term in terms)  # \w+ holds no quote: nothing to escape
