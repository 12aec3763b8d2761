"""A thread's newest checkpoint read twice in a row, read once (issue 41).

A run reads the thread's state to answer its request (is an approval pending, which policy holds),
and LangGraph reads the newest checkpoint again a few milliseconds later when the run's loop starts:
the whole checkpoint, its pending writes, and the history of its messages (a delta channel: every
checkpoint back to the last snapshot, each deserialized). `ReusedReads`, mixed into the SQLite and
PostgreSQL savers, keeps a copy of what such a read returned and hands copies of it to the reads of
the same graph in the next seconds (the state check, the loop's read, the panel's thread view):
- the newest checkpoint, if one light query says it is still the newest with the same writes
  (another server may have driven the thread in between: it holds the lease only while it runs);
  this process's own saves and deletions drop it;
- a checkpoint's history, as is: what led to a checkpoint never changes."""

from __future__ import annotations

import time
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Protocol

from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple, copy_checkpoint

from agent_core.storage.loop_connection import WOULD_WAIT, read_at_once
from agent_core.storage.mixed_savers import Graph, Saver, graph_of, mixed

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.base import ChannelVersions, Checkpoint, CheckpointMetadata, DeltaChannelHistory

KEPT_GRAPHS = 64  # a read is reused within moments or never: few are worth their messages' memory
KEPT_SECONDS = 5.0

Histories = tuple[str, str, str, tuple[str, ...]]  # (thread_id, checkpoint_ns, checkpoint_id, channels)


class NewestProbe(Protocol):
    """One query: the graph's newest checkpoint id (None: none) and how many writes `checkpoint_id` has."""

    async def __call__(self, saver: Any, graph: Graph, checkpoint_id: str) -> tuple[str | None, int]: ...


class ReusedReads(BaseCheckpointSaver[Any]):
    _probe: NewestProbe  # set by with_reused_reads, per dialect

    def _kept(self) -> OrderedDict[Graph, tuple[float, CheckpointTuple | None]]:
        return self._memo("_reused_reads")

    def _histories(self) -> OrderedDict[Histories, tuple[float, Mapping[str, DeltaChannelHistory]]]:
        return self._memo("_reused_histories")

    def _memo(self, name: str) -> OrderedDict[Any, Any]:
        memo: OrderedDict[Any, Any] | None = self.__dict__.get(name)
        if memo is None:  # made on first use: the saver's own __init__ stays LangGraph's
            memo = self.__dict__[name] = OrderedDict()
        return memo

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        configurable = config.get("configurable") or {}
        if configurable.get("checkpoint_id"):  # a given checkpoint, not the newest: read as asked
            return await super().aget_tuple(config)
        graph = graph_of(config)
        kept = self._kept()
        if (entry := _fresh(kept, graph)) is not None:
            found = entry[1]  # None: the graph had no checkpoint yet (a new thread's first run)
            checkpoint_id = found.checkpoint["id"] if found is not None else None
            writes = len(found.pending_writes or ()) if found is not None else 0
            if await self._probe(self, graph, checkpoint_id or "") == (checkpoint_id, writes):
                return _handed_on(found) if found is not None else None
            kept.pop(graph, None)
        found = await super().aget_tuple(config)
        # A copy of its own: the reader may change its dicts (LangGraph's loop bumps versions in place).
        _keep(kept, graph, _handed_on(found) if found is not None else None)
        return found

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        configurable = config.get("configurable") or {}
        checkpoint_id = str(configurable.get("checkpoint_id") or "")
        if not checkpoint_id:  # "the newest": that one may change
            return await super().aget_delta_channel_history(config=config, channels=channels)
        key = (*graph_of(config), checkpoint_id, tuple(channels))
        histories = self._histories()
        if (entry := _fresh(histories, key)) is None:
            found = await super().aget_delta_channel_history(config=config, channels=channels)
            entry = _keep(histories, key, {channel: _history_copy(history) for channel, history in found.items()})
        return {channel: _history_copy(history) for channel, history in entry[1].items()}

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        self._forget(config)
        return await super().aput(config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        self._forget(config)
        await super().aput_writes(config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        memos: tuple[OrderedDict[Any, Any], ...] = (self._kept(), self._histories())
        for memo in memos:
            for key in [key for key in memo if key[0] == thread_id]:
                del memo[key]
        await super().adelete_thread(thread_id)

    def _forget(self, config: RunnableConfig) -> None:
        self._kept().pop(graph_of(config), None)


def _keep(memo: OrderedDict[Any, tuple[float, Any]], key: object, value: object) -> tuple[float, Any]:
    entry = memo[key] = (time.monotonic(), value)
    while len(memo) > KEPT_GRAPHS:
        memo.popitem(last=False)
    return entry


def _fresh(memo: OrderedDict[Any, tuple[float, Any]], key: object) -> tuple[float, Any] | None:
    """The entry kept for `key` if read less than KEPT_SECONDS ago; an older one is dropped."""
    entry = memo.get(key)
    if entry is not None and time.monotonic() - entry[0] >= KEPT_SECONDS:
        del memo[key]
        return None
    return entry


def _history_copy(history: DeltaChannelHistory) -> DeltaChannelHistory:
    """Its own list of writes for the next reader (the values are the stored ones, never changed)."""
    copied: DeltaChannelHistory = {"writes": list(history["writes"])}
    if "seed" in history:
        copied["seed"] = history["seed"]
    return copied


def _handed_on(found: CheckpointTuple) -> CheckpointTuple:
    """A copy whose dicts its reader may change (LangGraph's loop bumps its versions in place)."""
    return CheckpointTuple(
        found.config,
        copy_checkpoint(found.checkpoint),
        found.metadata.copy(),
        found.parent_config,
        list(found.pending_writes) if found.pending_writes is not None else None,
    )


_SQLITE_NEWEST = (
    "SELECT (SELECT checkpoint_id FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ?"
    " ORDER BY checkpoint_id DESC LIMIT 1),"
    " (SELECT count(*) FROM writes WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?)"
)


async def sqlite_newest(saver: Any, graph: Graph, checkpoint_id: str) -> tuple[str | None, int]:
    """For LangGraph's AsyncSqliteSaver with LoopReads: at once on the loop's connection (what other
    processes have committed; this process's own saves drop a kept read themselves), else one hop to
    its thread."""
    args = (*graph, *graph, checkpoint_id)
    row: Any = read_at_once(saver.loop_connection, lambda conn: conn.execute(_SQLITE_NEWEST, args).fetchone())
    if row is WOULD_WAIT:
        async with saver.lock:
            row = next(iter(await saver.conn.execute_fetchall(_SQLITE_NEWEST, args)))
    newest, writes = row
    return newest, int(writes)


async def postgres_newest(saver: Any, graph: Graph, checkpoint_id: str) -> tuple[str | None, int]:
    """For LangGraph's AsyncPostgresSaver (rows as dicts): one round trip."""
    async with saver._cursor() as cur:
        await cur.execute(
            "SELECT (SELECT checkpoint_id FROM checkpoints WHERE thread_id = %s AND checkpoint_ns = %s"
            " ORDER BY checkpoint_id DESC LIMIT 1) AS newest,"
            " (SELECT count(*) FROM checkpoint_writes WHERE thread_id = %s AND checkpoint_ns = %s"
            " AND checkpoint_id = %s) AS writes",
            (*graph, *graph, checkpoint_id),
        )
        row = await cur.fetchone()
    return row["newest"], int(row["writes"])


def with_reused_reads(saver_class: type[Saver], probe: NewestProbe) -> type[Saver]:
    """`saver_class` with ReusedReads mixed in, asking `probe` whether a kept read still holds."""
    return mixed(ReusedReads, saver_class, "ReadReusing", _probe=staticmethod(probe))
