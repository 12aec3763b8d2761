"""sql_query's approval card in the real browser: the SQL and the database's name (never its URL),
and the result after approval."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from devtools.fake_llm import FakeLLM, text, tool_call
from devtools.jupyter_process import JupyterProcess
from devtools.knowledge_corpus import write_database
from tests.ui.conftest import SHOTS, ask_until_card


@pytest.fixture
def lab_config(tmp_path: Path) -> dict[str, Any]:
    write_database(tmp_path / "shop.sqlite")
    return {"Cellwright": {"databases": {"shop": f"sqlite:///{tmp_path / 'shop.sqlite'}"}}}


def test_the_sql_card_shows_the_statement_and_the_database(page: Any, lab: JupyterProcess, fake_llm: FakeLLM) -> None:
    from playwright.sync_api import expect

    sql = "SELECT count(*) AS n FROM customers"
    fake_llm.script(tool_call("sql_query", {"database": "shop", "sql": sql}, id="q1"), text("There are 50 customers."))
    card = ask_until_card(page, lab, "how many customers?")
    expect(card).to_have_attribute("data-tool-name", "sql_query")
    expect(card.get_by_test_id("cw-approval-code")).to_contain_text(sql)
    expect(card).to_contain_text("Database: shop")
    expect(card).to_contain_text("read-only query on the database 'shop'")
    expect(card).not_to_contain_text("sqlite:")
    page.screenshot(path=str(SHOTS / "15-sql-card.png"))
    card.get_by_role("button", name="Approve", exact=True).click()
    expect(page.get_by_text("There are 50 customers.")).to_be_visible(timeout=30_000)
    assert not page.errors, page.errors  # type: ignore[attr-defined]
