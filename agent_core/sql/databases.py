"""The configured databases: engines made on first use, statements run bounded (rows, cell width,
time) and read-only unless writes are allowed, errors told without credentials, and each table's
metadata (columns, types, comments, a row estimate) read once for the knowledge index.

Blocking (SQLAlchemy): callers run these in a worker thread."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agent_core.redaction import redact_text, redact_url
from agent_core.sql.statements import Statement

if TYPE_CHECKING:  # SQLAlchemy loads with the first database used
    from sqlalchemy.engine import Engine

MAX_ROWS = 200
MAX_CELL_CHARS = 200
STATEMENT_TIMEOUT = 30.0
MAX_TABLES = 2000
COUNT_ROWS_TIMEOUT = 2.0  # per table, for the row estimate where the database keeps none

_engines: dict[str, Engine] = {}
_engines_lock = threading.Lock()


class DatabaseError(Exception):
    """What went wrong, with every credential of the URL masked; safe to show the model and the user."""


def masked(text: str, url: str) -> str:
    """`text` with the URL's password (and user info in any URL inside it) replaced by ***."""
    # SQLAlchemy loads with the first database use: the server and %load_ext agent_core start without it
    from sqlalchemy.engine import make_url

    text = redact_text(text).replace(url, redact_url(url))
    try:
        password = make_url(url).password
    except Exception:
        password = None
    if password:
        text = text.replace(str(password), "***")
    return text


def database_url(databases: Mapping[str, str], name: str) -> str:
    if name not in databases:
        known = sorted(databases)
        raise DatabaseError(
            f"no database named {name[:100]!r} is configured; the configured ones are {known}"
            if known
            else "no databases are configured (c.Cellwright.databases)"
        )
    return databases[name]


def engine_for(url: str) -> Engine:
    from sqlalchemy import create_engine

    with _engines_lock:
        engine = _engines.get(url)
        if engine is None:
            engine = _engines[url] = create_engine(url, pool_pre_ping=True)
        return engine


@dataclass(frozen=True)
class QueryResult:
    columns: list[str]
    rows: list[list[str]]
    truncated: bool  # more rows than MAX_ROWS
    rowcount: int | None  # for a write: rows affected
    seconds: float


def _cell(value: object) -> str:
    text = "NULL" if value is None else str(value)
    return text if len(text) <= MAX_CELL_CHARS else text[: MAX_CELL_CHARS - 1] + "…"


def _guard(connection: Any, statement: Statement, timeout: float) -> None:
    """Per backend: a time limit the database enforces, and read-only at the database too."""
    dialect = connection.dialect.name
    if dialect == "sqlite":
        raw = connection.connection.driver_connection
        deadline = time.monotonic() + timeout
        raw.set_progress_handler(lambda: 1 if time.monotonic() > deadline else 0, 10_000)
        if statement.read_only:
            connection.exec_driver_sql("PRAGMA query_only = ON")
    elif dialect == "postgresql":
        connection.exec_driver_sql(f"SET LOCAL statement_timeout = {int(timeout * 1000)}")
        if statement.read_only:
            connection.exec_driver_sql("SET TRANSACTION READ ONLY")
    elif dialect in ("mysql", "mariadb") and statement.read_only:
        connection.exec_driver_sql(f"SET SESSION MAX_EXECUTION_TIME = {int(timeout * 1000)}")


def _unguard(connection: Any) -> None:
    if connection.dialect.name == "sqlite":
        raw = connection.connection.driver_connection
        raw.set_progress_handler(None, 0)
        connection.exec_driver_sql("PRAGMA query_only = OFF")


def run_statement(
    url: str, statement: Statement, timeout: float = STATEMENT_TIMEOUT, max_rows: int = MAX_ROWS
) -> QueryResult:
    """Run one classified statement: a read in a transaction that is rolled back, a write committed."""
    started = time.monotonic()
    try:
        engine = engine_for(url)
        with engine.connect() as connection:
            transaction = connection.begin()
            try:
                _guard(connection, statement, timeout)
                result = connection.exec_driver_sql(statement.sql)
                columns, rows, truncated = [], [], False
                if result.returns_rows:
                    columns = list(result.keys())
                    fetched = result.fetchmany(max_rows + 1)
                    truncated = len(fetched) > max_rows
                    rows = [[_cell(value) for value in row] for row in fetched[:max_rows]]
                rowcount = None if result.returns_rows else result.rowcount
                result.close()
                if statement.read_only:
                    transaction.rollback()
                else:
                    transaction.commit()
            except BaseException:
                transaction.rollback()
                raise
            finally:
                _unguard(connection)
    except DatabaseError:
        raise
    except Exception as exc:
        message = str(getattr(exc, "orig", None) or exc).splitlines()[0] if str(exc) else type(exc).__name__
        if "interrupted" in message.lower():
            message = f"the statement ran longer than {timeout:g} s and was stopped"
        raise DatabaseError(masked(f"{type(exc).__name__}: {message}", url)[:1000]) from None
    return QueryResult(columns, rows, truncated, rowcount, time.monotonic() - started)


@dataclass(frozen=True)
class TableInfo:
    database: str
    schema: str | None
    name: str
    comment: str | None
    columns: list[tuple[str, str, str | None]]  # name, type, comment
    rows: int | None

    def describe(self) -> str:
        lines = [f"Table {self.name} in database {self.database}" + (f" (schema {self.schema})" if self.schema else "")]
        if self.comment:
            lines.append(f"Comment: {self.comment}")
        if self.rows is not None:
            lines.append(f"Rows: about {self.rows}")
        lines.append("Columns:")
        lines += [f"- {name} {kind}" + (f" -- {comment}" if comment else "") for name, kind, comment in self.columns]
        return "\n".join(lines)


def _row_estimate(connection: Any, inspector: Any, table: str, schema: str | None) -> int | None:
    dialect = connection.dialect.name
    try:
        if dialect == "postgresql":
            value = connection.exec_driver_sql(
                "SELECT reltuples::bigint FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE c.relname = %(t)s AND n.nspname = %(s)s",
                {"t": table, "s": schema or "public"},
            ).scalar()
            return int(value) if value is not None and value >= 0 else None
        if dialect == "sqlite":
            from sqlalchemy import func, select
            from sqlalchemy import table as table_of

            raw = connection.connection.driver_connection
            deadline = time.monotonic() + COUNT_ROWS_TIMEOUT
            raw.set_progress_handler(lambda: 1 if time.monotonic() > deadline else 0, 10_000)
            try:
                return int(connection.execute(select(func.count()).select_from(table_of(table))).scalar() or 0)
            finally:
                raw.set_progress_handler(None, 0)
    except Exception:
        return None
    return None


def read_metadata(database: str, url: str) -> list[TableInfo]:
    """Every table's metadata (at most MAX_TABLES). Raises DatabaseError (masked) when unreachable."""
    from sqlalchemy import inspect

    try:
        engine = engine_for(url)
        with engine.connect() as connection:
            inspector = inspect(connection)
            schema = None
            tables: list[TableInfo] = []
            for name in inspector.get_table_names(schema=schema)[:MAX_TABLES]:
                try:
                    comment = inspector.get_table_comment(name, schema=schema).get("text")
                except NotImplementedError:
                    comment = None
                columns = [
                    (c["name"], str(c["type"]), c.get("comment")) for c in inspector.get_columns(name, schema=schema)
                ]
                tables.append(
                    TableInfo(
                        database, schema, name, comment, columns, _row_estimate(connection, inspector, name, schema)
                    )
                )
            return tables
    except Exception as exc:
        raise DatabaseError(
            masked(f"{database}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}", url)[:1000]
        ) from None


def dispose_all() -> None:
    with _engines_lock:
        for engine in _engines.values():
            engine.dispose()
        _engines.clear()
