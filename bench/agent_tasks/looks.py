"""The exploring policy's looks at a task's data before it solves it (issue 37), as real models look:
a table: its head, its columns and types (info), a summary (distinct counts and describe), the
missing values where info showed gaps, the counts of the column the question is about, and for a
plot task a quick plot; a database: its tables, their columns, their first rows, distinct counts of
the table the question is about, the counts of one of its columns.

Each look is code for `explore`, which runs it in a throwaway fork of the kernel: nothing persists,
so every look loads the data again. Each is built from what the request showed the model
(devtools.fake_llm_script.Shown): the file from the user's message, the columns and tables from
earlier looks' results. A value no result showed raises NotShown, which fails the run."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass

from devtools.fake_llm_script import NotShown, Shown

DATA = re.compile(r"Data: (\S+) \(relative")  # the runner's message names the file
# df.info()'s rows: " 4   units        577 non-null    float64"
INFO_ROW = re.compile(r"^\s*\d+\s+(\S+)\s+(\d+) non-null\s+(\S+)\s*$", re.M)
COUNT_ROW = re.compile(r"^(\w+)\s+(\d+)$", re.M)  # df.nunique() and a transposed one-row frame: "region   4"
TABLE_ROW = re.compile(r"^\d+\s+(\w+)$", re.M)  # a one-column frame of names: "0  customers"
SCHEMA_ROW = re.compile(r"^table (\w+): (\{.*\})$", re.M)
TEXT_TYPES = ("object", "str", "string", "category", "bool", "TEXT")
Look = Callable[[Shown], str | None]  # the code of a look, or None where it is not worth it


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    non_null: int = -1  # -1: not shown (a database's schema)

    @property
    def text(self) -> bool:
        return self.type in TEXT_TYPES or self.type.startswith("VARCHAR")

    @property
    def numeric(self) -> bool:
        return not self.text and not self.name.endswith("id")


def _path(seen: Shown) -> str:
    return seen.find_in_prompt(DATA.pattern)


def _words(seen: Shown) -> set[str]:
    """The words of the question (the user's message up to the data and the answer's format)."""
    return set(re.findall(r"\w+", seen.asked.split("\nData: ")[0].lower()))


def _mentioned(name: str, words: set[str]) -> bool:
    """Whether the question names `name` (a column, a table), in the singular or plural."""
    name = name.lower()
    return bool({name, name + "s", name.removesuffix("s")} & words)


def _named(columns: list[Column], seen: Shown) -> list[Column]:
    words = _words(seen)
    return [c for c in columns if _mentioned(c.name, words)]


def _result(seen: Shown, start: str) -> str:
    """The newest tool result matching `start` (the look that printed it), from there on. Any tool's:
    prompt tool calling's observations do not name their tool, and only looks come before the solution."""
    return seen.find(f"({start}.*)", flags=re.S | re.M)


def _counts(text: str) -> dict[str, int]:
    return {name: int(n) for name, n in COUNT_ROW.findall(text)}


def _least_varied(columns: list[Column], counts: dict[str, int]) -> Column:
    """The text column with the fewest distinct values (more than one): the one whose counts say most."""
    varied = [c for c in columns if c.text and counts.get(c.name, 0) > 1]
    if not varied:
        raise NotShown(f"no text column with its distinct count among {[c.name for c in columns]} and {counts}")
    return min(varied, key=lambda c: counts[c.name])


# -- a table (CSV, parquet): one DataFrame


def _load(seen: Shown) -> str:
    path = _path(seen)
    reader = "read_parquet" if path.endswith(".parquet") else "read_csv"
    return f"import pandas as pd\ndf = pd.{reader}({path!r})\n"


def _info(seen: Shown) -> tuple[list[Column], int]:
    """The columns df.info() showed, and its row count."""
    text = _result(seen, r"\d+ entries")
    columns = [Column(name, dtype, int(n)) for name, n, dtype in INFO_ROW.findall(text)]
    if not columns:
        raise NotShown(f"df.info()'s result shows no columns: {text[:300]!r}")
    return columns, int(text.split(" ", 1)[0])


def _nunique_text(seen: Shown) -> str:
    """df.nunique()'s printed counts: the summary look's stream, before describe's frame (isna's
    counts look the same, without describe after them)."""
    return seen.find(r"((?:^\w+\s+\d+\n)+)dtype: int64\n[^\n]*\ncount ", flags=re.M)


def _counted_column(seen: Shown) -> Column:
    """The column to count: a text column the question names, else the least varied one."""
    columns, _ = _info(seen)
    named = [c for c in _named(columns, seen) if c.text]
    return named[0] if named else _least_varied(columns, _counts(_nunique_text(seen)))


def _missing(seen: Shown) -> str | None:
    columns, rows = _info(seen)
    return _load(seen) + "df.isna().sum()" if any(c.non_null < rows for c in columns) else None


def _plotted(seen: Shown) -> str | None:
    if "matplotlib" not in seen.asked:
        return None
    columns, _ = _info(seen)
    numeric = [c for c in _named(columns, seen) if c.numeric] or [c for c in columns if c.numeric]
    if not numeric:
        raise NotShown(f"df.info() showed no numeric column: {[c.name for c in columns]}")
    name = numeric[0].name
    return f"import matplotlib.pyplot as plt\n{_load(seen)}df[{name!r}].plot(kind='hist', bins=20, title={name!r})"


TABLE_LOOKS: list[Look] = [
    lambda seen: _load(seen) + "df.head()",
    lambda seen: _load(seen) + "df.info()",
    lambda seen: _load(seen) + "print(df.nunique())\ndf.describe()",
    _missing,
    lambda seen: _load(seen) + f"df[{_counted_column(seen).name!r}].value_counts(dropna=False).head(10)",
    _plotted,
]


# -- a database (SQLite): its tables


def _connect(seen: Shown) -> str:
    return f"import sqlite3\nimport pandas as pd\ncon = sqlite3.connect({_path(seen)!r})\n"


def _tables(seen: Shown) -> list[str]:
    text = seen.find(r"(\s+name\n(?:\d+\s+\w+\n?)+)")
    return TABLE_ROW.findall("\n".join(line.strip() for line in text.splitlines()))


def _schema(seen: Shown) -> dict[str, list[Column]]:
    text = _result(seen, "^table ")
    found = {t: [Column(n, str(k)) for n, k in ast.literal_eval(s).items()] for t, s in SCHEMA_ROW.findall(text)}
    if not found:
        raise NotShown(f"the schema look shows no table: {text[:300]!r}")
    return found


def _asked_table(seen: Shown) -> tuple[str, list[Column]]:
    """The table the question names (the first, in the database's order), else the first table."""
    schema, words = _schema(seen), _words(seen)
    name = next((t for t in schema if _mentioned(t, words)), next(iter(schema)))
    return name, schema[name]


def _distinct(seen: Shown) -> str:
    table, columns = _asked_table(seen)
    counts = ", ".join(f"count(distinct {c.name}) as {c.name}" for c in columns)
    return _connect(seen) + f'pd.read_sql_query("select count(*) as n_rows, {counts} from {table}", con).T'


def _grouped(seen: Shown) -> str:
    table, columns = _asked_table(seen)
    named = [c for c in _named(columns, seen) if c.text]
    column = named[0] if named else _least_varied(columns, _counts(_result(seen, "n_rows")))
    query = f"select {column.name}, count(*) as n from {table} group by {column.name} order by n desc limit 10"
    return _connect(seen) + f'pd.read_sql_query("{query}", con)'


DATABASE_LOOKS: list[Look] = [
    lambda seen: _connect(seen) + "pd.read_sql_query(\"select name from sqlite_master where type = 'table'\", con)",
    lambda seen: (
        _connect(seen)
        + "for t in "
        + repr(_tables(seen))
        + ":\n    info = pd.read_sql_query(f'pragma table_info({t})', con)\n"
        + "    print(f'table {t}:', dict(zip(info.name, info.type)))"
    ),
    lambda seen: (
        _connect(seen)
        + "for t in "
        + repr(list(_schema(seen)))
        + ":\n    print(t)\n    print(pd.read_sql_query(f'select * from {t} limit 5', con))"
    ),
    _distinct,
    _grouped,
]


def next_look(seen: Shown, looked: int) -> str | None:
    """The code of the look after the `looked` ones made so far, or None when the model has seen
    enough. A look is built only when its turn comes: it may read the results of the ones before."""
    looks = DATABASE_LOOKS if _path(seen).endswith((".sqlite", ".db")) else TABLE_LOOKS
    made = 0
    for look in looks:
        code = look(seen)
        if code is None:
            continue
        if made == looked:
            return code
        made += 1
    return None
