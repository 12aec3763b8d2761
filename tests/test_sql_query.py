"""sql_query and the query sub-agent through the real server (scripted LLM): a SQLite database of
30 tables whose metadata is retrieved by search_knowledge, SQL run after approval, writes refused
without the setting and shown on a card with it, and hostile statements, names and URLs."""

from __future__ import annotations

import json
import logging
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_core.sql.statements import SqlRefused, classify
from devtools.fake_llm import FakeLLM, Shown, reading, text, tool_call
from devtools.knowledge_corpus import write_database
from tests.conftest import Api, of_type

SECRET = "s3cr3t-pw-quokka"
REMOTE = f"postgresql://alice:{SECRET}@127.0.0.1:1/sales?sslpassword={SECRET}"


@pytest.fixture
def allow_writes() -> bool:
    return False


@pytest.fixture
def shop_db(tmp_path: Path) -> Path:
    path = tmp_path / "shop.sqlite"
    write_database(path)
    return path


@pytest.fixture
def cellwright_config(cellwright_config: dict[str, Any], shop_db: Path, allow_writes: bool) -> dict[str, Any]:
    return {
        **cellwright_config,
        "databases": {"shop": f"sqlite:///{shop_db}", "remote": REMOTE},
        "sql_allow_writes": allow_writes,
    }


@pytest.fixture
def server_log() -> Iterator[list[str]]:
    """Every log record of the process while the test runs (the server's, SQLAlchemy's, ours)."""
    lines: list[str] = []

    class Recorder(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(self.format(record))

    handler = Recorder(logging.DEBUG)
    root = logging.getLogger()
    root.addHandler(handler)
    yield lines
    root.removeHandler(handler)


A_NUMBER_LINE, REPORTED = r"^(\d+)$", r"There are (\d+)"


def found_database(seen: Shown, *tables: str) -> str:
    """The database search_knowledge named for these tables (all in one), as a model reads it there."""
    tables = tables or ("cancellations", "subscriptions")
    (database,) = {seen.find(rf"\] ([\w-]+)/{table} \(database table\)", tool="search_knowledge") for table in tables}
    return database


def tool_texts(fake_llm: FakeLLM) -> list[str]:
    return [m["content"] for m in fake_llm.requests[-1]["messages"] if m["role"] == "tool"]


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT 1; DROP TABLE x",
        "/* */ DELETE FROM customers",
        "SELECT 1 -- x\n; DELETE FROM t",
        "SELECT 1 /* /* */ ; DROP TABLE x */",
        "SELECT 'a",
        ";",
    ],
)
def test_hostile_statements_are_refused(sql: str) -> None:
    try:
        statement = classify(sql)
    except SqlRefused:
        return
    assert not statement.read_only, sql


@pytest.mark.parametrize(
    "sql",
    [
        "WITH gone AS (DELETE FROM t RETURNING *) SELECT * FROM gone",
        "SELECT * INTO copy FROM t",
        "PRAGMA writable_schema = 1",
        "select 1 for update",
        "ATTACH DATABASE '/tmp/x' AS x",
    ],
)
def test_writes_hidden_in_reads_are_writes(sql: str) -> None:
    assert not classify(sql).read_only


def test_reads_stay_reads() -> None:
    for sql in [
        "SELECT replace(name, 'drop', 'x') FROM t",
        'SELECT "delete" FROM t',
        "select ';' as s;",
        "WITH a AS (SELECT 1) SELECT * FROM a",
    ]:
        assert classify(sql).read_only, sql


async def test_the_agent_finds_the_tables_and_runs_sql_after_approval(
    api: Api, fake_llm: FakeLLM, shop_db: Path, server_log: list[str]
) -> None:
    question = "How many customers cancelled their subscriptions?"
    sql = "SELECT count(*) AS cancelled FROM cancellations JOIN subscriptions USING (subscription_id)"
    fake_llm.script(
        tool_call("search_knowledge", {"query": "customers cancelled subscriptions", "k": 3}, id="k1"),
        reading(lambda seen: tool_call("sql_query", {"database": found_database(seen), "sql": sql}, id="q1")),
        text("5 customers cancelled."),
    )
    thread = await api.new_thread()
    await api.run(thread, question)
    first = await api.until_finished(thread)
    told = tool_texts(fake_llm)[0]
    found = {line.split("] ", 1)[1].split(" —")[0] for line in told.splitlines() if line.startswith("[")}
    assert found == {f"shop/{t} (database table)" for t in ("cancellations", "subscriptions", "customers")}, told
    assert "cancelled_at TEXT" in told  # the metadata itself: columns and types
    approval = of_type(first, "approval_required")[0]
    assert approval["name"] == "sql_query" and approval["args"] == {"database": "shop", "sql": sql}
    assert "read-only query on the database 'shop'" in approval["description"]
    assert first[-1]["status"] == "awaiting_approval"

    await api.approve(thread, "q1")
    second = await api.until_finished(thread, first[-1]["seq"])
    result = of_type(second, "tool_result")[0]
    assert result["status"] == "ok"
    answer = tool_texts(fake_llm)[-1]
    assert (
        "cancelled\n5" in answer and 'read_sql("shop"' in answer
    )  # the DataFrame cell names the database, not its URL
    assert server_log  # the recorder sees the server's log
    everything = json.dumps([first, second]) + json.dumps(fake_llm.requests) + "\n".join(server_log)
    assert SECRET not in everything and str(shop_db) not in json.dumps(fake_llm.requests)


async def test_drop_table_is_refused_without_the_setting(api: Api, fake_llm: FakeLLM, shop_db: Path) -> None:
    fake_llm.script(
        tool_call("sql_query", {"database": "shop", "sql": "DROP TABLE customers"}, id="d1"),
        tool_call("sql_query", {"database": "shop", "sql": "SELECT 1; DROP TABLE customers"}, id="d2"),
        tool_call("sql_query", {"database": "shop", "sql": "/* harmless */ DELETE FROM customers"}, id="d3"),
        tool_call("sql_query", {"database": "prod", "sql": "SELECT 1"}, id="d4"),
        text("could not"),
    )
    thread = await api.new_thread()
    await api.run(thread, "clean up")
    events = await api.until_finished(thread)
    assert not of_type(events, "approval_required")
    assert [r["status"] for r in of_type(events, "tool_result")] == ["error"] * 4
    told = tool_texts(fake_llm)
    assert "Writes are off" in told[0] and "DROP" in told[0]
    assert "exactly one SQL statement" in told[1]
    assert "DELETE" in told[2]
    assert "no database named 'prod'" in told[3] and "'remote', 'shop'" in told[3]
    assert sqlite3.connect(shop_db).execute("SELECT count(*) FROM customers").fetchone() == (50,)


@pytest.mark.parametrize("allow_writes", [True])
async def test_drop_table_is_shown_on_a_card_when_writes_are_allowed(
    api: Api, fake_llm: FakeLLM, shop_db: Path
) -> None:
    fake_llm.script(
        tool_call("sql_query", {"database": "shop", "sql": "DROP TABLE customers"}, id="d1"), text("dropped")
    )
    thread = await api.new_thread()
    await api.run(thread, "drop the customers table")
    first = await api.until_finished(thread)
    approval = of_type(first, "approval_required")[0]
    assert (
        approval["args"]["sql"] == "DROP TABLE customers"
        and "WRITE to the database 'shop' (DROP)" in approval["description"]
    )
    assert sqlite3.connect(shop_db).execute("SELECT count(*) FROM customers").fetchone() == (50,)  # not before approval
    await api.approve(thread, "d1")
    await api.until_finished(thread, first[-1]["seq"])
    assert (
        sqlite3.connect(shop_db).execute("SELECT name FROM sqlite_master WHERE name = 'customers'").fetchone() is None
    )


async def test_a_credential_in_a_url_never_leaves(api: Api, fake_llm: FakeLLM, server_log: list[str]) -> None:
    fake_llm.script(tool_call("sql_query", {"database": "remote", "sql": "SELECT 1"}, id="r1"), text("failed"))
    thread = await api.new_thread()
    await api.run(thread, "query remote")
    first = await api.until_finished(thread)
    await api.approve(thread, "r1")
    second = await api.until_finished(thread, first[-1]["seq"])
    assert of_type(second, "tool_result")[0]["status"] == "error"
    _, config = await api.call("GET", "config", expect=200)
    assert config["databases"]["remote"].startswith("postgresql://***@127.0.0.1:1/sales")
    _, detail = await api.call("GET", f"threads/{thread}", expect=200)
    _, status = await api.call("GET", "knowledge/status", expect=200)
    everything = "\n".join(
        [json.dumps([first, second, config, detail, status]), json.dumps(fake_llm.requests), *server_log]
    )
    assert SECRET not in everything and "alice" not in json.dumps(fake_llm.requests)


async def test_the_planner_delegates_to_the_query_agent(api: Api, fake_llm: FakeLLM) -> None:
    count = "SELECT count(*) FROM customers"
    fake_llm.script(
        tool_call("task", {"agent": "query", "description": "How many customers are there in shop?"}, id="p1"),
        tool_call("search_knowledge", {"query": "customers"}, id="k1"),
        reading(
            lambda seen: tool_call("sql_query", {"database": found_database(seen, "customers"), "sql": count}, id="q1")
        ),
        reading(lambda seen: text(f"There are {seen.find(A_NUMBER_LINE, tool='sql_query', flags=re.M)} customers.")),
        reading(lambda seen: tool_call("final_answer", {"answer": f"{seen.find(REPORTED, tool='task')} customers."})),
    )
    thread = await api.new_thread()
    await api.run(thread, "How many customers?", mode="multi")
    first = await api.until_finished(thread)
    approval = of_type(first, "approval_required")[0]
    assert approval["agent"] == "query" and approval["args"]["database"] == "shop"
    query_tools = {t["function"]["name"] for t in fake_llm.requests[1]["tools"]}
    assert query_tools == {"search_knowledge", "sql_query", "run_cell"}
    await api.approve(thread, "q1")
    second = await api.until_finished(thread, first[-1]["seq"])
    assert of_type(second, "final")[0]["answer"] == "50 customers."
    assert any("50" in m["content"] for m in fake_llm.requests[-2]["messages"] if m["role"] == "tool")


def test_masking_removes_the_password_wherever_it_appears() -> None:
    from agent_core.sql.databases import masked

    text = masked(f"could not connect to {REMOTE}: password {SECRET!r} rejected for alice", REMOTE)
    assert SECRET not in text and "postgresql://***@127.0.0.1:1/sales" in text


async def test_the_suggested_cell_loads_a_dataframe_in_the_kernel(
    jp_serverapp: Any, jp_environ: Any, notebook_kernel: str, shop_db: Path
) -> None:
    """The kernel reads the database's URL from the Jupyter config, as the server does: the cell holds only its name."""
    import os

    from agent_core.tools.sql import dataframe_code
    from tests.test_tools_routes import kernel_env

    config = Path(os.environ["JUPYTER_CONFIG_DIR"]) / "jupyter_server_config.json"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(json.dumps({"Cellwright": {"databases": {"shop": f"sqlite:///{shop_db}"}}}))
    code = dataframe_code("shop", "SELECT region, count(*) AS n FROM customers GROUP BY region")
    assert str(shop_db) not in code
    env = kernel_env(jp_serverapp, notebook_kernel)
    cell = await env.run_cell("load", code + "\nprint(df.shape, list(df.columns))", lambda event: None)
    assert cell.status == "ok", cell.outputs
    assert "(1, 2) ['region', 'n']" in "".join(o.get("text", "") for o in cell.outputs)
    refused = await env.run_cell("drop", 'read_sql("shop", "DROP TABLE customers")', lambda event: None)
    assert refused.status == "error" and "read-only" in json.dumps(refused.outputs)


def test_a_runaway_query_is_stopped_and_results_are_bounded(shop_db: Path) -> None:
    from agent_core.sql.databases import MAX_CELL_CHARS, DatabaseError, run_statement

    url = f"sqlite:///{shop_db}"
    forever = classify("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c")
    with pytest.raises(DatabaseError, match="longer than 1 s"):
        run_statement(url, forever, timeout=1.0)
    wide = run_statement(
        url,
        classify(
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 5000) "
            "SELECT x, printf('%.*c', 10000, 'y') AS wide FROM c"
        ),
        max_rows=200,
    )
    assert len(wide.rows) == 200 and wide.truncated and len(wide.rows[0][1]) == MAX_CELL_CHARS
    # A read runs with the database itself in read-only mode too.
    with pytest.raises(DatabaseError):
        from dataclasses import replace

        run_statement(url, replace(classify("SELECT 1"), sql="DELETE FROM customers"))
    assert sqlite3.connect(shop_db).execute("SELECT count(*) FROM customers").fetchone() == (50,)
