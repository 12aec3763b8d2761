"""One segment of a run, driven: the thread's lease taken and held while it goes, its graph streamed
until it ends, pauses for approval, fails or is stopped, every event in the thread's log, and the
thread released before `run_finished` is written. ThreadRunner decides what may be asked of a thread
and prepares the segment; this drives it, and answers a stopped call so the thread stays consistent."""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agent_core.config.agent_settings import AgentSettings
from agent_core.contract import EventDict, make_event
from agent_core.contract.choices import RunStatus
from agent_core.contract.event_fields import RunFinishedFields, RunStartedFields
from agent_core.json_types import JsonObject
from agent_core.llm.failures import LLMError
from agent_core.loop.agent_cells import notebook_agent_cells
from agent_core.loop.agents import agent_for_mode
from agent_core.loop.approvals import ApprovalCards
from agent_core.loop.background_steps import BackgroundSteps
from agent_core.loop.event_pump import EventPump
from agent_core.loop.refusals import ThreadBusy
from agent_core.loop.run_context import run_context
from agent_core.loop.segments import Segment, SegmentInput, approval_event
from agent_core.loop.state import appended
from agent_core.loop.usage import public
from agent_core.messages import Message
from agent_core.storage.checkpoint import AgentStore
from agent_core.storage.thread_store import ThreadRecord, ThreadStore
from agent_core.storage.tool_ledger import INTERRUPTED, STOPPED
from agent_core.tools.background import IN_BACKGROUND, StepInBackground
from agent_core.undo.book import UndoBook

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig

    from agent_core.contract.notebook_cells import AgentCell
    from agent_core.loop.graph import AgentGraph
    from agent_core.loop.run_context import RunContext
    from agent_core.tools import ToolEnvironment
    from agent_core.tools.external import ExternalToolSpec

log = logging.getLogger(__name__)

EventSink = Callable[[JsonObject], None]  # sees each event as the log stored it (seq and all)


def graph_config(thread_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id}}


@dataclass
class SegmentDriver:
    """Drives the segments of this process's runs, with what it remembers of them (handed to each
    run's tools: the undo book, the approval cards made, the follower of cells in the background)."""

    graph: AgentGraph
    store: AgentStore
    threads: ThreadStore
    undo: UndoBook
    approvals: ApprovalCards
    background: BackgroundSteps | None = None

    async def drive(
        self,
        record: ThreadRecord,
        run_id: str,
        prepare: Awaitable[SegmentInput] | SegmentInput,
        segment: Segment,
        env: ToolEnvironment,
        settings: AgentSettings,
        on_event: EventSink | None = None,
        on_released: Callable[[], None] | None = None,
    ) -> str:
        """One segment of a run: until the graph ends, pauses for approval, fails or is cancelled.
        Returns the run_finished status; every event is in the thread's log when it returns. The
        thread is released (lease, then `on_released`) before `run_finished` is written: a client
        that acts on that event finds the thread free. `prepare` (its tools and input) is gathered
        while the lease is taken; it is cancelled when the thread cannot be taken."""
        thread_id = record.thread_id
        preparing: asyncio.Future[SegmentInput]
        if isinstance(prepare, SegmentInput):
            preparing = asyncio.get_running_loop().create_future()
            preparing.set_result(prepare)
        else:
            preparing = asyncio.ensure_future(prepare)
        try:
            if not await self.threads.begin_run(thread_id, status="running", last_run_id=run_id):
                raise ThreadBusy(await self.threads.leased_elsewhere(thread_id) or "another process")
        except BaseException:
            preparing.cancel()
            await asyncio.gather(preparing, return_exceptions=True)  # it only read: nothing to undo
            raise
        renewing = self.threads.keep_lease(thread_id)
        emit = EventPump(self.threads.events, thread_id, run_id, agent_for_mode(segment.mode).name, on_event)
        status: RunStatus = "completed"
        run_usage: JsonObject | None = None
        try:
            given = await preparing
            context = self._run_context(record, segment, env, settings, given.extra, emit)
            started: RunStartedFields = {"mode": segment.mode, "autonomy": segment.autonomy, "message": segment.message}
            if given.mentions:
                started["mentions"] = given.mentions
            emit(make_event("run_started", **started))
            async for chunk in self.graph.astream(
                given.graph_input,
                graph_config(thread_id),
                context=context,
                stream_mode="updates",
                durability=segment.durability,
            ):
                for interrupt in chunk.get("__interrupt__", ()):
                    emit(approval_event(interrupt.value))
                    status = "awaiting_approval"
                for update in chunk.values():
                    if isinstance(update, dict) and update.get("run_usage"):
                        run_usage = update["run_usage"]
        except StepInBackground:  # the cell goes on; the lease goes, and no model call is made until it ends
            status = "waiting_for_cell"
        except asyncio.CancelledError:
            status = "cancelled"
            await self.close_open_call(thread_id, emit)
        except LLMError as exc:
            status = "failed"
            emit(make_event("error", kind=exc.kind, message=exc.message, retryable=exc.retryable))
        except Exception as exc:  # a bug: keep the thread usable and say so
            log.exception("run %s of thread %s failed", run_id, thread_id)
            status = "failed"
            emit(
                make_event(
                    "error", kind="internal", message=f"Cellwright failed: {type(exc).__name__}: {exc}", retryable=False
                )
            )
        finally:
            await self._finish(thread_id, emit, status, run_usage, renewing, on_released)
        if status == "waiting_for_cell" and self.background is not None:
            self.background.run_ended(thread_id, run_id)  # the cell's events go on into the log by a sink of its own
        return status

    async def _finish(
        self,
        thread_id: str,
        emit: EventPump,
        status: RunStatus,
        run_usage: JsonObject | None,
        renewing: asyncio.Task[None],
        on_released: Callable[[], None] | None,
    ) -> None:
        exists = False
        try:
            exists = await self.threads.get(thread_id) is not None  # deleted meanwhile: nothing more to write
            if exists:
                await emit.flush()
                await self.threads.update(thread_id, status=status)
        finally:  # a failed save must not leave the thread leased to nobody for 30 s
            renewing.cancel()
            await self.threads.release_lease(thread_id)
            if on_released is not None:
                on_released()
        if exists:
            finished: RunFinishedFields = {"status": status}
            if run_usage and run_usage["prompt_tokens"]:
                finished["usage"] = public(run_usage)
            emit(make_event("run_finished", **finished))
            await emit.drain()

    def _run_context(
        self,
        record: ThreadRecord,
        segment: Segment,
        env: ToolEnvironment,
        settings: AgentSettings,
        extra: dict[str, ExternalToolSpec],
        emit: EventPump,
    ) -> RunContext:
        async def recorded_cells(path: str) -> list[AgentCell]:
            await emit.flush()  # this run's cells so far are in the record, not only on their way to it
            return await notebook_agent_cells(self.threads, path)

        return run_context(
            record.thread_id,
            settings,
            env,
            self.store.ledger,
            emit,
            record.notebook_path,
            segment.mode,
            segment.notebook_cells,
            extra,
            undo=self.undo,
            approvals=self.approvals,
            driver=segment.driver,
            requests=self.threads.requests,
            agent_cells=recorded_cells,
            background=self.background,
            until_saved=functools.partial(self.store.saver.until_saved, record.thread_id)
            if segment.durability == "async"
            else None,
            call_answered=segment.appended.add if segment.appended is not None else None,
        )

    async def stop_pending(self, thread_id: str, run_id: str) -> bool:
        """Stop a thread that waits for approval: the call is answered as stopped and never runs."""
        emit = EventPump(self.threads.events, thread_id, run_id)
        closed = await self.close_open_call(thread_id, emit)
        if closed:
            emit(make_event("run_finished", status="cancelled"))
            await self.threads.update(thread_id, status="cancelled")
        await emit.drain()
        return closed

    async def close_open_call(self, thread_id: str, emit: Callable[[EventDict], None]) -> bool:
        """After a stop, answer the call the tools step was on (pending approval, or cut off while
        running) with its recorded outcome, so the thread is consistent and the call never runs again."""
        snapshot = await self.graph.aget_state(graph_config(thread_id))
        if snapshot.next != ("tools",):
            return False
        call = snapshot.values["messages"][-1]["tool_calls"][0]
        ledger = self.store.ledger
        outcome = await ledger.lookup(thread_id, call["id"])
        if outcome is None or outcome.content in (INTERRUPTED.content, IN_BACKGROUND.content):
            outcome = STOPPED
            await ledger.finished(thread_id, call["id"], outcome)
        tool_message: Message = {"role": "tool", "tool_call_id": call["id"], "content": outcome.content}
        await self.graph.aupdate_state(
            graph_config(thread_id), {"messages": appended(tool_message), "done": True}, as_node="tools"
        )
        name = call["function"]["name"]
        stopped = outcome.content == STOPPED.content
        emit(outcome.result_event(call["id"], name, stopped=stopped))
        return True
