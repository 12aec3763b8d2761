"""The configured databases' table metadata in the knowledge index (read once per database URL,
again after a write through sql_query), so the agent retrieves the tables a question needs with
search_knowledge instead of receiving every schema."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from agent_core.knowledge.chunking import Chunk
from agent_core.sql.databases import DatabaseError, read_metadata

PREFIX = "db:"


def table_path(database: str, table: str) -> str:
    return f"{PREFIX}{database}/{table}"


async def index_databases(base: Any, databases: Mapping[str, str], read: dict[str, str]) -> None:
    """Index the tables of each database in `databases` not yet in `read` (name -> URL read), and drop
    those of databases no longer configured. Problems go to the index's errors, masked."""
    indexed = await asyncio.to_thread(base.store.sources, "database")
    for stale in [name for name in read if databases.get(name) != read[name]]:
        del read[stale]
    gone = [path for path in indexed if path[len(PREFIX) :].split("/", 1)[0] not in databases]
    for name, url in databases.items():
        if read.get(name) == url:
            continue
        try:
            tables = await asyncio.to_thread(read_metadata, name, url)
        except DatabaseError as exc:
            base.state.error(f"{PREFIX}{name}", str(exc))
            continue
        documents = {table_path(name, t.name): [Chunk(f"{name}.{t.name}", t.describe(), "table")] for t in tables}
        gone += [path for path in indexed if path.startswith(f"{PREFIX}{name}/") and path not in documents]
        await base.index_documents("database", documents)
        read[name] = url
    if gone:
        await asyncio.to_thread(base.store.remove, gone)
