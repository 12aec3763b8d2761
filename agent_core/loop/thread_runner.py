"""The one driver of a thread, for the server and the in-kernel `%agent` magic alike: start, resume
with a decision, stop, recover after a crash, and the lease that lets one process drive a thread at
a time. What may be asked of a thread is checked here and its segment prepared; segment_driver.py
drives it (events into the thread's log, approvals out of interrupts, a stop that leaves the thread
consistent). Who owns the task (RunManager, or the magic's worker) and shows refusals is the caller's."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from langgraph.types import Command

from agent_core.config.agent_settings import AgentSettings
from agent_core.llm.sdk_clients import close_clients
from agent_core.loop.approvals import ApprovalCards
from agent_core.loop.background_steps import BackgroundSteps
from agent_core.loop.graph import build_graph
from agent_core.loop.refusals import (
    ApprovalPending,
    BadDecision,
    BadRule,
    NotPending,
    ThreadBusy,
    ThreadNotFound,
)
from agent_core.loop.run_tools import McpSource, RunTools
from agent_core.loop.segment_driver import EventSink, SegmentDriver, graph_config
from agent_core.loop.segments import Appended, PreparedRun, Segment, SegmentInput, browser_cells
from agent_core.loop.state import outside_call_input
from agent_core.loop.thread_policy import run_settings
from agent_core.loop.thread_view import autonomy_of, driver_of, mode_of, pending_approval, stuck, title_from
from agent_core.storage.checkpoint import AgentStore, open_store
from agent_core.storage.thread_store import ThreadRecord, ThreadStore
from agent_core.tools import TOOLS
from agent_core.undo.book import UndoBook
from agent_core.undo.rules import save_rule

if TYPE_CHECKING:  # the contract's route models and the tool registry load on a run's first use
    from langchain_core.runnables import RunnableConfig
    from langgraph.types import StateSnapshot

    from agent_core.contract.bodies import Decision, StartRun
    from agent_core.contract.outside_tools import OutsideCall
    from agent_core.loop.graph import AgentGraph
    from agent_core.tools import ToolEnvironment


def _approval_cards() -> ApprovalCards:
    return ApprovalCards()


class _RecordUpdates(TypedDict, total=False):
    """The ThreadRecord fields a new run may change (ThreadStore.update and dataclasses.replace)."""

    notebook_path: str
    kernel_id: str
    title: str


EnvironmentFor = Callable[[ThreadRecord], "ToolEnvironment"]  # where a thread's tools act (its notebook's kernel)


@dataclass
class ThreadRunner:
    """The one driver of a thread: `start` and `resume` check what was asked and return the segment."""

    graph: AgentGraph
    store: AgentStore
    threads: ThreadStore
    mcp: McpSource | None = None
    # What this process remembers of its threads' runs, handed to each run's tools (RunContext):
    # the steps an undo may restore, with the notes it leaves for the next run ...
    undo: UndoBook = field(default_factory=UndoBook)
    # ... and the approval cards already made (a resumed node asks for its card again).
    approvals: ApprovalCards = field(default_factory=lambda: _approval_cards())
    # issue 38: the server's follower of cells that outlive their run (None: the magic's cells never do)
    background: BackgroundSteps | None = None
    _tools: RunTools = field(init=False, repr=False)  # each thread's outside tools, kept for its resumed segments
    _driver: SegmentDriver = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._tools = RunTools(self.mcp)
        self._driver = SegmentDriver(self.graph, self.store, self.threads, self.undo, self.approvals, self.background)

    @classmethod
    async def open(
        cls,
        threads: ThreadStore,
        checkpointer_url: str,
        default_path: Path,
        mcp: McpSource | None = None,
        undo: UndoBook | None = None,
        background: BackgroundSteps | None = None,
    ) -> ThreadRunner:
        """`undo`: a book that outlives this runner (the magic's, one per kernel), else one of its own."""
        store = await open_store(checkpointer_url, default_path, threads.database)
        book = undo if undo is not None else UndoBook()
        return cls(build_graph(store.saver), store, threads, mcp, undo=book, background=background)

    async def aclose(self) -> None:
        await self.store.aclose()
        await close_clients()

    @staticmethod
    def config(thread_id: str) -> RunnableConfig:
        return graph_config(thread_id)

    async def snapshot(self, thread_id: str) -> StateSnapshot:
        return await self.graph.aget_state(self.config(thread_id), subgraphs=True)

    # -- what can be asked of a thread

    async def start(
        self,
        thread_id: str,
        request: StartRun,
        environment: EnvironmentFor,
        settings: AgentSettings,
        on_event: EventSink | None = None,
        on_released: Callable[[], None] | None = None,
    ) -> PreparedRun:
        """A new run of `request` (notebook_path checked): refused while another process drives the
        thread or an approval is pending, or for a data_policy wider than the server's."""
        record, snapshot = await self._ready(thread_id, environment, settings)
        if pending_approval(snapshot):
            raise ApprovalPending(
                "This thread is waiting for your approval of a tool call: approve or reject it (or press Stop) first."
            )
        updates: _RecordUpdates = {}
        if request.notebook_path is not None:
            updates["notebook_path"] = request.notebook_path
        if request.kernel_id is not None:
            updates["kernel_id"] = request.kernel_id
        if record.title in ("", "New thread"):
            updates["title"] = title_from(request.message)
        if updates:
            await self.threads.update(thread_id, **updates)
            record = dataclasses.replace(record, **updates)  # what was just written: no second read
        segment = Segment(request.mode, request.autonomy, request.message, browser_cells(request.notebook_cells))
        prior = snapshot.values or {}
        settings = run_settings(settings, request.data_policy, prior.get("data_policy"))  # or PolicyWider
        env = environment(record)
        run_id = uuid.uuid4().hex

        async def first_input() -> SegmentInput:
            # Resolved in the segment's own time, while it takes the lease: a caller answering HTTP does
            # not wait for the kernel, and the first token waits for the longer of the two, not both.
            graph_input, mentions, extra = await self._tools.first_segment(
                thread_id, request, env, settings, prior, self.undo
            )
            return SegmentInput(graph_input, extra, mentions)

        # Begun now, not when the segment's task first runs: the kernel answers while the POST's answer
        # is written and the lease is taken (issue 41). The segment cancels it if the thread is taken.
        preparing = asyncio.ensure_future(first_input())

        async def drive() -> str:
            return await self._driver.drive(record, run_id, preparing, segment, env, settings, on_event, on_released)

        return PreparedRun(thread_id, run_id, drive)

    async def resume(
        self,
        thread_id: str,
        call_id: str,
        decision: Decision,
        environment: EnvironmentFor,
        settings: AgentSettings,
        on_event: EventSink | None = None,
        on_released: Callable[[], None] | None = None,
    ) -> PreparedRun:
        """The segment that applies `decision` to the pending call `call_id`: refused if that call is
        not the one pending, if edited arguments do not fit, or if a rule to save is refused (the
        call then stays pending)."""
        if decision.decision == "edit" and decision.args is None:
            raise BadDecision('An "edit" decision needs "args": the edited arguments as an object.')
        record, snapshot = await self._ready(thread_id, environment, settings, "decide on its pending call")
        pending = pending_approval(snapshot)
        if pending is None or pending["id"] != call_id:
            now = f"the pending one is {pending['id']!r}" if pending else "nothing is pending"
            raise NotPending(f"Tool call {call_id[:200]!r} is not awaiting approval ({now}). Reload the thread.")
        if decision.decision == "edit":
            spec = TOOLS.get(str(pending["name"]))  # an MCP or notebook tool's arguments are checked when it runs
            problem = spec.check_args(decision.args) if spec is not None else None
            if problem:
                raise BadDecision(f"The edited arguments do not fit: {problem}.")
        if decision.kernel_id and decision.kernel_id != record.kernel_id:
            await self.threads.update(thread_id, kernel_id=decision.kernel_id)
            record = dataclasses.replace(record, kernel_id=decision.kernel_id)
        env = environment(record)
        if decision.decision == "reject" and decision.save_rule and decision.save_rule.strip():
            try:
                save_rule(env.root_dir, decision.save_rule)
            except ValueError as exc:
                raise BadRule(f"The rule was not saved, and the call is still pending: {exc}") from None
        resume: Command[str] = Command(
            resume={
                pending["interrupt_id"]: decision.model_dump(include={"decision", "args", "reason", "rerun_dependents"})
            }
        )
        segment = Segment(
            mode_of(snapshot), autonomy_of(snapshot), "", browser_cells(decision.notebook_cells), driver_of(snapshot)
        )
        prior = snapshot.values or {}
        run_id = uuid.uuid4().hex

        async def resumed() -> SegmentInput:
            extra, _ = await self._tools.of(thread_id, prior.get("disabled_mcp_servers") or [], env, settings, False)
            return SegmentInput(resume, extra)

        async def drive() -> str:
            return await self._driver.drive(record, run_id, resumed(), segment, env, settings, on_event, on_released)

        return PreparedRun(thread_id, run_id, drive)

    async def outside_call(
        self,
        thread_id: str,
        call: OutsideCall,
        environment: EnvironmentFor,
        settings: AgentSettings,
        on_released: Callable[[], None] | None = None,
    ) -> PreparedRun:
        """A run that is one tool call of an outside agent (agent_core.loop.state.outside_call_input):
        refused, as a new run is, while another process drives the thread or an approval is pending."""
        record, snapshot = await self._ready(thread_id, environment, settings)
        pending = pending_approval(snapshot)
        if pending is not None:
            raise ApprovalPending(
                f"This thread is waiting for the user's approval of {pending['name']} ({pending['id']}): "
                "the next call waits until the user decides."
            )
        driver = call.driver or f"{call.client} via MCP"
        # One save at its end: the call's client waits on every step's save otherwise (issue 41: an MCP
        # read_notebook paid ~4 checkpoint writes and their round trips for one tool step).
        appended = Appended((snapshot.values or {}).get("data_policy"))
        segment = Segment(
            mode_of(snapshot),
            call.autonomy,
            f"{driver}: {call.name}",
            driver=driver,
            durability="exit",
            appended=appended,
        )
        graph_input = outside_call_input(call.tool_call_id, call.name, call.arguments, call.autonomy, driver)
        env = environment(record)
        run_id = uuid.uuid4().hex

        async def drive() -> str:
            given = SegmentInput(graph_input, {})
            return await self._driver.drive(record, run_id, given, segment, env, settings, None, on_released)

        return PreparedRun(thread_id, run_id, drive, appended)

    async def after_background(
        self,
        thread_id: str,
        environment: EnvironmentFor,
        settings: AgentSettings,
        message: str = "",
        on_released: Callable[[], None] | None = None,
    ) -> PreparedRun:
        """The segment that drives a waiting_for_cell run on once its cell ended or was let go (issue
        38): the tools node, run again, takes the step's outcome from the background host. `message`:
        what the user wrote meanwhile (it reaches the model with the outcome; run_started shows it)."""
        record = await self._record(thread_id)
        await self.ensure_not_leased(thread_id, "resume it")
        snapshot = await self.snapshot(thread_id)
        return self._driven_on(record, snapshot, environment(record), settings, message, on_released)

    async def ensure_not_leased(self, thread_id: str, action: str = "start another run") -> None:
        holder = await self.threads.leased_elsewhere(thread_id)
        if holder:
            raise ThreadBusy(holder, action)

    async def _ready(
        self, thread_id: str, environment: EnvironmentFor, settings: AgentSettings, action: str = "start another run"
    ) -> tuple[ThreadRecord, StateSnapshot]:
        """The thread's record and state (recovered), refused while another process drives it: the three
        reads at once, each a hop to its database before a run starts or an approval resumes (issue 41)."""
        record, _, snapshot = await asyncio.gather(
            self._record(thread_id), self.ensure_not_leased(thread_id, action), self.snapshot(thread_id)
        )
        return record, await self._recovered_from(record, snapshot, environment, settings)

    async def recovered(
        self, record: ThreadRecord, environment: EnvironmentFor, settings: AgentSettings
    ) -> StateSnapshot:
        """The thread's snapshot, after driving it on (input None) if a crash left it between a saved
        step and its approval request, so that its approval shows again (read once: a hot path)."""
        return await self._recovered_from(record, await self.snapshot(record.thread_id), environment, settings)

    async def _recovered_from(
        self, record: ThreadRecord, snapshot: StateSnapshot, environment: EnvironmentFor, settings: AgentSettings
    ) -> StateSnapshot:
        if stuck(snapshot):
            await self._driven_on(record, snapshot, environment(record), settings).drive()
            snapshot = await self.snapshot(record.thread_id)
        return snapshot

    def _driven_on(
        self,
        record: ThreadRecord,
        snapshot: StateSnapshot,
        env: ToolEnvironment,
        settings: AgentSettings,
        message: str = "",
        on_released: Callable[[], None] | None = None,
    ) -> PreparedRun:
        """A segment that drives the thread on from its saved state (graph input None), as it was."""
        segment = Segment(mode_of(snapshot), autonomy_of(snapshot), message, driver=driver_of(snapshot))
        disabled = (snapshot.values or {}).get("disabled_mcp_servers") or []
        run_id = uuid.uuid4().hex

        async def driven_on() -> SegmentInput:
            extra, _ = await self._tools.of(record.thread_id, disabled, env, settings, fresh=False)
            return SegmentInput(None, extra)

        async def drive() -> str:
            return await self._driver.drive(record, run_id, driven_on(), segment, env, settings, None, on_released)

        return PreparedRun(record.thread_id, run_id, drive)

    async def _record(self, thread_id: str) -> ThreadRecord:
        record = await self.threads.get(thread_id)
        if record is None:
            raise ThreadNotFound(
                f"There is no thread {thread_id[:200]!r}. List threads with GET cellwright/api/threads."
            )
        return record

    async def stop_pending(self, thread_id: str, run_id: str) -> bool:
        """Stop a thread that waits for approval: the call is answered as stopped and never runs."""
        return await self._driver.stop_pending(thread_id, run_id)

    async def delete_thread(self, thread_id: str) -> None:  # its record of model requests goes with it
        await self.store.delete_thread(thread_id)
        await self.threads.delete(thread_id)
