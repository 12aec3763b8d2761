"""`read_sql(database, sql)` for the notebook: the cell sql_query suggests loads a result as a pandas
DataFrame by the database's name, so its URL (and credentials) never appear in the notebook. The
URL comes from the same Jupyter config files the server reads (agent_core.config.configurable), and the
statement is held to the same rules (one statement, read-only unless writes are allowed)."""

from __future__ import annotations

from typing import Any

from agent_core.config.kernel_config import load_for_kernel
from agent_core.sql.databases import database_url, engine_for, masked
from agent_core.sql.statements import classify


def read_sql(database: str, sql: str, max_rows: int | None = None) -> Any:
    # pandas and SQLAlchemy load when read_sql runs, not when a kernel imports this module
    import pandas as pd
    from sqlalchemy import text

    settings, _notes = load_for_kernel()
    url = database_url(settings.databases, database)
    statement = classify(sql)
    if not statement.read_only:
        raise ValueError("read_sql runs read-only statements (SELECT or WITH) only")
    try:
        with engine_for(url).connect() as connection:
            frame = pd.read_sql_query(text(statement.sql), connection)
    except Exception as exc:
        raise RuntimeError(masked(f"{type(exc).__name__}: {exc}", url)[:2000]) from None
    return frame if max_rows is None else frame.head(max_rows)
