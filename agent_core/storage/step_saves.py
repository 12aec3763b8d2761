"""A checkpointer that can say when a step's checkpoint is saved, so that a run can save in the
background (LangGraph's durability "async": the model is asked while the step before it is being
saved, issue 41) and still never act on a tool call that is not saved yet: the tools node waits
for the checkpoint it runs from (`until_saved`) before it runs anything."""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from langgraph.checkpoint.base import BaseCheckpointSaver

from agent_core.storage.mixed_savers import Graph, Saver, graph_of, mixed

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.base import ChannelVersions, Checkpoint, CheckpointMetadata, CheckpointTuple

KEPT_GRAPHS = 1024  # graphs (a thread's, a sub-agent's in it) whose newest saved checkpoint is remembered
SAVE_WAIT_SECONDS = 60.0  # a save slower than this is a database in trouble: the run fails and says so


class SaveFailed(RuntimeError):
    """The checkpoint a tool call was to run from was not saved: the call did not run."""


class _Saved:
    """Per graph: the newest checkpoint id known saved. LangGraph's ids are time-ordered (uuid6), and
    a graph's checkpoints are saved in order (each save waits for the one before it), so "saved up to
    id X" is one string per graph."""

    def __init__(self) -> None:
        self.newest: OrderedDict[Graph, str] = OrderedDict()
        self.failed: dict[Graph, BaseException] = {}
        self.changed = asyncio.Condition()

    def has(self, graph: Graph, checkpoint_id: str) -> bool:
        if graph in self.failed:
            raise SaveFailed(f"the run's last step was not saved: {self.failed[graph]}")
        newest = self.newest.get(graph)
        return newest is not None and newest >= checkpoint_id

    def knows(self, graph: Graph) -> bool:
        return graph in self.newest

    def note(self, graph: Graph, checkpoint_id: str) -> None:
        if self.newest.get(graph, "") < checkpoint_id:
            self.newest[graph] = checkpoint_id
        self.newest.move_to_end(graph)
        self.failed.pop(graph, None)
        while len(self.newest) > KEPT_GRAPHS:
            self.newest.popitem(last=False)


class StepSaves(BaseCheckpointSaver[Any]):
    """Mixed into a LangGraph saver (`with_step_saves`): notes each checkpoint it saved or read, and
    lets a node wait for the one it runs from."""

    def _saved(self) -> _Saved:
        saved: _Saved | None = self.__dict__.get("_step_saves")
        if saved is None:  # made on first use: the saver's own __init__ stays LangGraph's
            saved = self.__dict__["_step_saves"] = _Saved()
        return saved

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        graph = graph_of(config)
        try:
            stored = await super().aput(config, checkpoint, metadata, new_versions)
        except Exception as exc:  # not a cancellation: the write may still land, and its run is ending
            await self._settle(graph, None, exc)
            raise
        await self._settle(graph, checkpoint["id"], None)
        return stored

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        found = await super().aget_tuple(config)
        if found is not None:  # read back from the database: saved
            await self._settle(graph_of(found.config), found.checkpoint["id"], None)
        return found

    async def until_saved(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> None:
        """Return once checkpoint `checkpoint_id` of the thread's graph `checkpoint_ns` ("": its own, else
        a sub-agent's) is saved; SaveFailed if its save failed or took longer than SAVE_WAIT_SECONDS."""
        saved, graph = self._saved(), (thread_id, checkpoint_ns)
        if saved.has(graph, checkpoint_id):
            return
        if not saved.knows(graph):  # forgotten (a busy server): the database says
            config: RunnableConfig = {
                "configurable": {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns, "checkpoint_id": checkpoint_id}
            }
            if await self.aget_tuple(config) is not None:
                return
        try:
            async with saved.changed:
                await asyncio.wait_for(
                    saved.changed.wait_for(lambda: saved.has(graph, checkpoint_id)), SAVE_WAIT_SECONDS
                )
        except TimeoutError:
            raise SaveFailed(f"the run's last step was not saved within {SAVE_WAIT_SECONDS:g} s") from None

    async def _settle(self, graph: Graph, checkpoint_id: str | None, failure: BaseException | None) -> None:
        saved = self._saved()
        async with saved.changed:
            if checkpoint_id is not None:
                saved.note(graph, checkpoint_id)
            elif failure is not None:
                saved.failed[graph] = failure
            saved.changed.notify_all()


def with_step_saves(saver_class: type[Saver]) -> type[Saver]:
    """`saver_class` with StepSaves mixed in (one class per saver class)."""
    return mixed(StepSaves, saver_class, "StepSaving")
