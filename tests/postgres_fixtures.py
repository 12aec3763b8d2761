"""Running tests against PostgreSQL too (a pytest plugin, loaded by tests/conftest.py).

- `database_url`: "" (SQLite files, the default) or the URL of a fresh database on the session's
  throwaway cluster. Tests that take it, directly or through `cellwright_config`, run once per
  database when their module (or they) carry the `also_postgres` marker: the same test, twice.
- Without PostgreSQL the postgres variants are skipped, and the reason is printed at the end."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from devtools import postgres_cluster

DATABASES = ("sqlite", "postgres")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "also_postgres: run the test once more with every store in PostgreSQL")
    config.addinivalue_line("markers", "postgres: the test needs PostgreSQL (skipped, with the reason, without it)")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "database_url" in metafunc.fixturenames and metafunc.definition.get_closest_marker("also_postgres"):
        metafunc.parametrize("database_url", DATABASES, indirect=True)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    reason = postgres_cluster.unavailable()
    if reason and terminalreporter.stats.get("skipped"):
        terminalreporter.write_line(f"Postgres tests skipped: {reason}", yellow=True)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[postgres_cluster.PostgresCluster]:
    reason = postgres_cluster.unavailable()
    if reason:
        pytest.skip(reason)
    cluster = postgres_cluster.PostgresCluster().start()
    yield cluster
    cluster.stop()


def _fresh_database(cluster: postgres_cluster.PostgresCluster) -> Iterator[str]:
    url = cluster.new_database()
    yield url
    cluster.drop_database(url)


@pytest.fixture
def postgres_url(postgres_server: postgres_cluster.PostgresCluster) -> Iterator[str]:
    """A fresh database on the session's cluster, dropped after the test."""
    yield from _fresh_database(postgres_server)


@pytest.fixture(scope="module")
def module_postgres_url(postgres_server: postgres_cluster.PostgresCluster) -> Iterator[str]:
    """A fresh database for a whole module (servers shared by its tests), dropped after it."""
    yield from _fresh_database(postgres_server)


@pytest.fixture
def database_url(request: pytest.FixtureRequest) -> str:
    """The `database_url` setting of the test's servers: "" (SQLite) unless parametrized to postgres."""
    if getattr(request, "param", "sqlite") == "postgres":
        return str(request.getfixturevalue("postgres_url"))
    return ""


def database_env(url: str) -> dict[str, str]:
    """The environment a subprocess server needs for `url`."""
    return {"CELLWRIGHT_DATABASE_URL": url} if url else {}
