"""Runs are asyncio tasks owned by this manager, not by an HTTP request: a closed tab does not stop
the agent. One run per thread at a time (two resumes of one approval would run the tool twice)."""
from __future__ import annotations

import asyncio
import logging
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable

from agent_core.route_bodies import Decision
from agent_core.settings import AgentSettings
from agent_core.thread_store import ThreadRecord, ThreadStore
from agent_core.tools import ToolEnvironment

from .errors import BadRequest, Conflict, NotFound

log = logging.getLogger(__name__)

EnvFactory = Callable[[str, str | None, AgentSettings], ToolEnvironment]


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
        self._runtime: Any = None
        self._runtime_lock = asyncio.Lock()
        self._active: dict[str, asyncio.Task[str]] = {}
        self._thread_locks: defaultdict[str, asyncio.Lock] = defaultdict(asyncio.Lock)

    async def runtime(self) -> Any:
        """The graph and its checkpointer, opened on first use: the server starts without langgraph."""
        async with self._runtime_lock:
            if self._runtime is None:
                from agent_core.runner import AgentRuntime

                self._runtime = await AgentRuntime.open(self.threads, self._checkpointer_url, self._default_checkpoint_path)
        return self._runtime

    async def graph(self) -> Any:
        return (await self.runtime()).graph

    async def shutdown(self) -> None:
        for thread_id in list(self._active):
            await self._stop_task(thread_id)
        if self._runtime is not None:
            await self._runtime.aclose()

    # -- threads

    async def thread(self, thread_id: str) -> ThreadRecord:
        record = await self.threads.get(thread_id)
        if record is None:
            raise NotFound(f"There is no thread {thread_id!r}. List threads with GET cellwright/api/threads.", "thread_not_found")
        return record

    async def thread_detail(self, thread_id: str) -> dict[str, Any]:
        """The thread as it is: a read never drives a run (recovery is for start-up and POSTs)."""
        from agent_core.runner import view_message

        record = await self.thread(thread_id)
        runtime = await self.runtime()
        snapshot = await runtime.snapshot(thread_id)
        values = snapshot.values or {}
        pending = runtime.pending(snapshot)
        return {
            **record.public(),
            "status": self._status(record, pending),
            "messages": [view_message(m) for m in values.get("messages", [])],
            "todos": values.get("todos", []),
            "pending_approval": _public_pending(pending),
        }

    async def list_threads(self) -> list[dict[str, Any]]:
        return [{**r.public(), "status": self._status(r, None)} for r in await self.threads.list()]

    async def delete_thread(self, thread_id: str) -> None:
        await self.thread(thread_id)
        async with self._thread_locks[thread_id]:
            await self._refuse_if_leased_elsewhere(thread_id, "delete it")
            await self._stop_task(thread_id)
            await (await self.runtime()).delete_thread(thread_id)
        self._thread_locks.pop(thread_id, None)

    async def recover(self) -> None:
        """Drive on the threads a crash left between a saved step and its approval request, so
        their approval shows again. Runs once at start-up, in the background."""
        for record in await self.threads.list():
            if record.status != "running" or record.thread_id in self._active:
                continue
            async with self._thread_locks[record.thread_id]:
                if not await self.threads.leased_elsewhere(record.thread_id):
                    await self._redrive_if_stuck(record)

    # -- runs

    async def start_run(self, thread_id: str, message: str, notebook_path: str | None, kernel_id: str | None, mode: str) -> str:
        from agent_core.graph import new_run_input
        from agent_core.llm import not_configured
        from agent_core.runner import title_from

        record = await self.thread(thread_id)
        settings = self._settings()
        if not settings.llm_configured:
            raise BadRequest(not_configured().message, "llm_not_configured")
        async with self._thread_locks[thread_id]:
            await self._ensure_free(thread_id)
            runtime = await self.runtime()
            if runtime.pending(await self._redrive_if_stuck(record)):
                raise Conflict(
                    "This thread is waiting for your approval of a tool call: approve or reject it (or press Stop) first.",
                    "approval_pending",
                )
            updates = {"notebook_path": notebook_path} if notebook_path is not None else {}
            if kernel_id is not None:
                updates["kernel_id"] = kernel_id
            if record.title in ("", "New thread"):
                updates["title"] = title_from(message)
            if updates:
                await self.threads.update(thread_id, **updates)
            record = await self.thread(thread_id)
            return self._launch(record, new_run_input(message, mode), settings, mode, message)

    async def decide(self, thread_id: str, call_id: str, body: Decision) -> str:
        from langgraph.types import Command

        from agent_core.tools import TOOLS

        record = await self.thread(thread_id)
        if body.decision == "edit" and body.args is None:
            raise BadRequest('An "edit" decision needs "args": the edited arguments as an object.', "bad_args")
        decision = {"decision": body.decision, "args": body.args, "reason": body.reason or ""}
        async with self._thread_locks[thread_id]:
            await self._ensure_free(thread_id, "This thread's run is still going; the approval is not pending any more.")
            runtime = await self.runtime()
            snapshot = await self._redrive_if_stuck(record)
            pending = runtime.pending(snapshot)
            if pending is None or pending["id"] != call_id:
                now = f"the pending one is {pending['id']!r}" if pending else "nothing is pending"
                raise Conflict(f"Tool call {call_id!r} is not awaiting approval ({now}). Reload the thread.", "not_pending")
            if decision["decision"] == "edit":
                problem = TOOLS[pending["name"]].check_args(decision.get("args"))
                if problem:
                    raise BadRequest(f"The edited arguments do not fit: {problem}.", "bad_args")
            if body.kernel_id:
                await self.threads.update(thread_id, kernel_id=body.kernel_id)
                record = await self.thread(thread_id)
            mode = (snapshot.values or {}).get("mode", "single")
            resume = Command(resume={pending["interrupt_id"]: decision})
            return self._launch(record, resume, self._settings(), mode, "")

    async def cancel(self, thread_id: str) -> None:
        record = await self.thread(thread_id)
        async with self._thread_locks[thread_id]:
            if thread_id in self._active:
                await self._stop_task(thread_id)  # the run closes its open call itself
                return
            await self._refuse_if_leased_elsewhere(thread_id, "stop it")
            await (await self.runtime()).stop_pending(thread_id, record.last_run_id)

    def is_running(self, thread_id: str) -> bool:
        return thread_id in self._active

    # -- internals

    async def _ensure_free(self, thread_id: str, message: str = "") -> None:
        if thread_id in self._active:
            raise Conflict(message or "A run of this thread is active: wait for it to finish or press Stop.", "run_active")
        await self._refuse_if_leased_elsewhere(thread_id, "start another run")

    async def _refuse_if_leased_elsewhere(self, thread_id: str, action: str) -> None:
        holder = await self.threads.leased_elsewhere(thread_id)
        if holder:
            raise Conflict(
                f"{holder[:1].upper()}{holder[1:]} is running this thread right now: wait for it to finish "
                f"(or interrupt that kernel) before you {action}.",
                "run_active",
            )

    def _launch(self, record: ThreadRecord, graph_input: Any, settings: AgentSettings, mode: str, message: str) -> str:
        run_id = uuid.uuid4().hex
        env = self._env_factory(record.notebook_path, record.kernel_id or None, settings)
        task = asyncio.create_task(self._drive(record, run_id, graph_input, settings, env, mode, message))
        self._active[record.thread_id] = task
        return run_id

    async def _drive(
        self, record: ThreadRecord, run_id: str, graph_input: Any, settings: AgentSettings, env: ToolEnvironment, mode: str, message: str
    ) -> str:
        from agent_core.graph import run_context

        from agent_core.runner import ThreadBusy

        runtime = await self.runtime()
        try:
            make_context = lambda emit: run_context(record.thread_id, settings, env, runtime.store.ledger, emit, record.notebook_path, mode)  # noqa: E731
            return await runtime.run_segment(record.thread_id, run_id, graph_input, make_context, mode, message)
        except ThreadBusy as exc:  # a kernel took the thread between our check and the start
            log.warning("%s", exc)
            return "failed"
        finally:
            self._active.pop(record.thread_id, None)
            self.threads.wake(record.thread_id)  # event streams close once the run is over

    async def _stop_task(self, thread_id: str) -> None:
        task = self._active.get(thread_id)
        if task is not None:
            task.cancel()
            await asyncio.wait([task])

    async def _redrive_if_stuck(self, record: ThreadRecord) -> Any:
        """The thread's snapshot, after driving it on if a crash left it stuck (read once: hot path)."""
        runtime = await self.runtime()
        snapshot = await runtime.snapshot(record.thread_id)
        if record.thread_id not in self._active and runtime.stuck(snapshot):
            mode = (snapshot.values or {}).get("mode", "single")
            self._launch(record, None, self._settings(), mode, "")
            await asyncio.wait([self._active[record.thread_id]])
            snapshot = await runtime.snapshot(record.thread_id)
        return snapshot

    def _status(self, record: ThreadRecord, pending: dict[str, Any] | None) -> str:
        if record.thread_id in self._active:
            return "running"
        if pending is not None:
            return "awaiting_approval"
        return record.status


def _public_pending(pending: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if pending is None else {k: v for k, v in pending.items() if k != "interrupt_id"}
