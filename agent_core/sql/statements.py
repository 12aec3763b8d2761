"""What a model-written SQL text is: one statement, and whether it only reads.

A small tokenizer (sqlparse is not a dependency) that knows where SQL hides text: string literals
('..' with '' escapes, E'..' with backslashes), quoted identifiers ("..", `..`, [..]), Postgres
dollar quotes ($tag$..$tag$), line comments (--, #) and block comments (/* */, nested as in
Postgres). Outside those, `;` separates statements and words are keywords or names.

Read-only means: the first keyword is SELECT, WITH, VALUES or TABLE, AND no word anywhere outside
quotes is one that writes (a data-modifying CTE `WITH d AS (DELETE ...)`, `SELECT ... INTO`,
`FOR UPDATE`). Anything unsure is a write: refused unless writes are allowed, and approved then."""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_SQL_CHARS = 20_000

READ_FIRST = frozenset({"SELECT", "WITH", "VALUES", "TABLE"})
WRITE_WORDS = frozenset(
    {
        "INSERT",
        "UPDATE",
        "DELETE",
        "MERGE",
        "UPSERT",
        "REPLACE",
        "DROP",
        "CREATE",
        "ALTER",
        "TRUNCATE",
        "RENAME",
        "GRANT",
        "REVOKE",
        "ATTACH",
        "DETACH",
        "PRAGMA",
        "VACUUM",
        "ANALYZE",
        "REINDEX",
        "CLUSTER",
        "COPY",
        "CALL",
        "EXEC",
        "EXECUTE",
        "DO",
        "INTO",
        "LOCK",
        "SET",
        "RESET",
        "LOAD",
        "IMPORT",
        "EXPORT",
        "INSTALL",
        "REFRESH",
        "COMMENT",
        "SECURITY",
        "OWNER",
        "NOTIFY",
        "LISTEN",
        "PREPARE",
        "DEALLOCATE",
        "DISCARD",
        "BEGIN",
        "COMMIT",
        "ROLLBACK",
        "SAVEPOINT",
        "RELEASE",
        "SHUTDOWN",
        "KILL",
        "OUTFILE",
        "DUMPFILE",
    }
)
# Functions named like write words: `replace(...)` reads. Only these may be followed by "(".
FUNCTION_WORDS = frozenset({"REPLACE", "LOAD", "ANALYZE"})

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")
_DOLLAR = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)?\$")


class SqlRefused(ValueError):
    """A statement that cannot run as given; the message tells the model what to change."""


@dataclass(frozen=True)
class Statement:
    sql: str  # the one statement, without a trailing `;`
    first_word: str
    read_only: bool
    write_words: tuple[str, ...]  # why it is not read-only


def _skip_quoted(text: str, i: int, close: str, doubled: bool = True, backslash: bool = False) -> int:
    """Index after the closing `close` of a quoted run that starts at text[i] (the opening char)."""
    j = i + 1
    while j < len(text):
        c = text[j]
        if backslash and c == "\\":
            j += 2
            continue
        if c == close:
            if doubled and j + 1 < len(text) and text[j + 1] == close:
                j += 2
                continue
            return j + 1
        j += 1
    raise SqlRefused("the SQL has an unterminated quote or identifier")


def _skip_block_comment(text: str, i: int) -> int:
    depth, j = 0, i
    while j < len(text):
        if text.startswith("/*", j):
            if depth:  # Postgres nests comments, SQLite and MySQL do not: the same text would mean two things
                raise SqlRefused("nested /* comments are not accepted: remove the inner /*")
            depth, j = depth + 1, j + 2
        elif text.startswith("*/", j):
            depth, j = depth - 1, j + 2
            if depth == 0:
                return j
        else:
            j += 1
    raise SqlRefused("the SQL has an unterminated /* comment")


def tokens(text: str) -> list[tuple[str, str]]:
    """(kind, value) pairs: kind is word, punct or ';'. Literals, quoted names and comments are dropped
    (they cannot hold keywords), which is all classification needs."""
    out: list[tuple[str, str]] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif text.startswith("--", i) or c == "#":
            end = text.find("\n", i)
            i = n if end < 0 else end + 1
        elif text.startswith("/*", i):
            i = _skip_block_comment(text, i)
        elif c in "eE" and i + 1 < n and text[i + 1] == "'":
            i = _skip_quoted(text, i + 1, "'", backslash=True)
            out.append(("literal", ""))
        elif c == "'":
            i = _skip_quoted(text, i, "'")
            out.append(("literal", ""))
        elif c == '"':
            i = _skip_quoted(text, i, '"')
            out.append(("name", ""))
        elif c == "`":
            i = _skip_quoted(text, i, "`")
            out.append(("name", ""))
        elif c == "[":
            i = _skip_quoted(text, i, "]", doubled=True)
            out.append(("name", ""))
        elif c == "$" and (match := _DOLLAR.match(text, i)):
            tag = match.group(0)
            end = text.find(tag, match.end())
            if end < 0:
                raise SqlRefused("the SQL has an unterminated $$ string")
            i = end + len(tag)
            out.append(("literal", ""))
        elif c == ";":
            out.append((";", str(i)))  # its offset: the statement is cut there
            i += 1
        elif match := _WORD.match(text, i):
            out.append(("word", match.group(0).upper()))
            i = match.end()
        else:
            out.append(("punct", c))
            i += 1
    return out


def classify(sql: str) -> Statement:
    """The one statement in `sql`, classified; SqlRefused for none, several, or unparseable text."""
    if len(sql) > MAX_SQL_CHARS:
        raise SqlRefused(f"the SQL is longer than {MAX_SQL_CHARS} characters")
    if "\x00" in sql:
        raise SqlRefused("the SQL contains a NUL character")
    found = tokens(sql)
    statements: list[list[tuple[str, str]]] = [[]]
    for token in found:
        if token[0] == ";":
            statements.append([])
        else:
            statements[-1].append(token)
    non_empty = [s for s in statements if s]
    if not non_empty:
        raise SqlRefused("the SQL holds no statement")
    if len(non_empty) > 1:
        raise SqlRefused("send exactly one SQL statement per call (found several separated by ';')")
    if not statements[0]:
        raise SqlRefused("start with the statement itself: no ';' before it")
    body = non_empty[0]
    words = [value for kind, value in body if kind == "word"]
    first = next((value for kind, value in body if kind != "punct" or value != "("), "")
    writes = []
    for position, (kind, value) in enumerate(body):
        if kind == "word" and value in WRITE_WORDS:
            following = body[position + 1] if position + 1 < len(body) else ("", "")
            if value in FUNCTION_WORDS and following == ("punct", "("):
                continue
            writes.append(value)
    read_only = first in READ_FIRST and not writes and bool(words)
    return Statement(_one_statement(sql, found), first, read_only, tuple(dict.fromkeys(writes)))


def _one_statement(sql: str, found: list[tuple[str, str]]) -> str:
    """The statement's text up to its first `;` (what follows is only comments and `;`): drivers refuse
    a trailing `;` or comment on some backends, and nothing after the statement may reach them."""
    cut = next((int(value) for kind, value in found if kind == ";"), len(sql))
    return sql[:cut].strip()
