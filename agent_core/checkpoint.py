"""Opens the agent's persistence: a LangGraph checkpointer plus the tool ledger beside it.
SQLite in the Jupyter data directory by default; Postgres for shared deployments."""
from __future__ import annotations

from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .private_storage import private_file
from .tool_ledger import MemoryToolLedger, SqliteToolLedger, ToolLedger

CheckpointerKind = Literal["sqlite", "postgres", "memory"]


@dataclass
class AgentStore:
    saver: Any  # a langgraph BaseCheckpointSaver
    ledger: ToolLedger
    kind: CheckpointerKind
    _stack: AsyncExitStack = field(default_factory=AsyncExitStack)

    async def aclose(self) -> None:
        await self._stack.aclose()

    async def delete_thread(self, thread_id: str) -> None:
        await self.saver.adelete_thread(thread_id)
        forget = getattr(self.ledger, "forget_thread", None)
        if forget is not None:
            await forget(thread_id)


def checkpointer_kind(url: str) -> CheckpointerKind:
    if url.startswith(("postgres://", "postgresql://")):
        return "postgres"
    if url == "memory":
        return "memory"
    return "sqlite"


async def open_store(url: str, default_path: Path) -> AgentStore:
    """`url`: "" (SQLite at default_path), a file path or sqlite:///path, "memory", or postgresql://..."""
    kind = checkpointer_kind(url)
    if kind == "memory":
        from langgraph.checkpoint.memory import InMemorySaver

        return AgentStore(InMemorySaver(), MemoryToolLedger(), "memory")
    if kind == "postgres":
        return await _open_postgres(url)
    path = private_file(Path(url.removeprefix("sqlite:///")) if url else default_path)
    import aiosqlite
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    stack = AsyncExitStack()
    conn = await stack.enter_async_context(aiosqlite.connect(str(path)))
    await conn.execute("PRAGMA journal_mode=WAL")
    # WAL + NORMAL: no fsync per commit (one per checkpoint of the WAL); survives a crash of the process.
    await conn.execute("PRAGMA synchronous=NORMAL")
    saver = AsyncSqliteSaver(conn)
    await saver.setup()
    ledger = SqliteToolLedger(conn)
    await ledger.setup()
    return AgentStore(saver, ledger, "sqlite", stack)


async def _open_postgres(url: str) -> AgentStore:
    try:
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    except ImportError as exc:
        raise RuntimeError(
            "checkpointer_url is a Postgres URL but langgraph-checkpoint-postgres is not installed: "
            "pip install 'langgraph-checkpoint-postgres' 'psycopg[binary,pool]'"
        ) from exc
    stack = AsyncExitStack()
    saver = await stack.enter_async_context(AsyncPostgresSaver.from_conn_string(url))
    await saver.setup()
    # The ledger is per process here; a shared Postgres ledger is future work (see the issue notes).
    return AgentStore(saver, MemoryToolLedger(), "postgres", stack)
