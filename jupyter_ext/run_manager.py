"""Runs are asyncio tasks owned by this manager, not by an HTTP request: a closed tab does not stop
the agent. One run per thread at a time; every event goes to the thread's persistent log."""
from __future__ import annotations

import asyncio
import logging
import uuid
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from agent_core.events import make_event
from agent_core.settings import AgentSettings
from agent_core.thread_store import ThreadRecord, ThreadStore
from agent_core.tool_ledger import INTERRUPTED, STOPPED
from agent_core.tools import TOOLS, ToolEnvironment

from .errors import BadRequest, Conflict, NotFound

log = logging.getLogger(__name__)

EnvFactory = Callable[[str, str | None, AgentSettings], ToolEnvironment]
DECISIONS = ("approve", "edit", "reject")


@dataclass
class ActiveRun:
    run_id: str
    task: asyncio.Task[None]


class RunManager:
    def __init__(
        self,
        threads: ThreadStore,
        settings: Callable[[], AgentSettings],
        env_factory: EnvFactory,
        checkpointer_url: str,
        default_checkpoint_path: Path,
    ) -> None:
        self.threads = threads
        self._settings = settings
        self._env_factory = env_factory
        self._checkpointer_url = checkpointer_url
        self._default_checkpoint_path = default_checkpoint_path
        self._agent_store: Any = None
        self._graph: Any = None
        self._graph_lock = asyncio.Lock()
        self._active: dict[str, ActiveRun] = {}
        self._thread_locks: defaultdict[str, asyncio.Lock] = defaultdict(asyncio.Lock)

    # -- the graph, opened on first use so the server starts without importing langgraph

    async def graph(self) -> Any:
        async with self._graph_lock:
            if self._graph is None:
                from agent_core.checkpoint import open_store
                from agent_core.graph import build_graph

                self._agent_store = await open_store(self._checkpointer_url, self._default_checkpoint_path)
                self._graph = build_graph(self._agent_store.saver)
        return self._graph

    async def shutdown(self) -> None:
        for thread_id in list(self._active):
            await self._stop_task(thread_id)
        if self._agent_store is not None:
            await self._agent_store.aclose()

    # -- threads

    async def thread(self, thread_id: str) -> ThreadRecord:
        record = await self.threads.get(thread_id)
        if record is None:
            raise NotFound(f"There is no thread {thread_id!r}. List threads with GET cellwright/api/threads.", "thread_not_found")
        return record

    async def thread_detail(self, thread_id: str) -> dict[str, Any]:
        record = await self.thread(thread_id)
        await self._redrive_if_stuck(record)
        snapshot = await self._snapshot(thread_id)
        values = snapshot.values or {}
        pending = self._pending(snapshot)
        return {
            **record.public(),
            "status": self._status(record, pending),
            "messages": [_view_message(m) for m in values.get("messages", [])],
            "todos": values.get("todos", []),
            "pending_approval": pending,
        }

    async def list_threads(self) -> list[dict[str, Any]]:
        return [{**r.public(), "status": self._status(r, None)} for r in await self.threads.list()]

    async def delete_thread(self, thread_id: str) -> None:
        await self.thread(thread_id)
        await self._stop_task(thread_id)
        await self.graph()
        await self._agent_store.delete_thread(thread_id)
        await self.threads.delete(thread_id)

    # -- runs

    async def start_run(self, thread_id: str, message: str, notebook_path: str | None, kernel_id: str | None, mode: str) -> str:
        from agent_core.graph import new_run_input

        record = await self.thread(thread_id)
        settings = self._settings()
        if not settings.llm_configured:
            raise BadRequest(
                "No model is configured. Set CELLWRIGHT_MODEL and OPENAI_BASE_URL (and OPENAI_API_KEY if needed), "
                "or c.Cellwright.model / base_url / api_key, or PUT cellwright/api/config.",
                "llm_not_configured",
            )
        async with self._thread_locks[thread_id]:
            self._ensure_idle(thread_id)
            await self._redrive_if_stuck(record)
            self._ensure_idle(thread_id)
            if self._pending(await self._snapshot(thread_id)):
                raise Conflict(
                    "This thread is waiting for your approval of a tool call: approve or reject it (or press Stop) first.",
                    "approval_pending",
                )
            updates = {"notebook_path": notebook_path} if notebook_path is not None else {}
            if kernel_id is not None:
                updates["kernel_id"] = kernel_id
            if record.title == "" or record.title == "New thread":
                updates["title"] = _title(message)
            if updates:
                await self.threads.update(thread_id, **updates)
            record = await self.thread(thread_id)
            return self._launch(record, new_run_input(message), settings, mode=mode, message=message)

    async def decide(self, thread_id: str, call_id: str, body: dict[str, Any]) -> str:
        from langgraph.types import Command

        record = await self.thread(thread_id)
        decision = _check_decision(body)
        async with self._thread_locks[thread_id]:
            self._ensure_idle(thread_id, "This thread's run is still going; the approval is not pending any more.")
            pending = self._pending(await self._snapshot(thread_id))
            if pending is None or pending["id"] != call_id:
                now = f"the pending one is {pending['id']!r}" if pending else "nothing is pending"
                raise Conflict(f"Tool call {call_id!r} is not awaiting approval ({now}). Reload the thread.", "not_pending")
            if decision["decision"] == "edit":
                problem = TOOLS[pending["name"]].check_args(decision.get("args"))
                if problem:
                    raise BadRequest(f"The edited arguments do not fit: {problem}.", "bad_args")
            if body.get("kernel_id"):
                await self.threads.update(thread_id, kernel_id=str(body["kernel_id"]))
                record = await self.thread(thread_id)
            return self._launch(record, Command(resume=decision), self._settings(), mode="single", message="")

    async def cancel(self, thread_id: str) -> None:
        record = await self.thread(thread_id)
        async with self._thread_locks[thread_id]:
            if thread_id in self._active:
                await self._stop_task(thread_id)  # the run closes its open call itself
                return
            emit = EventPump(self.threads, thread_id, record.last_run_id)
            if await self._close_open_call(thread_id, emit):
                emit(make_event("run_finished", status="cancelled"))
                await self.threads.update(thread_id, status="cancelled")
            await emit.drain()

    def is_running(self, thread_id: str) -> bool:
        return thread_id in self._active

    # -- internals

    def _ensure_idle(self, thread_id: str, message: str = "") -> None:
        if thread_id in self._active:
            raise Conflict(message or "A run of this thread is active: wait for it to finish or press Stop.", "run_active")

    def _launch(self, record: ThreadRecord, graph_input: Any, settings: AgentSettings, mode: str, message: str) -> str:
        run_id = uuid.uuid4().hex
        env = self._env_factory(record.notebook_path, record.kernel_id or None, settings)
        task = asyncio.create_task(self._drive(record, run_id, graph_input, settings, env, mode, message))
        self._active[record.thread_id] = ActiveRun(run_id, task)
        return run_id

    async def _drive(
        self, record: ThreadRecord, run_id: str, graph_input: Any, settings: AgentSettings, env: ToolEnvironment, mode: str, message: str
    ) -> None:
        from agent_core.graph import RunContext
        from agent_core.llm import LLMError

        thread_id = record.thread_id
        emit = EventPump(self.threads, thread_id, run_id)
        status = "completed"
        try:
            await self.threads.update(thread_id, status="running", last_run_id=run_id)
            emit(make_event("run_started", mode=mode, message=message))
            graph = await self.graph()
            context = RunContext(thread_id, settings, env, self._agent_store.ledger, emit, record.notebook_path)
            async for chunk in graph.astream(
                graph_input, self._config(thread_id), context=context, stream_mode="updates", durability="sync"
            ):
                for pending in chunk.get("__interrupt__", ()):
                    emit(_approval_event(pending.value))
                    status = "awaiting_approval"
        except asyncio.CancelledError:
            status = "cancelled"
            await self._close_open_call(thread_id, emit)
        except LLMError as exc:
            status = "failed"
            emit(make_event("error", kind=exc.kind, message=exc.message, retryable=exc.retryable))
        except Exception as exc:  # a bug: keep the thread usable and say so
            log.exception("run %s of thread %s failed", run_id, thread_id)
            status = "failed"
            emit(make_event("error", kind="internal", message=f"Cellwright failed: {type(exc).__name__}: {exc}", retryable=False))
        finally:
            self._active.pop(thread_id, None)
            if await self.threads.get(thread_id) is not None:
                emit(make_event("run_finished", status=status))
                await emit.drain()
                await self.threads.update(thread_id, status=status)

    async def _stop_task(self, thread_id: str) -> None:
        run = self._active.get(thread_id)
        if run is None:
            return
        run.task.cancel()
        await asyncio.wait([run.task])

    async def _close_open_call(self, thread_id: str, emit: "EventPump") -> bool:
        """After a stop, answer the call the tools step was on (pending approval, or cut off while
        running) with its recorded outcome, so the thread is consistent and the call never runs again."""
        from agent_core.graph import appended

        graph = await self.graph()
        snapshot = await self._snapshot(thread_id)
        if snapshot.next != ("tools",):
            return False
        call = snapshot.values["messages"][-1]["tool_calls"][0]
        ledger = self._agent_store.ledger
        outcome = await ledger.lookup(thread_id, call["id"])
        if outcome is None or outcome.content == INTERRUPTED.content:
            outcome = STOPPED
            await ledger.finished(thread_id, call["id"], outcome)
        tool_message = {"role": "tool", "tool_call_id": call["id"], "content": outcome.content}
        await graph.aupdate_state(self._config(thread_id), {"messages": appended(tool_message), "done": True}, as_node="tools")
        name = call["function"]["name"]
        emit(make_event("tool_result", id=call["id"], name=name, status=outcome.status, summary=outcome.display_summary))
        return True

    async def _redrive_if_stuck(self, record: ThreadRecord) -> None:
        """A crash between saving the model's step and raising the approval interrupt leaves a
        tools step with no interrupt: drive it again so the approval is asked."""
        if record.thread_id in self._active:
            return
        snapshot = await self._snapshot(record.thread_id)
        if snapshot.next == ("tools",) and not snapshot.interrupts:
            log.info("re-driving thread %s from its saved tools step", record.thread_id)
            self._launch(record, None, self._settings(), mode="single", message="")
            await asyncio.wait([self._active[record.thread_id].task])

    async def _snapshot(self, thread_id: str) -> Any:
        graph = await self.graph()
        return await graph.aget_state(self._config(thread_id))

    @staticmethod
    def _pending(snapshot: Any) -> dict[str, Any] | None:
        for pending in snapshot.interrupts:
            if isinstance(pending.value, dict) and "id" in pending.value:
                return dict(pending.value)
        return None

    def _status(self, record: ThreadRecord, pending: dict[str, Any] | None) -> str:
        if record.thread_id in self._active:
            return "running"
        if pending is not None:
            return "awaiting_approval"
        return record.status

    @staticmethod
    def _config(thread_id: str) -> dict[str, Any]:
        return {"configurable": {"thread_id": thread_id}}


class EventPump:
    """The run's event sink: a sync call for the agent, appended to the thread's log in order by a
    task of its own, so events emitted while the run is being cancelled are still kept."""

    def __init__(self, threads: ThreadStore, thread_id: str, run_id: str) -> None:
        self._threads = threads
        self._thread_id = thread_id
        self._run_id = run_id
        self._queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self._task = asyncio.create_task(self._pump())

    def __call__(self, event: dict[str, Any]) -> None:
        self._queue.put_nowait({"agent": "main", **event, "run_id": self._run_id})

    async def drain(self) -> None:
        self._queue.put_nowait(None)
        await asyncio.shield(self._task)

    async def _pump(self) -> None:
        while (event := await self._queue.get()) is not None:
            await self._threads.append(self._thread_id, event)


def _check_decision(body: dict[str, Any]) -> dict[str, Any]:
    decision = body.get("decision")
    if decision not in DECISIONS:
        raise BadRequest(f"decision must be one of {list(DECISIONS)}, not {decision!r}.", "bad_decision")
    if decision == "edit" and not isinstance(body.get("args"), dict):
        raise BadRequest('An "edit" decision needs "args": the edited arguments as an object.', "bad_args")
    reason = body.get("reason")
    if reason is not None and not isinstance(reason, str):
        raise BadRequest('"reason" must be a string.', "bad_request")
    return {"decision": decision, "args": body.get("args"), "reason": reason or ""}


def _approval_event(payload: dict[str, Any]) -> dict[str, Any]:
    fields = {k: v for k, v in payload.items() if k != "agent"}
    return {**make_event("approval_required", **fields), "agent": payload.get("agent", "main")}


def _view_message(message: dict[str, Any]) -> dict[str, Any]:
    view: dict[str, Any] = {"role": message.get("role"), "content": message.get("content") or ""}
    if message.get("tool_calls"):
        from agent_core.graph import parse_args

        view["tool_calls"] = [
            {"id": c["id"], "name": c["function"]["name"], "args": parse_args(c["function"]["arguments"])[0]}
            for c in message["tool_calls"]
        ]
    if message.get("tool_call_id"):
        view["tool_call_id"] = message["tool_call_id"]
    return view


def _title(message: str) -> str:
    line = " ".join(message.split())
    return line if len(line) <= 60 else line[:57] + "..."
