"""The one driver of a thread, for the server and the in-kernel `%agent` magic alike: start,
resume with a decision, stop, recover after a crash, and the lease that lets one process drive a
thread at a time. Events go into the thread's log, approvals come out of interrupts, and a stop
leaves the thread consistent. Who owns the asyncio task (the server's RunManager, or the magic's
worker thread) and how a refusal is shown (HTTP status, or a line in the cell) is the caller's."""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Awaitable, Callable

from .checkpoint import AgentStore, open_store
from .event_pump import EventPump
from .contract import make_event
from .thread_store import ThreadStore
from .tool_ledger import INTERRUPTED, STOPPED

log = logging.getLogger(__name__)


class RunRefused(Exception):
    """The thread cannot do what was asked right now; `kind` is the error kind of API.md."""

    kind = "conflict"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ThreadBusy(RunRefused):
    """Another process (the server, or a kernel's %agent) is driving this thread right now."""

    kind = "run_active"

    def __init__(self, holder: str, action: str = "start another run") -> None:
        super().__init__(
            f"{holder[:1].upper()}{holder[1:]} is running this thread right now: wait for it to finish "
            f"(or interrupt that kernel) before you {action}."
        )


class ApprovalPending(RunRefused):
    kind = "approval_pending"


class NotPending(RunRefused):
    kind = "not_pending"


class BadDecision(RunRefused):
    kind = "bad_args"


ContextFactory = Callable[[EventPump], Any]  # builds the run's RunContext around its event sink


@dataclass
class ThreadRunner:
    """The compiled graph with its persistence and the thread store, and what can be done to a thread."""

    graph: Any
    store: AgentStore
    threads: ThreadStore

    @classmethod
    async def open(cls, threads: ThreadStore, checkpointer_url: str, default_path: Path) -> "ThreadRunner":
        from .graph import build_graph

        store = await open_store(checkpointer_url, default_path, threads.database)
        return cls(build_graph(store.saver), store, threads)

    async def aclose(self) -> None:
        from .llm import close_clients

        await self.store.aclose()
        await close_clients()

    @staticmethod
    def config(thread_id: str) -> dict[str, Any]:
        return {"configurable": {"thread_id": thread_id}}

    async def snapshot(self, thread_id: str) -> Any:
        return await self.graph.aget_state(self.config(thread_id), subgraphs=True)

    @staticmethod
    def pending(snapshot: Any) -> dict[str, Any] | None:
        """The approval the thread waits for, if any (also one raised inside a sub-agent)."""
        for interrupt in snapshot.interrupts:
            if isinstance(interrupt.value, dict) and "id" in interrupt.value:
                return {**interrupt.value, "interrupt_id": interrupt.id}
        return None

    @staticmethod
    def stuck(snapshot: Any) -> bool:
        """A crash between saving the model's step and raising its approval interrupt leaves a
        tools step with no interrupt: driving the thread again (input None) asks for approval."""
        return snapshot.next == ("tools",) and not snapshot.interrupts

    # -- what a caller checks before it drives

    async def ensure_not_leased(self, thread_id: str, action: str = "start another run") -> None:
        holder = await self.threads.leased_elsewhere(thread_id)
        if holder:
            raise ThreadBusy(holder, action)

    async def recovered(self, thread_id: str, drive: Callable[[], Awaitable[Any]]) -> Any:
        """The thread's snapshot, after `drive()` (a segment with input None) if a crash left it
        between a saved step and its approval request (read once: a hot path)."""
        snapshot = await self.snapshot(thread_id)
        if self.stuck(snapshot):
            await drive()
            snapshot = await self.snapshot(thread_id)
        return snapshot

    def start_input(self, snapshot: Any, message: str, mode: str, autonomy: str = "agent") -> Any:
        """The graph input that starts a run with `message`; refused while an approval is pending."""
        from .graph import new_run_input

        if self.pending(snapshot):
            raise ApprovalPending(
                "This thread is waiting for your approval of a tool call: approve or reject it (or press Stop) first."
            )
        return new_run_input(message, mode, autonomy=autonomy)

    @staticmethod
    async def with_context(
        graph_input: Any, message: str, env: Any, settings: Any, kernel_seen: str | None = None,
        notes_before: list[dict[str, Any]] | None = None,
    ) -> tuple[Any, list[dict[str, Any]]]:
        """A new run's input with the context its message's @mentions (or the namespace snapshot)
        resolve to, a note when the kernel restarted since the thread's last cell (`kernel_seen`),
        after `notes_before` (e.g. the steps the user undid), and the mentions for `run_started`.
        Never fails the run: context is a help."""
        from .graph import new_run_input
        from .mentions import context_for

        notes: list[dict[str, Any]] = list(notes_before or [])
        mentions: list[Any] = []
        kernel_now = None
        try:
            context, mentions = await context_for(message, env, settings)
            notes += [context] if context is not None else []
            kernel_now = await env.kernel_identity() if kernel_seen else None
            notes += restart_note(kernel_seen, kernel_now)
        except Exception:
            log.exception("the context of a run could not be resolved")
        public = [m.public() for m in mentions]
        if not notes:
            return graph_input, public
        told = {"kernel_identity": kernel_now} if kernel_now else {}  # said once, not at every run after
        return {**new_run_input(message, graph_input.get("mode", "single"), notes, graph_input.get("autonomy", "agent")), **told}, public

    def resume_input(self, snapshot: Any, call_id: str, decision: dict[str, Any]) -> Any:
        """The graph input that applies `decision` (approve / edit / reject) to the pending call
        `call_id`: refused if that call is not the one pending, or if edited arguments do not fit."""
        from langgraph.types import Command

        from .tools import TOOLS

        pending = self.pending(snapshot)
        if pending is None or pending["id"] != call_id:
            now = f"the pending one is {pending['id']!r}" if pending else "nothing is pending"
            raise NotPending(f"Tool call {call_id!r} is not awaiting approval ({now}). Reload the thread.")
        if decision["decision"] == "edit":
            spec = TOOLS.get(pending["name"])  # an MCP or notebook tool's arguments are checked when it runs
            problem = spec.check_args(decision.get("args")) if spec is not None else None
            if problem:
                raise BadDecision(f"The edited arguments do not fit: {problem}.")
        return Command(resume={pending["interrupt_id"]: decision})

    @staticmethod
    def mode_of(snapshot: Any) -> str:
        return str((snapshot.values or {}).get("mode", "single"))

    @staticmethod
    def autonomy_of(snapshot: Any) -> str:
        return str((snapshot.values or {}).get("autonomy", "agent"))

    # -- driving

    async def run_segment(
        self, thread_id: str, run_id: str, graph_input: Any, make_context: ContextFactory, mode: str, message: str,
        on_event: Callable[[dict[str, Any]], None] | None = None, mentions: list[dict[str, Any]] | None = None,
        autonomy: str = "agent",
    ) -> str:  # fmt: skip
        """One segment of a run: until the graph ends, pauses for approval, fails or is cancelled.
        Returns the run_finished status; every event is in the thread's log when it returns."""
        from .agents import agent_for_mode
        from .llm import LLMError

        if not await self.threads.begin_run(thread_id, status="running", last_run_id=run_id):
            raise ThreadBusy(await self.threads.leased_elsewhere(thread_id) or "another process")
        renewing = asyncio.create_task(self._renew_lease(thread_id))
        emit = EventPump(self.threads, thread_id, run_id, agent_for_mode(mode).name, on_event)
        status = "completed"
        run_usage: dict[str, Any] | None = None
        try:
            started = {"mentions": mentions} if mentions else {}
            emit(make_event("run_started", mode=mode, autonomy=autonomy, message=message, **started))
            async for chunk in self.graph.astream(
                graph_input, self.config(thread_id), context=make_context(emit), stream_mode="updates", durability="sync"
            ):
                for interrupt in chunk.get("__interrupt__", ()):
                    emit(approval_event(interrupt.value))
                    status = "awaiting_approval"
                for update in chunk.values():
                    if isinstance(update, dict) and update.get("run_usage"):
                        run_usage = update["run_usage"]
        except asyncio.CancelledError:
            status = "cancelled"
            await self.close_open_call(thread_id, emit)
        except LLMError as exc:
            status = "failed"
            emit(make_event("error", kind=exc.kind, message=exc.message, retryable=exc.retryable))
        except Exception as exc:  # a bug: keep the thread usable and say so
            log.exception("run %s of thread %s failed", run_id, thread_id)
            status = "failed"
            emit(make_event("error", kind="internal", message=f"Cellwright failed: {type(exc).__name__}: {exc}", retryable=False))
        finally:
            try:
                if await self.threads.get(thread_id) is not None:
                    from .usage import public

                    totals = {"usage": public(run_usage)} if run_usage and run_usage["prompt_tokens"] else {}
                    emit(make_event("run_finished", status=status, **totals))
                    await emit.drain()
                    await self.threads.update(thread_id, status=status)
            finally:  # a failed save must not leave the thread leased to nobody for 30 s
                renewing.cancel()
                await self.threads.release_lease(thread_id)
        return status

    async def _renew_lease(self, thread_id: str) -> None:
        from .thread_store import LEASE_SECONDS

        while True:
            await asyncio.sleep(LEASE_SECONDS / 3)
            await self.threads.take_lease(thread_id)

    async def stop_pending(self, thread_id: str, run_id: str) -> bool:
        """Stop a thread that waits for approval: the call is answered as stopped and never runs."""
        emit = EventPump(self.threads, thread_id, run_id)
        closed = await self.close_open_call(thread_id, emit)
        if closed:
            emit(make_event("run_finished", status="cancelled"))
            await self.threads.update(thread_id, status="cancelled")
        await emit.drain()
        return closed

    async def close_open_call(self, thread_id: str, emit: Callable[[dict[str, Any]], None]) -> bool:
        """After a stop, answer the call the tools step was on (pending approval, or cut off while
        running) with its recorded outcome, so the thread is consistent and the call never runs again."""
        from .graph import appended

        snapshot = await self.graph.aget_state(self.config(thread_id))
        if snapshot.next != ("tools",):
            return False
        call = snapshot.values["messages"][-1]["tool_calls"][0]
        ledger = self.store.ledger
        outcome = await ledger.lookup(thread_id, call["id"])
        if outcome is None or outcome.content == INTERRUPTED.content:
            outcome = STOPPED
            await ledger.finished(thread_id, call["id"], outcome)
        tool_message = {"role": "tool", "tool_call_id": call["id"], "content": outcome.content}
        await self.graph.aupdate_state(self.config(thread_id), {"messages": appended(tool_message), "done": True}, as_node="tools")
        name = call["function"]["name"]
        stopped = outcome.content == STOPPED.content
        emit(make_event("tool_result", id=call["id"], name=name, status=outcome.status, summary=outcome.display_summary, stopped=stopped))
        return True

    async def delete_thread(self, thread_id: str) -> None:
        await self.store.delete_thread(thread_id)
        await self.threads.delete(thread_id)


def restart_note(kernel_seen: str | None, kernel_now: str | None) -> list[dict[str, Any]]:
    """A context message when the kernel that ran the thread's last cell is not the one running now
    (the user restarted it, or the server came back with a new one): its variables are gone."""
    from .mentions import CONTEXT_KEY

    if not kernel_seen or kernel_now is None or kernel_now == kernel_seen:
        return []
    text = (
        "[The notebook's kernel restarted since your last cell ran: every variable, import and loaded dataset from "
        "before is gone. Re-run the cells you need before you use them.]"
    )
    return [{"role": "user", "content": text, CONTEXT_KEY: True}]


def approval_event(payload: dict[str, Any]) -> dict[str, Any]:
    fields = {k: v for k, v in payload.items() if k != "agent"}
    return {**make_event("approval_required", **fields), "agent": payload.get("agent", "main")}


def view_message(message: dict[str, Any]) -> dict[str, Any]:
    """A state message as GET threads/{id} shows it."""
    from .graph import parse_args

    view: dict[str, Any] = {"role": message.get("role"), "content": message.get("content") or ""}
    if message.get("tool_calls"):
        view["tool_calls"] = [
            {"id": c["id"], "name": c["function"]["name"], "args": parse_args(c["function"]["arguments"])[0]}
            for c in message["tool_calls"]
        ]
    if message.get("tool_call_id"):
        view["tool_call_id"] = message["tool_call_id"]
    return view


def title_from(message: str) -> str:
    line = " ".join(message.split())
    return line if len(line) <= 60 else line[:57] + "..."
