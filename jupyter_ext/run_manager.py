"""Runs are asyncio tasks owned by this manager, not by an HTTP request: a closed tab does not stop
the agent. What a run does to its thread is agent_core's ThreadRunner; this manager keeps the task
map and one lock per thread (two resumes of one approval would run the tool twice); how readers
follow a thread's events is thread_following.py's; refusals are agent_core's errors, which the
handlers answer."""

from __future__ import annotations

import asyncio
from collections import OrderedDict, defaultdict
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from traitlets import Float
from traitlets.config import LoggingConfigurable

from agent_core.config.agent_settings import AgentSettings
from agent_core.json_types import JsonObject
from agent_core.storage.database import DatabaseUnavailable
from agent_core.storage.thread_store import ThreadRecord, ThreadStore

from .background_runs import BackgroundRuns
from .errors import BadRequest, Conflict, NotFound
from .heap_settling import settle_soon
from .thread_following import ThreadFollowing

if TYPE_CHECKING:  # the tool registry and the contract's models load on first use, not at server start
    from agent_core.contract import EventDict
    from agent_core.contract.answers import ThreadDetail, ThreadList
    from agent_core.contract.bodies import Decision, StartRun
    from agent_core.contract.outside_tools import OutsideCall
    from agent_core.contract.review import UndoResult
    from agent_core.loop.graph import AgentGraph
    from agent_core.loop.segments import Appended, PreparedRun
    from agent_core.loop.thread_runner import ThreadRunner
    from agent_core.mcp.manager import McpManager
    from agent_core.tools import ToolEnvironment

KEPT_ANSWERS = 256  # outside calls whose segments' messages are kept until their answer is read
EnvFactory = Callable[[str, "str | None", AgentSettings], "ToolEnvironment"]


class RunManager(ThreadFollowing, LoggingConfigurable):
    ping_interval = Float(15.0, config=True, help="Seconds between keep-alive comments on an idle event stream.")

    def __init__(
        self,
        threads: ThreadStore,
        settings: Callable[[], AgentSettings],
        env_factory: EnvFactory,
        checkpointer_url: str,
        default_checkpoint_path: Path,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.threads = threads
        self._settings = settings
        self._env_factory = env_factory
        self._checkpointer_url = checkpointer_url
        self._default_checkpoint_path = default_checkpoint_path
        self._runner: ThreadRunner | None = None
        self._runner_lock = asyncio.Lock()
        self._active: dict[str, asyncio.Task[str]] = {}
        self._thread_locks: defaultdict[str, asyncio.Lock] = defaultdict(asyncio.Lock)
        self.mcp: Callable[[], McpManager] | None = None  # the extension's MCP manager, made on first use
        # Threads whose segment only finishes now (it has released them and writes its run_finished,
        # or it was an outside call that has been answered and only saves and ends): a decision or a
        # new run waits those milliseconds instead of being refused.
        self._finishing: set[str] = set()
        # Runs of threads whose agent is an outside one (jupyter_ext.acp_host): streams follow them too.
        self.hosted_running: Callable[[str], bool] = lambda _thread_id: False
        self.background = BackgroundRuns(self)  # issue 38: runs that wait for a cell in the background
        # Each outside call's segment, by call id: its thread, what it appended (to answer it from:
        # tool_result) and its task.
        self._outside: OrderedDict[str, tuple[str, Appended, asyncio.Task[str]]] = OrderedDict()

    def _mcp_manager(self) -> McpManager | None:
        return self.mcp() if self.mcp is not None else None

    async def runner(self) -> ThreadRunner:
        """The graph and its checkpointer, opened on first use: the server starts without langgraph."""
        async with self._runner_lock:
            if self._runner is None:
                # the loop (langgraph, openai), undo, privacy and contract modules load on first use: the server
                # starts without them (bench/server_start.py)
                from agent_core.loop.thread_runner import ThreadRunner

                self._runner = await ThreadRunner.open(
                    self.threads,
                    self._checkpointer_url,
                    self._default_checkpoint_path,
                    mcp=self._mcp_manager,
                    background=self.background.steps(),
                )
        return self._runner

    async def graph(self) -> AgentGraph:
        return (await self.runner()).graph

    async def shutdown(self) -> None:
        for thread_id in list(self._active):
            await self._stop_task(thread_id)
        # Under the lock: a runner still being opened (recovery at start) is closed once it is open,
        # not left with its database connection behind.
        async with self._runner_lock:
            if self._runner is not None:
                runner, self._runner = self._runner, None
                await runner.aclose()

    # -- threads

    async def thread(self, thread_id: str) -> ThreadRecord:
        """The thread, if it is this server's owner's: every thread route asks this first, so another
        owner's thread gets the answer of one that does not exist (404, never 403: that would say
        it exists)."""
        record = await self.threads.get(thread_id)
        if record is None:
            raise NotFound(
                f"There is no thread {thread_id!r}. List threads with GET cellwright/api/threads.", "thread_not_found"
            )
        return record

    async def thread_detail(self, thread_id: str) -> ThreadDetail:
        """The thread as it is: a read never drives a run (recovery is for start-up and POSTs)."""
        from agent_core.contract.answers import ThreadDetail
        from agent_core.loop.thread_view import autonomy_of, pending_approval, visible_messages
        from agent_core.loop.usage import public as public_usage
        from agent_core.loop.usage import zero as zero_usage

        record = await self.thread(thread_id)
        runner = await self.runner()
        snapshot = await runner.snapshot(thread_id)
        values = snapshot.values or {}
        # issue 38: an approved cell that went to the background leaves its node's interrupt in the
        # snapshot until the run goes on; it is not pending any more
        pending = None if self.background.waits(record) else pending_approval(snapshot)
        detail = {
            **record.public(),
            "status": self._status(record, pending),
            "messages": visible_messages(values.get("messages", [])),
            "todos": values.get("todos", []),
            "pending_approval": _public_pending(pending),
            "usage": public_usage(values.get("usage") or zero_usage()),
            "autonomy": autonomy_of(snapshot),
            "forked_from": values.get("forked_from"),
        }
        return ThreadDetail.model_validate(detail)

    async def thread_data_policy(self, thread_id: str) -> str:
        """The thread's data policy now: the server's, or the narrower one a run of it asked for."""
        from agent_core.loop.thread_policy import narrowed

        values = (await (await self.runner()).snapshot(thread_id)).values or {}
        return narrowed(self._settings(), values.get("data_policy")).data_policy

    async def list_threads(self) -> ThreadList:
        from agent_core.contract.answers import ThreadList

        threads = [{**r.public(), "status": self._status(r, None)} for r in await self.threads.list()]
        return ThreadList.model_validate({"threads": threads})

    async def delete_thread(self, thread_id: str) -> None:
        from agent_core.undo.steps import forget_thread

        record = await self.thread(thread_id)
        async with self._thread_locks[thread_id]:
            runner = await self.runner()
            await runner.ensure_not_leased(thread_id, "delete it")
            await self._stop_task(thread_id)
            await runner.delete_thread(thread_id)
            await forget_thread(
                runner.undo,
                self._env_factory(record.notebook_path, record.kernel_id or None, self._settings()),
                thread_id,
            )
        self._thread_locks.pop(thread_id, None)

    async def recover(self) -> None:
        """Drive on the threads a crash left between a saved step and its approval request, so
        their approval shows again. Runs once at start-up, in the background."""
        runner = await self.runner()
        for record in await self.threads.list():
            if record.status not in ("running", "waiting_for_cell") or record.thread_id in self._active:
                continue
            async with self._thread_locks[record.thread_id]:
                if await self.threads.leased_elsewhere(record.thread_id):
                    continue
                if record.status == "waiting_for_cell":  # issue 38: a restart cut the background cell's follower
                    await self.background.recover_waiting(record)
                else:
                    await runner.recovered(record, self._environment(self._settings()), self._settings())

    # -- runs

    async def start_run(self, thread_id: str, body: StartRun, record: ThreadRecord | None = None) -> str:
        """Start a run of `body` (its notebook_path already checked against the root); `record`: the
        owner's thread as the caller has just read it (the runner reads it again under the lock)."""
        from agent_core.llm.failures import not_configured
        from agent_core.loop.run_tools import ask_probes_ahead

        if record is None:  # another owner's thread is a 404, before a lease or a setting says more
            record = await self.thread(thread_id)
        settings = self._settings()
        if not settings.llm_configured:
            raise BadRequest(not_configured().message, "llm_not_configured")
        # The run's first kernel probes leave on the loop's next turn, while the thread is read again
        # and its lease taken; the run takes their answer when it asks (issue 41). They only read: a
        # run refused below leaves an answer nobody takes.
        kernel_id = body.kernel_id or record.kernel_id or None
        notebook_path = body.notebook_path or record.notebook_path
        ask_probes_ahead(self._env_factory(notebook_path, kernel_id, settings), body.message, settings)
        async with self._thread_locks[thread_id]:
            await self._ensure_free(thread_id, lease=False)
            runner = await self.runner()
            run = await runner.start(
                thread_id, body, self._environment(settings), settings, on_released=self._on_released(thread_id)
            )
            return self._launch(run)

    async def decide(self, thread_id: str, call_id: str, body: Decision, record: ThreadRecord | None = None) -> str:
        if record is None:  # another owner's thread is a 404, before its lease says it runs
            await self.thread(thread_id)
        settings = self._settings()
        async with self._thread_locks[thread_id]:
            await self._ensure_free(
                thread_id, "This thread's run is still going; the approval is not pending any more.", lease=False
            )
            await self._ensure_kernel_here(thread_id, body.kernel_id)
            runner = await self.runner()
            run = await runner.resume(
                thread_id,
                call_id,
                body,
                self._environment(settings),
                settings,
                on_released=self._on_released(thread_id),
            )
            return self._launch(run)

    async def outside_call(self, thread_id: str, call: OutsideCall, settings: AgentSettings) -> int:
        """Start the run that is one outside agent's tool call (jupyter_ext.mcp_endpoint); returns the
        seq its events follow. Refused as a new run is: another run active, an approval pending."""
        await self.thread(thread_id)
        async with self._thread_locks[thread_id]:
            await self._ensure_free(thread_id, lease=False)
            runner = await self.runner()
            after = await self.threads.events.last_seq(thread_id)
            run = await runner.outside_call(
                thread_id, call, self._environment(settings), settings, on_released=self._on_released(thread_id)
            )
            self._launch(run)
            if run.appended is not None:
                self._outside[call.tool_call_id] = (thread_id, run.appended, self._active[thread_id])
                while len(self._outside) > KEPT_ANSWERS:
                    self._outside.popitem(last=False)
            return after

    def answered_now(self, thread_id: str, call_id: str, settings: AgentSettings) -> str | None:
        """An outside call's result once its `tool_result` event is read: its own segment's tools node
        handed it over as it emitted that event, before the segment saves and ends (issue 41: those
        milliseconds are not the client's to wait); the thread then counts as finishing, so the
        client's next call waits for that end instead of being refused. None when that segment has
        no result (it paused for approval or was stopped: a later segment, or the stop, answers, and
        the thread's state has it once that run has finished)."""
        kept = self._outside.get(call_id)
        if kept is None or kept[0] != thread_id:
            return None
        _, appended, task = kept
        answer = appended.tool_result(call_id, settings)
        if answer is not None:
            self._outside.pop(call_id, None)
            if not task.done():
                self._finishing.add(thread_id)
        return answer

    def finishing(self, thread_id: str) -> bool:
        """The thread's run only finishes now: a new one waits for it (milliseconds), not refused."""
        return thread_id in self._finishing

    async def tool_result(self, thread_id: str, call_id: str, settings: AgentSettings) -> str | None:
        """What the tools node answered to call `call_id`, as the thread's data policy lets it leave
        (the server's under `settings`, or the thread's narrower one), if it has answered: from what the
        call's own segment appended, else (a call answered after an approval) from the thread's state."""
        kept = self._outside.pop(call_id, None)
        if kept is not None and kept[0] == thread_id:
            answer = kept[1].tool_result(call_id, settings)
            if answer is not None:
                return answer
        from agent_core.loop.segments import Appended

        values = (await (await self.runner()).snapshot(thread_id)).values or {}
        return Appended(values.get("data_policy"), values.get("messages") or []).tool_result(call_id, settings)

    async def undo(self, thread_id: str, call_id: str) -> UndoResult:
        """Undo one step (agent_core.undo.steps) while no run is active; its `step_undone` event goes
        into the thread's log, and a note for the agent into its next run."""
        from agent_core.contract import make_event
        from agent_core.contract.review import UndoResult
        from agent_core.loop.thread_view import has_call
        from agent_core.undo.steps import UndoRefused, undo_step

        busy = "A run of this thread is active: undo its steps once it has finished or stopped."
        async with self.idle_thread(thread_id, busy) as (record, runner):
            # A sub-agent's steps are not in the thread's own messages, but their snapshots are known.
            if not runner.undo.knows(thread_id, call_id) and not has_call(
                (await runner.snapshot(thread_id)).values or {}, call_id
            ):
                raise NotFound(f"Thread {thread_id!r} has no step {call_id[:200]!r}.", "step_not_found")
            try:
                result = await undo_step(runner.undo, self.environment_of(record), thread_id, call_id)
            except UndoRefused as exc:
                raise Conflict(exc.message, exc.kind) from None
            await self.log_event(record, make_event("step_undone", id=call_id, **result))
            return UndoResult.model_validate(result)

    @asynccontextmanager
    async def idle_thread(self, thread_id: str, busy: str) -> AsyncIterator[tuple[ThreadRecord, ThreadRunner]]:
        """The owner's thread with its lock held and no run active (`busy`: the refusal otherwise), for
        a change between runs (undo, rewind)."""
        record = await self.thread(thread_id)
        async with self._thread_locks[thread_id]:
            await self._ensure_free(thread_id, busy)
            yield record, await self.runner()

    def environment_of(self, record: ThreadRecord) -> ToolEnvironment:
        return self._env_factory(record.notebook_path, record.kernel_id or None, self._settings())

    async def log_event(self, record: ThreadRecord, event: EventDict) -> None:
        """An event between runs, into the thread's log (under its last run's id)."""
        from agent_core.loop.event_pump import EventPump

        emit = EventPump(self.threads.events, record.thread_id, record.last_run_id)
        emit(event)
        await emit.drain()

    async def cancel(self, thread_id: str) -> None:
        record = await self.thread(thread_id)
        async with self._thread_locks[thread_id]:
            task = self._active.get(thread_id)
            if task is not None and thread_id not in self._finishing:
                await self._stop_task(thread_id)  # the run closes its open call itself
                await self.background.stop_background(thread_id)  # a cell it went on without: interrupted
                return
            await self.background.stop_background(thread_id)  # a cell in the background: interrupted
            if task is not None:  # it only finishes now (its run_finished, or an answered call's save)
                await asyncio.wait([task])
            runner = await self.runner()
            await runner.ensure_not_leased(thread_id, "stop it")
            await runner.stop_pending(thread_id, record.last_run_id)

    def is_running(self, thread_id: str) -> bool:
        """A run is active, or waits for a cell in the background (event streams stay open)."""
        return (
            thread_id in self._active or self.background.waiting_for_cell(thread_id) or self.hosted_running(thread_id)
        )

    async def _ensure_kernel_here(self, thread_id: str, chosen: str | None) -> None:
        """On a shared database a thread's kernel may live on another Jupyter server: an approval
        sent here without a kernel of this server is refused (the call stays pending there), never
        run in some other kernel of this notebook."""
        serverapp = getattr(self.parent, "serverapp", None)
        if chosen or not self.threads.events.notifies or serverapp is None:
            return
        record = await self.thread(thread_id)
        if record.kernel_id and record.kernel_id not in serverapp.kernel_manager:
            raise Conflict(
                "This thread's kernel is not on this Jupyter server (another server that shares the database runs it): "
                "approve the call there, or send kernel_id to run it in a kernel of this server. The call is still pending.",
                "kernel_elsewhere",
            )

    # -- internals

    async def _ensure_free(self, thread_id: str, message: str = "", lease: bool = True) -> None:
        """Refuse while a run of the thread is active here; a segment that only finishes now (see
        `_finishing`) is waited for (milliseconds), not refused. `lease`: also
        refuse while another process holds the thread's lease (False where the runner's start,
        resume or outside call asks that itself, under the same lock: one database read, not two)."""
        task = self._active.get(thread_id)
        self.background.refuse_if_waiting(thread_id)
        if task is not None and thread_id in self._finishing:
            self.log.debug("Cellwright: thread %s waits for its last run to finish", thread_id)
            await asyncio.wait([task])
        elif task is not None:
            raise Conflict(
                message or "A run of this thread is active: wait for it to finish or press Stop.", "run_active"
            )
        if lease:
            await (await self.runner()).ensure_not_leased(thread_id)

    def _environment(self, settings: AgentSettings) -> Callable[[ThreadRecord], ToolEnvironment]:
        return lambda record: self._env_factory(record.notebook_path, record.kernel_id or None, settings)

    def _on_released(self, thread_id: str) -> Callable[[], None]:
        return lambda: self._finishing.add(thread_id)

    def _launch(self, run: PreparedRun) -> str:
        """The segment's task: the POST that asked for it answers at once, whatever the kernel does."""
        self._active[run.thread_id] = asyncio.create_task(self._drive(run))
        return run.run_id

    async def _drive(self, run: PreparedRun) -> str:
        from agent_core.loop.refusals import ThreadBusy

        try:
            return await run.drive()
        except ThreadBusy as exc:  # a kernel took the thread between our check and the start
            self.log.warning("%s", exc)
            return "failed"
        except DatabaseUnavailable as exc:  # its last transaction was not committed: nothing half-written
            self.log.error(
                "Cellwright: the run of thread %s stopped: %s. Ask again once the database is back.", run.thread_id, exc
            )
            return "failed"
        finally:
            self._active.pop(run.thread_id, None)
            self._finishing.discard(run.thread_id)
            self.threads.events.wake(run.thread_id)  # event streams close once the run is over
            settle_soon(lambda: bool(self._active))

    async def _stop_task(self, thread_id: str) -> None:
        task = self._active.get(thread_id)
        if task is not None:
            task.cancel()
            await asyncio.wait([task])

    def _status(self, record: ThreadRecord, pending: Mapping[str, object] | None) -> str:
        if record.thread_id in self._active and record.thread_id not in self._finishing:
            return "running"
        if pending is not None:
            return "awaiting_approval"
        return record.status


def _public_pending(pending: Mapping[str, object] | None) -> JsonObject | None:
    return None if pending is None else {k: v for k, v in pending.items() if k != "interrupt_id"}
