"""sql_query: one SQL statement on a configured database (c.Cellwright.databases), after the
user's approval; the card shows the SQL and the database's name, never its URL.

Read-only by default: a statement that is not SELECT/WITH (or hides a write: see
agent_core.sql.statements) is refused before the user is asked, unless c.Cellwright.sql_allow_writes
is on, and then the card says it writes. The statement is classified again when it runs (the user
may have edited it). Results are bounded (rows, cell width, time); a DataFrame in the kernel comes
from the run_cell code the result suggests, which the user approves like any cell."""

from __future__ import annotations

import asyncio
import json

from pydantic import Field

from agent_core.config.agent_settings import AgentSettings
from agent_core.sql.statements import MAX_SQL_CHARS, SqlRefused, Statement, classify
from agent_core.tools.arguments import ToolArgs
from agent_core.tools.base import ToolContext, ToolInputError, ToolOutcome, ToolSpec
from agent_core.tools.knowledge import knowledge_of

MAX_RESULT_CHARS = 20_000


class SqlQueryArgs(ToolArgs):
    database: str = Field(min_length=1, max_length=100, description="The configured database's name (not a URL).")
    sql: str = Field(
        min_length=1,
        max_length=MAX_SQL_CHARS,
        description="One SQL statement. Read-only (SELECT or WITH) unless the user allowed writes.",
    )


def _url(settings: AgentSettings, database: str) -> str:
    # agent_core.sql (SQLAlchemy) loads with the first query: %load_ext agent_core loads the tools without it
    from agent_core.sql.databases import DatabaseError, database_url

    try:
        return database_url(settings.databases, database)
    except DatabaseError as exc:
        raise ToolInputError(str(exc)) from None


def _statement(settings: AgentSettings, sql: str) -> Statement:
    try:
        statement = classify(sql)
    except SqlRefused as exc:
        raise ToolInputError(f"the SQL was refused: {exc}") from None
    if not statement.read_only and not settings.sql_allow_writes:
        why = ", ".join(statement.write_words) or statement.first_word or "not a SELECT"
        raise ToolInputError(
            f"the SQL was refused: only read-only statements (SELECT or WITH) may run, and this one writes or may "
            f"write ({why}). Writes are off (c.Cellwright.sql_allow_writes); ask the user if a change is really needed"
        )
    return statement


async def check_sql(args: SqlQueryArgs, ctx: ToolContext) -> None:
    _url(ctx.settings, args.database)
    _statement(ctx.settings, args.sql)


def describe_sql(args: SqlQueryArgs) -> str:
    return f"Run SQL on the database {args.database!r}"


async def sql_card(args: SqlQueryArgs, ctx: ToolContext) -> dict[str, object]:
    statement = _statement(ctx.settings, args.sql)
    if statement.read_only:
        return {"description": f"Run a read-only query on the database {args.database!r}"}
    words = ", ".join(statement.write_words) or statement.first_word
    return {"description": f"WRITE to the database {args.database!r} ({words}): this changes data and is not undone"}


def dataframe_code(database: str, sql: str) -> str:
    """The cell that loads the result into the kernel: by database name, so no URL lands in the notebook."""
    return (
        "from agent_core.sql.kernel import read_sql\n\n"
        f"df = read_sql({json.dumps(database)}, {json.dumps(sql)})\n"
        "df.head()"
    )


def format_result(args: SqlQueryArgs, result: object) -> str:
    from agent_core.sql.databases import MAX_ROWS, QueryResult

    assert isinstance(result, QueryResult)
    if not result.columns:
        affected = (
            f"{result.rowcount} rows affected" if result.rowcount is not None and result.rowcount >= 0 else "done"
        )
        return f"The statement ran on {args.database!r}: {affected} ({result.seconds:.2f} s)."
    lines = ["\t".join(result.columns), *("\t".join(row) for row in result.rows)]
    text = "\n".join(lines)
    if len(text) > MAX_RESULT_CHARS:
        text = text[:MAX_RESULT_CHARS] + "\n… (cut: too long)"
    more = f" (the first {MAX_ROWS}; more rows exist: aggregate or add LIMIT)" if result.truncated else ""
    hint = (
        "\n\nTo work with the full result in the notebook as a pandas DataFrame, propose this cell with run_cell "
        f"(the user approves it):\n```python\n{dataframe_code(args.database, args.sql)}\n```"
    )
    return (
        f"{len(result.rows)} rows{more} from {args.database!r} ({result.seconds:.2f} s), tab-separated:\n{text}{hint}"
    )


async def sql_query(args: SqlQueryArgs, ctx: ToolContext) -> ToolOutcome:
    from agent_core.sql.databases import STATEMENT_TIMEOUT, DatabaseError, run_statement

    url = _url(ctx.settings, args.database)
    statement = _statement(ctx.settings, args.sql)  # again: the approved call may be an edited one
    try:
        result = await asyncio.wait_for(
            asyncio.to_thread(run_statement, url, statement, STATEMENT_TIMEOUT), STATEMENT_TIMEOUT + 10
        )
    except asyncio.TimeoutError:
        raise ToolInputError(f"the database did not answer within {STATEMENT_TIMEOUT:g} s") from None
    except DatabaseError as exc:
        raise ToolInputError(f"the database refused the statement: {exc}") from None
    if not statement.read_only:
        await _forget_tables(ctx, args.database)
    text = format_result(args, result)
    return ToolOutcome("ok", text, summary=text.split("\n", 1)[0])


async def _forget_tables(ctx: ToolContext, database: str) -> None:
    """After a write the tables may have changed: their metadata is read again on the next search."""
    if not ctx.settings.knowledge_index:
        return
    try:
        await knowledge_of(ctx).refresh_databases(forget=database)
    except Exception:  # the index is a help: a failure to refresh it is not the statement's failure
        pass


SQL_QUERY = ToolSpec(
    name="sql_query",
    description=(
        "Run one SQL statement on a configured database, after the user approves it. Find the tables first with "
        "search_knowledge (table descriptions are indexed) instead of guessing names: it shows each table as "
        "`<database>/<table> (database table)`. Read-only (SELECT or WITH) "
        "unless the user allowed writes; results are capped at 200 rows, so aggregate in SQL."
    ),
    args=SqlQueryArgs,
    action=sql_query,
    touches="outside",
    rewind_leaves="a database query ran: what it changed in the database stays",
    outside_agents=True,
    needs_approval=True,
    describe=describe_sql,
    card=sql_card,
    check=check_sql,
)
