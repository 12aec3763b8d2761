"""What c.Cellwright.database_url names: a PostgreSQL server, an in-memory store or a SQLite file.
Read by the settings' public view and by the storage that opens it."""

from __future__ import annotations

from agent_core.contract.choices import CheckpointerKind

# c.Cellwright.database_timeout's default: seconds a PostgreSQL call waits for a connection before it fails.
DATABASE_TIMEOUT = 10.0


def is_postgres_url(url: str) -> bool:
    return url.startswith(("postgres://", "postgresql://"))


def checkpointer_kind(url: str) -> CheckpointerKind:
    if is_postgres_url(url):
        return "postgres"
    if url == "memory":
        return "memory"
    return "sqlite"
