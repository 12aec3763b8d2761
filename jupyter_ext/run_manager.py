"""Runs are asyncio tasks owned by this manager, not by an HTTP request: a closed tab does not stop
the agent. What a run does to its thread is agent_core's ThreadRunner; this manager keeps the task
map, one lock per thread (two resumes of one approval would run the tool twice), the stream that
readers follow, and the HTTP errors."""
from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections import defaultdict
from collections.abc import AsyncIterator, Callable
from contextlib import aclosing, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from traitlets import Float
from traitlets.config import LoggingConfigurable

from agent_core.database import DatabaseUnavailable
from agent_core.settings import AgentSettings
from agent_core.thread_store import ThreadRecord, ThreadStore

from .errors import BadRequest, Conflict, NotFound
from .heap_settling import settle_soon

if TYPE_CHECKING:  # the tool registry and the contract's models load on first use, not at server start
    from agent_core.contract.routes import Decision, StartRun
    from agent_core.contract.shared import LiveCell
    from agent_core.tools import ToolEnvironment
    from agent_core.thread_runner import ThreadRunner

RUN_TOOLS_KEPT = 256  # threads whose outside tools are remembered for their resumed segments
EnvFactory = Callable[[str, "str | None", AgentSettings], "ToolEnvironment"]


@dataclass(frozen=True)
class StreamItem:
    """One thing for a reader of a thread's events: an event (stored, with a seq, or live only),
    the end of the replayed backlog, or a keep-alive ping."""

    kind: str  # "event" | "caught_up" | "ping"
    event: dict[str, Any] | None = None
    stored: bool = True


class RunManager(LoggingConfigurable):
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
        self.mcp: Callable[[], Any] | None = None  # the extension's MCP manager, made on first use
        # Each thread's outside tools as its run's first segment found them: a segment an approval
        # resumes offers the same (asking the kernel again sat between Approve and the cell).
        self._run_tools: dict[str, tuple[dict[str, Any], list[str]]] = {}

    async def runner(self) -> ThreadRunner:
        """The graph and its checkpointer, opened on first use: the server starts without langgraph."""
        async with self._runner_lock:
            if self._runner is None:
                from agent_core.thread_runner import ThreadRunner

                self._runner = await ThreadRunner.open(self.threads, self._checkpointer_url, self._default_checkpoint_path)
        return self._runner

    async def graph(self) -> Any:
        return (await self.runner()).graph

    async def shutdown(self) -> None:
        for thread_id in list(self._active):
            await self._stop_task(thread_id)
        if self._runner is not None:
            await self._runner.aclose()

    # -- threads

    async def thread(self, thread_id: str) -> ThreadRecord:
        record = await self.threads.get(thread_id)
        if record is None:
            raise NotFound(f"There is no thread {thread_id!r}. List threads with GET cellwright/api/threads.", "thread_not_found")
        return record

    async def thread_detail(self, thread_id: str) -> dict[str, Any]:
        """The thread as it is: a read never drives a run (recovery is for start-up and POSTs)."""
        from agent_core.mentions import CONTEXT_KEY
        from agent_core.thread_runner import view_message
        from agent_core.usage import public as public_usage, zero as zero_usage

        record = await self.thread(thread_id)
        runner = await self.runner()
        snapshot = await runner.snapshot(thread_id)
        values = snapshot.values or {}
        pending = runner.pending(snapshot)
        return {
            **record.public(),
            "status": self._status(record, pending),
            "messages": [view_message(m) for m in values.get("messages", []) if not m.get(CONTEXT_KEY)],
            "todos": values.get("todos", []),
            "pending_approval": _public_pending(pending),
            "usage": public_usage(values.get("usage") or zero_usage()),
            "autonomy": runner.autonomy_of(snapshot),
        }

    async def list_threads(self) -> list[dict[str, Any]]:
        return [{**r.public(), "status": self._status(r, None)} for r in await self.threads.list()]

    async def delete_thread(self, thread_id: str) -> None:
        from agent_core.undo.steps import forget_thread

        record = await self.thread(thread_id)
        async with _as_http_errors(), self._thread_locks[thread_id]:
            runner = await self.runner()
            await runner.ensure_not_leased(thread_id, "delete it")
            await self._stop_task(thread_id)
            await runner.delete_thread(thread_id)
            await forget_thread(self._env_factory(record.notebook_path, record.kernel_id or None, self._settings()), thread_id)
        self._thread_locks.pop(thread_id, None)

    async def recover(self) -> None:
        """Drive on the threads a crash left between a saved step and its approval request, so
        their approval shows again. Runs once at start-up, in the background."""
        for record in await self.threads.list():
            if record.status != "running" or record.thread_id in self._active:
                continue
            async with self._thread_locks[record.thread_id]:
                if not await self.threads.leased_elsewhere(record.thread_id):
                    await self._recovered(record)

    # -- runs

    async def start_run(self, thread_id: str, body: StartRun, notebook_path: str | None) -> str:
        """Start a run of `body` (its notebook_path already checked against the root)."""
        from agent_core.llm import not_configured
        from agent_core.thread_runner import title_from

        record = await self.thread(thread_id)
        settings = self._settings()
        if not settings.llm_configured:
            raise BadRequest(not_configured().message, "llm_not_configured")
        async with _as_http_errors(), self._thread_locks[thread_id]:
            await self._ensure_free(thread_id)
            snapshot = await self._recovered(record)
            graph_input = (await self.runner()).start_input(snapshot, body.message, body.mode, body.autonomy)
            updates = {"notebook_path": notebook_path} if notebook_path is not None else {}
            if body.kernel_id is not None:
                updates["kernel_id"] = body.kernel_id
            if record.title in ("", "New thread"):
                updates["title"] = title_from(body.message)
            if updates:
                await self.threads.update(thread_id, **updates)
                record = dataclasses.replace(record, **updates)  # what was just written: no second read
            if body.disabled_mcp_servers is not None:  # kept with the thread (in its state) until another list comes
                graph_input = {**graph_input, "disabled_mcp_servers": list(body.disabled_mcp_servers)}
            segment = Segment(body.mode, body.autonomy, body.message, _cells(body.notebook_cells))
            kernel_seen = (snapshot.values or {}).get("kernel_identity")
            return self._launch(record, graph_input, settings, segment, snapshot, with_context=True, kernel_seen=kernel_seen)

    async def decide(self, thread_id: str, call_id: str, body: Decision) -> str:
        record = await self.thread(thread_id)
        if body.decision == "edit" and body.args is None:
            raise BadRequest('An "edit" decision needs "args": the edited arguments as an object.', "bad_args")
        decision = {"decision": body.decision, "args": body.args, "reason": body.reason or ""}
        async with _as_http_errors(), self._thread_locks[thread_id]:
            await self._ensure_free(thread_id, "This thread's run is still going; the approval is not pending any more.")
            self._ensure_kernel_here(record, body.kernel_id)
            runner = await self.runner()
            snapshot = await self._recovered(record)
            resume = runner.resume_input(snapshot, call_id, decision)
            if body.decision == "reject" and body.save_rule and body.save_rule.strip():
                self._save_rule(record, body.save_rule)
            if body.kernel_id and body.kernel_id != record.kernel_id:
                await self.threads.update(thread_id, kernel_id=body.kernel_id)
                record = dataclasses.replace(record, kernel_id=body.kernel_id)
            segment = Segment(runner.mode_of(snapshot), runner.autonomy_of(snapshot), "", _cells(body.notebook_cells))
            return self._launch(record, resume, self._settings(), segment, snapshot)

    async def undo(self, thread_id: str, call_id: str) -> dict[str, Any]:
        """Undo one step (agent_core.undo.steps) while no run is active; its `step_undone` event goes
        into the thread's log, and a note for the agent into its next run."""
        from agent_core.contract import make_event
        from agent_core.event_pump import EventPump
        from agent_core.undo.steps import BOOK, UndoRefused, undo_step

        record = await self.thread(thread_id)
        async with _as_http_errors(), self._thread_locks[thread_id]:
            await self._ensure_free(thread_id, "A run of this thread is active: undo its steps once it has finished or stopped.")
            runner = await self.runner()
            # A sub-agent's steps are not in the thread's own messages, but their snapshots are known.
            if not BOOK.knows(thread_id, call_id) and not _has_call((await runner.snapshot(thread_id)).values or {}, call_id):
                raise NotFound(f"Thread {thread_id!r} has no step {call_id[:200]!r}.", "step_not_found")
            env = self._env_factory(record.notebook_path, record.kernel_id or None, self._settings())
            try:
                result = await undo_step(env, thread_id, call_id)
            except UndoRefused as exc:
                raise Conflict(exc.message, exc.kind) from None
            emit = EventPump(self.threads, thread_id, record.last_run_id)
            emit(make_event("step_undone", id=call_id, **result))
            await emit.drain()
            return result

    async def cancel(self, thread_id: str) -> None:
        record = await self.thread(thread_id)
        async with _as_http_errors(), self._thread_locks[thread_id]:
            if thread_id in self._active:
                await self._stop_task(thread_id)  # the run closes its open call itself
                return
            runner = await self.runner()
            await runner.ensure_not_leased(thread_id, "stop it")
            await runner.stop_pending(thread_id, record.last_run_id)

    def _save_rule(self, record: ThreadRecord, text: str) -> None:
        from agent_core.undo.rules import save_rule

        root = self._env_factory(record.notebook_path, record.kernel_id or None, self._settings()).root_dir
        try:
            save_rule(root, text)
        except ValueError as exc:
            raise BadRequest(f"The rule was not saved, and the call is still pending: {exc}", "bad_rule") from None

    def is_running(self, thread_id: str) -> bool:
        return thread_id in self._active

    # -- following a thread's events

    async def follow(self, thread_id: str, after: int, previews: bool = False) -> AsyncIterator[StreamItem]:
        """The thread's events after seq `after`: the stored backlog, `caught_up`, then live events
        (stored ones and live-only outputs, in order) until the thread's run ends; pings while idle.
        With `previews`, also each token as it arrives, before its coalesced row is stored."""
        async with aclosing(self.follow_batches(thread_id, after, previews)) as batches:
            async for batch in batches:
                for item in batch:
                    yield item

    async def follow_batches(self, thread_id: str, after: int, previews: bool = False) -> AsyncIterator[list[StreamItem]]:
        """`follow`'s items, grouped by wake-up: what was ready at once, so a writer flushes once."""
        await self.thread(thread_id)
        if previews:
            self.threads.reading_previews(thread_id, 1)
            try:
                async for batch in self._follow(thread_id, after, True):
                    yield batch
            finally:
                self.threads.reading_previews(thread_id, -1)
        else:
            async for batch in self._follow(thread_id, after, False):
                yield batch

    async def _follow(self, thread_id: str, after: int, previews: bool) -> AsyncIterator[list[StreamItem]]:
        threads = self.threads
        live = threads.live_start(thread_id, after)
        caught_up = False
        while True:
            elsewhere = await self._driven_elsewhere(thread_id)
            running = elsewhere or self.is_running(thread_id)
            batch: list[StreamItem] = []
            for event in await threads.events_after(thread_id, after):
                items, live = self._live_items(thread_id, live, event["seq"] - 1, previews)
                batch += items
                batch.append(StreamItem("event", event))
                after = event["seq"]
            items, live = self._live_items(thread_id, live, after, previews)
            batch += items
            if not caught_up:
                from agent_core.contract import make_event

                caught_up = True
                batch.append(StreamItem("caught_up", make_event("caught_up", seq=after, thread_id=thread_id), stored=False))
            if batch:
                yield batch
            if not running and not self.is_running(thread_id) and not await threads.events_after(thread_id, after, 1):
                return
            before, live_before = after, live
            await threads.wait_for_events(
                thread_id, after, self.ping_interval, still=lambda: elsewhere or self.is_running(thread_id), live_start=live
            )
            idle = not await threads.events_after(thread_id, before, 1) and not threads.has_live_after(thread_id, live_before)
            if (elsewhere or self.is_running(thread_id)) and idle:
                yield [StreamItem("ping")]

    def _ensure_kernel_here(self, record: ThreadRecord, chosen: str | None) -> None:
        """On a shared database a thread's kernel may live on another Jupyter server: an approval
        sent here without a kernel of this server is refused (the call stays pending there), never
        run in some other kernel of this notebook."""
        serverapp = getattr(self.parent, "serverapp", None)
        if chosen or not record.kernel_id or not self.threads.notifies or serverapp is None:
            return
        if record.kernel_id not in serverapp.kernel_manager:
            raise Conflict(
                "This thread's kernel is not on this Jupyter server (another server that shares the database runs it): "
                "approve the call there, or send kernel_id to run it in a kernel of this server. The call is still pending.",
                "kernel_elsewhere",
            )

    async def _driven_elsewhere(self, thread_id: str) -> bool:
        """Another server (or a kernel's %agent) runs the thread, and its appends wake our readers
        (a shared PostgreSQL): follow that run live too, until its lease goes."""
        return self.threads.notifies and not self.is_running(thread_id) and await self.threads.leased_elsewhere(thread_id) is not None

    def _live_items(self, thread_id: str, start: int, upto_seq: int, previews: bool) -> tuple[list[StreamItem], int]:
        """Live-only events to send, and where this reader's position in the live log moves to
        (also past the token previews it did not ask for)."""
        events, end = self.threads.live_events(thread_id, start, upto_seq)
        return [StreamItem("event", event, stored=False) for event in events if previews or "stored_as" not in event], end

    # -- internals

    async def _ensure_free(self, thread_id: str, message: str = "") -> None:
        if thread_id in self._active:
            raise Conflict(message or "A run of this thread is active: wait for it to finish or press Stop.", "run_active")
        await (await self.runner()).ensure_not_leased(thread_id)

    def _launch(
        self, record: ThreadRecord, graph_input: Any, settings: AgentSettings, segment: Segment, snapshot: Any,
        with_context: bool = False, kernel_seen: str | None = None,
    ) -> str:  # fmt: skip
        """Start the segment's task. `snapshot` is the thread's state the caller read under the thread's
        lock: nothing has changed it since, so the task does not read it again (a checkpointer round
        trip on the way from an approval to its cell)."""
        run_id = uuid.uuid4().hex
        env = self._env_factory(record.notebook_path, record.kernel_id or None, settings)
        prior = snapshot.values or {}
        drive = self._drive(record, run_id, graph_input, settings, env, segment, prior, with_context, kernel_seen)
        self._active[record.thread_id] = asyncio.create_task(drive)
        return run_id

    async def _drive(
        self, record: ThreadRecord, run_id: str, graph_input: Any, settings: AgentSettings, env: ToolEnvironment,
        segment: Segment, prior: dict[str, Any], with_context: bool = False, kernel_seen: str | None = None,
    ) -> str:  # fmt: skip
        from agent_core.external_tools import with_tool_notes
        from agent_core.graph import run_context
        from agent_core.thread_runner import ThreadBusy

        runner = await self.runner()
        try:
            tools = self._external_tools(record.thread_id, graph_input, prior, env, settings, with_context)
            # Resolved here, in the run's task: the POST answers at once, whatever the kernel does.
            mentions = None
            if with_context:
                from agent_core.undo.steps import pending_notes

                disabled = {k: v for k, v in graph_input.items() if k == "disabled_mcp_servers"}
                # The notebook's @tool functions and the run's context are both read from the kernel:
                # asked at once, it answers one after the other with no round trip in between.
                (extra, notes), (graph_input, mentions) = await asyncio.gather(
                    tools, runner.with_context(graph_input, segment.message, env, settings, kernel_seen, pending_notes(record.thread_id))
                )
                graph_input = with_tool_notes({**graph_input, **disabled}, extra, notes, prior)
            else:
                extra, notes = await tools
            make_context = lambda emit: run_context(  # noqa: E731
                record.thread_id, settings, env, runner.store.ledger, emit, record.notebook_path, segment.mode, segment.notebook_cells,
                extra,
            )  # fmt: skip
            return await runner.run_segment(
                record.thread_id, run_id, graph_input, make_context, segment.mode, segment.message, mentions=mentions,
                autonomy=segment.autonomy,
            )  # fmt: skip
        except ThreadBusy as exc:  # a kernel took the thread between our check and the start
            self.log.warning("%s", exc)
            return "failed"
        except DatabaseUnavailable as exc:  # its last transaction was not committed: nothing half-written
            self.log.error("Cellwright: the run of thread %s stopped: %s. Ask again once the database is back.", record.thread_id, exc)
            return "failed"
        finally:
            self._active.pop(record.thread_id, None)
            self.threads.wake(record.thread_id)  # event streams close once the run is over
            settle_soon(lambda: bool(self._active))

    async def _external_tools(
        self, thread_id: str, graph_input: Any, prior: dict[str, Any], env: ToolEnvironment, settings: AgentSettings,
        new_run: bool,
    ) -> tuple[dict[str, Any], list[str]]:  # fmt: skip
        """This segment's MCP and notebook tools, gathered at the start of each run (and of a resumed
        segment this process did not start the run of): the thread's disabled servers are the run's
        new list, else what its state (`prior`) keeps."""
        from agent_core.external_tools import gather_tools

        if not new_run and thread_id in self._run_tools:
            return self._run_tools[thread_id]
        disabled = graph_input.get("disabled_mcp_servers") if isinstance(graph_input, dict) else None
        if disabled is None:
            disabled = prior.get("disabled_mcp_servers") or []
        mcp = self.mcp() if self.mcp is not None and settings.mcp_servers else None
        found = await gather_tools(mcp, env, settings, disabled)
        self._run_tools.pop(thread_id, None)
        if len(self._run_tools) >= RUN_TOOLS_KEPT:
            del self._run_tools[next(iter(self._run_tools))]
        self._run_tools[thread_id] = found
        return found

    async def _stop_task(self, thread_id: str) -> None:
        task = self._active.get(thread_id)
        if task is not None:
            task.cancel()
            await asyncio.wait([task])

    async def _recovered(self, record: ThreadRecord) -> Any:
        """The thread's snapshot, after driving it on if a crash left it stuck."""
        runner = await self.runner()

        async def drive() -> None:
            snapshot = await runner.snapshot(record.thread_id)
            self._launch(record, None, self._settings(), Segment(runner.mode_of(snapshot), runner.autonomy_of(snapshot), ""), snapshot)
            await asyncio.wait([self._active[record.thread_id]])

        if record.thread_id in self._active:
            return await runner.snapshot(record.thread_id)
        return await runner.recovered(record.thread_id, drive)

    def _status(self, record: ThreadRecord, pending: dict[str, Any] | None) -> str:
        if record.thread_id in self._active:
            return "running"
        if pending is not None:
            return "awaiting_approval"
        return record.status


@asynccontextmanager
async def _as_http_errors() -> AsyncIterator[None]:
    """The thread runner's refusals as HTTP errors: a bad decision is the client's to fix (400),
    anything else is a conflict with the thread's state (409)."""
    from agent_core.thread_runner import BadDecision, RunRefused

    try:
        yield
    except BadDecision as exc:
        raise BadRequest(exc.message, exc.kind) from None
    except RunRefused as exc:
        raise Conflict(exc.message, exc.kind) from None


@dataclass(frozen=True)
class Segment:
    """What a run segment starts with, beside its thread and graph input."""

    mode: str
    autonomy: str
    message: str  # the user's message; "" for a segment an approval resumed
    notebook_cells: list[dict[str, Any]] | None = None  # as the browser sent them


def _cells(cells: list[LiveCell] | None) -> list[dict[str, Any]] | None:
    return None if cells is None else [cell.model_dump() for cell in cells]


def _has_call(values: dict[str, Any], call_id: str) -> bool:
    """Whether the thread's messages hold a tool call with this id."""
    return any(
        call.get("id") == call_id for message in values.get("messages", []) for call in (message.get("tool_calls") or [])
    )


def _public_pending(pending: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if pending is None else {k: v for k, v in pending.items() if k != "interrupt_id"}
