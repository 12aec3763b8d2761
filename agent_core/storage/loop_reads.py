"""The SQLite saver's reads of a thread's state, done at once on a connection of the event loop's own
thread (issue 41). LangGraph's AsyncSqliteSaver makes each statement, fetch and cursor a hop to its
connection's thread: reading the newest checkpoint took four (0.8 ms on an idle machine, more while
the loop is busy), its messages' history two more, before an approved cell could run. LangGraph's
own synchronous SqliteSaver, over the loop's connection, reads the same rows the same way.

A read takes the hop as before while a write of this process is under way (it then comes after that
write in the connection's order) or when SQLite would have to wait."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from langgraph.checkpoint.sqlite import SqliteSaver

from agent_core.storage.loop_connection import WOULD_WAIT, LoopConnection, read_at_once, writing
from agent_core.storage.mixed_savers import Saver, mixed

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.base import ChannelVersions, Checkpoint, CheckpointMetadata, DeltaChannelHistory


class LoopReads(BaseCheckpointSaver[Any]):
    loop_connection: LoopConnection | None = None  # open_store's; None: every read takes the hop

    def _read(self, read: Callable[[SqliteSaver], Any]) -> Any:
        """`read(reader)` at once with a synchronous saver on the loop's connection, or WOULD_WAIT."""
        return read_at_once(self.loop_connection, lambda conn: read(self._reader(conn)))

    def _reader(self, conn: sqlite3.Connection) -> SqliteSaver:
        reader: SqliteSaver | None = self.__dict__.get("_loop_reader")
        if reader is None:
            reader = self.__dict__["_loop_reader"] = SqliteSaver(conn, serde=self.serde)
            reader.is_setup = True  # the tables are the async saver's, made by its setup
            reader._has_task_path = getattr(self, "_has_task_path", True)
        reader.serde = self.serde  # the saver's, as it is now
        return reader

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        found = self._read(lambda reader: reader.get_tuple(config))
        return await super().aget_tuple(config) if found is WOULD_WAIT else found

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        found = self._read(lambda reader: reader.get_delta_channel_history(config=config, channels=channels))
        if found is WOULD_WAIT:
            return await super().aget_delta_channel_history(config=config, channels=channels)
        return found

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        with writing(self.loop_connection):
            return await super().aput(config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        with writing(self.loop_connection):
            await super().aput_writes(config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        with writing(self.loop_connection):
            await super().adelete_thread(thread_id)


def with_loop_reads(saver_class: type[Saver]) -> type[Saver]:
    """`saver_class` (LangGraph's AsyncSqliteSaver) with LoopReads mixed in."""
    return mixed(LoopReads, saver_class, "LoopReading")
