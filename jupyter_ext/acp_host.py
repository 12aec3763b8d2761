"""Hosting outside ACP agents (c.Cellwright.acp_agents), one agent process and session per thread:
each message is a session/prompt whose updates become the thread's events (stored and replayed as
our own agent's), each permission request and file write an approval card decided through the
approvals route, Stop a session/cancel. A process that dies, hangs or breaks the protocol ends the
run with an `agent_process` error and is started afresh on the next message."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agent_core.contract import make_event
from agent_core.json_types import JsonObject
from agent_core.loop.event_pump import EventPump
from agent_core.loop.refusals import ThreadBusy
from agent_core.workspace import Workspace

from .acp_always import AlwaysAllowed
from .acp_client import ThreadClient, UserDecision, new_card_id
from .acp_process import AgentGone, AgentProcess, McpOffer, start
from .acp_sessions import SavedSessions
from .acp_terminals import Terminals
from .acp_undo import HostedWrites
from .acp_watch import Watch
from .errors import BadRequest, Conflict
from .mcp_tokens import McpTokens

if TYPE_CHECKING:
    from agent_core.config.acp_agents import AcpAgentConfig
    from agent_core.contract.bodies import Decision
    from agent_core.contract.choices import RunStatus
    from agent_core.messages import Preimage
    from agent_core.storage.thread_store import ThreadRecord, ThreadStore

log = logging.getLogger(__name__)

START_TIMEOUT = 60.0  # seconds for the process to answer initialize and session/new (or session/load)
STOP_GRACE = 5.0  # seconds an agent has to end its turn after session/cancel before it is killed
MAX_CARDS_PER_RUN = 200  # permission requests (asked or always allowed) beyond it are answered cancelled
MAX_EVENTS_PER_RUN = 5000  # what an agent's updates may add to the log in one turn; the rest is dropped


@dataclass
class _Pending:
    event: JsonObject
    decided: asyncio.Future[UserDecision]


@dataclass
class HostedThread:
    """One thread's agent: its process (started on the first message), its run, its open card."""

    thread_id: str
    config: AcpAgentConfig
    workspace: Workspace
    threads: ThreadStore
    idle_timeout: Callable[[], float]
    command_timeout: Callable[[], float]
    sessions: SavedSessions
    writes: HostedWrites
    allowed: AlwaysAllowed  # the kinds of request the user allows unasked here (until cleared; kept on disk)
    mcp: McpOffer | None = None
    client: ThreadClient = field(init=False)
    terminals: Terminals = field(init=False)
    watch: Watch = field(init=False)  # what the agent's own commands change, for undo
    agent_process: AgentProcess | None = None
    pump: EventPump | None = None
    task: asyncio.Task[None] | None = None
    renewing: asyncio.Task[None] | None = None  # the thread's lease, renewed while the turn goes on
    run_id: str = ""
    active: bool = False  # from the message until its run_finished is written (readers follow it meanwhile)
    paused: bool = False  # a card is open: the segment ended awaiting_approval, the agent's turn goes on
    held: list[Any] = field(default_factory=list)  # what the agent sends while paused
    pending: _Pending | None = None
    stopped: bool = False
    cards: int = 0
    events: int = 0  # this turn's
    last_activity: float = 0.0
    _asking: asyncio.Lock = field(default_factory=asyncio.Lock)

    had_turns: bool = False  # the thread has earlier turns: a new process does not remember them

    def __post_init__(self) -> None:
        self.client = ThreadClient(self)
        self.terminals = Terminals(self.workspace, self.command_timeout, self.ask)
        self.watch = Watch(
            self.workspace, lambda card, images, lost: self.writes.keep(self.thread_id, card, images, lost)
        )

    # -- the sink the ACP client reports to

    def emit(self, event: Any) -> None:
        self.events += 1
        if self.events == MAX_EVENTS_PER_RUN:  # a flood: said once, then dropped
            event = make_event(
                "error",
                kind="agent_process",
                message=f"{self.config.name} sent more than {MAX_EVENTS_PER_RUN} updates in this turn: "
                "the rest are not shown.",
                retryable=False,
            )
        elif self.events > MAX_EVENTS_PER_RUN and event.get("type") not in ("approval_required", "tool_result"):
            return
        if self.pump is not None:
            self.pump(event)
        elif self.paused and len(self.held) < 1000:
            self.held.append(event)

    def open_segment(self, message: str = "", run_id: str = "") -> str:
        """A new segment of the run (its start, or after a decision), as our own agent's runs have."""
        self.run_id = run_id or uuid.uuid4().hex
        self.pump = EventPump(self.threads.events, self.thread_id, self.run_id, agent=self.config.name)
        # A segment after a decision starts with no message, as our own agent's resumed ones do.
        self.pump(make_event("run_started", mode="single", message=message))
        self.paused = False
        held, self.held = self.held, []
        for event in held:
            self.pump(event)
        return self.run_id

    def activity(self) -> None:
        self.last_activity = asyncio.get_running_loop().time()

    async def ask(self, card: JsonObject) -> UserDecision:
        """One card at a time; the agent waits for the user's decision, however long it takes. A kind
        the user allowed with "always" in this thread is allowed unasked, and the thread says so."""
        async with self._asking:
            if self.stopped or self.pump is None:
                return UserDecision(False, stopped=True)
            self.cards += 1  # requests allowed unasked count too: each is a step in the log
            if self.cards > MAX_CARDS_PER_RUN:
                return UserDecision(False, reason="too many permission requests in one turn", stopped=True)
            kind = card.get("always")
            if isinstance(kind, str) and kind in self.allowed.kinds(self.thread_id, self.config):
                return self._allowed_unasked(card, kind)
            event: JsonObject = {
                "type": "approval_required",
                "id": new_card_id(),
                **card,
            }  # card: the contract's fields
            self.pending = _Pending(event, asyncio.get_running_loop().create_future())
            self.emit(event)
            await self.threads.update(self.thread_id, status="awaiting_approval")
            # The segment ends here, as our own agent's does: readers see the card and the stream closes.
            pump, self.pump, self.paused = self.pump, None, True
            pump(make_event("run_finished", status="awaiting_approval"))
            await pump.drain()
            try:
                decision = dataclasses.replace(await self.pending.decided, card_id=str(event["id"]))
            finally:
                self.pending = None
            summary = "approved" if decision.approved else (decision.reason or "rejected")[:500]
            if decision.approved and decision.always and isinstance(kind, str):
                self.allowed.add(self.thread_id, self.config, kind)
                summary = f"approved, and always allowed for {kind} requests in this thread"
            self.emit(
                make_event(
                    "tool_result",
                    id=str(event["id"]),
                    name=str(event["name"]),
                    status="ok" if decision.approved else "rejected",
                    summary=summary,
                    stopped=decision.stopped,
                )
            )
            await self.threads.update(self.thread_id, status="running")
            self.activity()
            return decision

    def _allowed_unasked(self, card: JsonObject, kind: str) -> UserDecision:
        """A request of a kind the user always allows here: shown as a step, answered without a card."""
        step = new_card_id()
        args = card["args"] if isinstance(card["args"], dict) else {}
        self.emit(make_event("tool_call", id=step, name=str(card["name"]), args=args, needs_approval=False))
        summary = f"allowed unasked: you chose always for {kind} requests in this thread"
        self.emit(make_event("tool_result", id=step, name=str(card["name"]), status="ok", summary=summary))
        self.activity()
        return UserDecision(True, card_id=step, always=True)

    def wrote(self, card_id: str, image: Preimage) -> None:
        self.writes.keep(self.thread_id, card_id, [image])
        self.watch.wrote(image["path"])

    # -- the agent process

    async def session(self) -> AgentProcess:
        """The agent's process, started on the first message (taking up its earlier session where it can)."""
        if self.agent_process is None:
            earlier = self.sessions.get(self.thread_id, self.config.name) if self.had_turns else ""
            started = await asyncio.wait_for(
                start(self.config, self.client, self.workspace.root, self.mcp, earlier), START_TIMEOUT
            )
            self.agent_process = started
            if not started.loaded:
                self.sessions.put(self.thread_id, self.config.name, started.session_id)
        return self.agent_process

    async def close_process(self) -> None:
        """End the agent process (killed if it does not go) and its MCP token: the next message starts a new one."""
        await self.terminals.close()
        hosted, self.agent_process = self.agent_process, None
        if hosted is not None:
            await hosted.close()

    # -- a run: one message, one session/prompt

    async def drive(self, message: str) -> None:
        from acp import text_block

        status: RunStatus = "completed"
        loop = asyncio.get_running_loop()
        try:
            fresh = self.agent_process is None
            hosted = await self.session()
            if fresh and self.had_turns and not hosted.loaded:  # say what the agent lost
                self.emit(
                    make_event(
                        "error",
                        kind="agent_process",
                        message=f"{self.config.name} was started afresh: it does not remember this thread's earlier "
                        "turns (its process ended). They are still shown here.",
                        retryable=False,
                    )
                )
            self.had_turns = True
            self.activity()
            prompt = asyncio.ensure_future(
                hosted.conn.prompt(session_id=hosted.session_id, prompt=[text_block(message)])
            )
            exited = asyncio.ensure_future(hosted.process.wait())
            try:
                while True:
                    idle = self.idle_timeout()
                    done, _ = await asyncio.wait({prompt, exited}, timeout=min(1.0, idle))
                    if prompt in done:
                        if prompt.result().stop_reason == "cancelled" or self.stopped:
                            status = "cancelled"
                        break
                    if exited in done:
                        raise AgentGone(f"the agent process exited (code {exited.result()}) before it answered")
                    # Silent while a card waits, or while a tool call of its own runs (an MCP call to us
                    # waiting for the user's approval), is not hung.
                    waiting = self.pending is not None or self.client.open_calls > 0
                    if not waiting and loop.time() - self.last_activity > idle:
                        raise AgentGone(f"the agent sent nothing for {idle:g} s; it was stopped")
            finally:
                for future in (prompt, exited):
                    future.cancel()
        except asyncio.CancelledError:
            status = "cancelled"
        except Exception as exc:  # a dead, hung or broken agent: said, and started afresh next time
            status = "cancelled" if self.stopped else "failed"
            if not self.stopped:
                if isinstance(exc, AgentGone):
                    why = str(exc)
                elif isinstance(exc, ConnectionError):  # its stdout closed: it exited or broke the pipe
                    why = "the agent process exited or closed its connection before it answered"
                else:
                    why = f"{type(exc).__name__}: {str(exc)[:500]}"
                self.emit(
                    make_event(
                        "error",
                        kind="agent_process",
                        message=f"{self.config.name}: {why}. Send a message to start it again.",
                        retryable=True,
                    )
                )
            await self.close_process()
        finally:
            await self._finish(status)

    async def _finish(self, status: RunStatus) -> None:
        try:  # a command the turn left open: what it changed is kept for undo before the run ends
            await self.watch.settle()
        except Exception:
            log.exception("%s: the files its last command changed could not be compared", self.config.name)
        pump, self.pump, self.active = self.pump, None, False  # readers close at the run_finished below
        try:
            await self.threads.update(self.thread_id, status=status)
        finally:  # released before run_finished, as our own runs do: a client acting on it finds the thread free
            if self.renewing is not None:
                self.renewing.cancel()
            await self.threads.release_lease(self.thread_id)
        if pump is not None:
            pump(make_event("run_finished", status=status))
            await pump.drain()


class AcpHost:
    """The hosted threads of one server (made on first use; their processes end with it)."""

    def __init__(
        self,
        threads: ThreadStore,
        workspace: Workspace,
        idle_timeout: Callable[[], float],
        command_timeout: Callable[[], float],
        sessions: SavedSessions,
        writes: HostedWrites,
        allowed: AlwaysAllowed,
        mcp_url: str | None,
    ) -> None:
        self._store = threads
        self._workspace = workspace
        self._idle_timeout = idle_timeout
        self._command_timeout = command_timeout
        self._sessions = sessions
        self._writes = writes
        self._allowed = allowed
        self._hosted: dict[str, HostedThread] = {}
        self.tokens = McpTokens()  # the hosted agents' tokens for our MCP endpoint (jupyter_ext.mcp_handler)
        # our MCP endpoint, offered to each agent as the owner of the threads
        self._mcp = McpOffer(mcp_url, self.tokens, threads.owner) if mcp_url else None

    def is_running(self, thread_id: str) -> bool:
        hosted = self._hosted.get(thread_id)
        return hosted is not None and hosted.active and not hosted.paused

    def pending(self, thread_id: str) -> JsonObject | None:
        hosted = self._hosted.get(thread_id)
        if hosted is None or hosted.pending is None:
            return None
        return {k: v for k, v in hosted.pending.event.items() if k not in ("type", "seq", "thread_id", "run_id")}

    async def start_run(self, record: ThreadRecord, config: AcpAgentConfig, message: str) -> str:
        busy = self._hosted.get(record.thread_id)
        if busy is not None and busy.active:  # running, or waiting for a decision
            raise Conflict("A run of this thread is active: wait for it to finish or press Stop.", "run_active")
        if busy is not None and busy.task is not None:  # its run_finished is written: only its task ends now
            await asyncio.wait({busy.task})
        hosted = busy
        if hosted is None or hosted.config != config:
            if hosted is not None:
                await hosted.close_process()
            hosted = HostedThread(
                record.thread_id,
                config,
                self._workspace,
                self._store,
                self._idle_timeout,
                self._command_timeout,
                self._sessions,
                self._writes,
                self._allowed,
                self._mcp,
            )
            self._hosted[record.thread_id] = hosted
        # The thread's lease, as our own runs take it, held for the whole turn (its cards too: the agent's
        # process is here): another server of the owner on a shared database, or a kernel's %agent, is
        # refused meanwhile, and this run is refused while one of theirs holds it.
        run_id = uuid.uuid4().hex
        if not await self._store.begin_run(record.thread_id, status="running", last_run_id=run_id):
            raise ThreadBusy(await self._store.leased_elsewhere(record.thread_id) or "another process")
        hosted.renewing = self._store.keep_lease(record.thread_id)
        hosted.had_turns = hosted.had_turns or bool(record.last_run_id)
        hosted.stopped, hosted.cards, hosted.events, hosted.active = False, 0, 0, True
        hosted.client.new_run()
        hosted.open_segment(message, run_id)
        hosted.task = asyncio.create_task(hosted.drive(message))
        return run_id

    async def decide(self, thread_id: str, call_id: str, decision: Decision) -> str:
        hosted = self._hosted.get(thread_id)
        if hosted is None or hosted.pending is None or hosted.pending.event["id"] != call_id:
            raise Conflict(f"{call_id[:200]!r} is not the call waiting for a decision.", "not_pending")
        if decision.decision == "edit":
            raise BadRequest("An outside agent's request can be approved or rejected, not edited.", "bad_decision")
        always = bool(decision.always)
        if always and (decision.decision != "approve" or not hosted.pending.event.get("always")):
            raise BadRequest("always is for approving a request that offers it (its card's `always`).", "bad_decision")
        if not hosted.pending.decided.done():
            run_id = hosted.open_segment()
            await self._store.update(thread_id, status="running", last_run_id=run_id)
            hosted.pending.decided.set_result(
                UserDecision(decision.decision == "approve", decision.reason or "", always=always)
            )
        return hosted.run_id

    async def undo(self, record: ThreadRecord, agent: str, card_id: str) -> JsonObject:
        """Undo one approved file write of the thread (kept on disk: also after a restart)."""
        thread_id = record.thread_id
        hosted = self._hosted.get(thread_id)
        if hosted is not None and hosted.active:
            raise Conflict(
                "A run of this thread is active: undo its steps once it has finished or stopped.", "run_active"
            )
        restored, removed, not_undone = self._writes.undo(thread_id, card_id)
        pump = EventPump(self._store.events, thread_id, record.last_run_id, agent=agent)
        pump(make_event("step_undone", id=card_id, restored=restored, removed=removed, not_undone=not_undone))
        await pump.drain()
        return {"restored": restored, "removed": removed, "not_undone": not_undone}

    async def cancel(self, thread_id: str) -> None:
        """Stop: open cards answered cancelled, session/cancel, and the process killed if it does not end its turn."""
        hosted = self._hosted.get(thread_id)
        if hosted is None or hosted.task is None or hosted.task.done():
            return
        hosted.stopped = True
        if hosted.pending is not None and not hosted.pending.decided.done():
            hosted.open_segment()
            hosted.pending.decided.set_result(UserDecision(False, "stopped by the user", stopped=True))
        if hosted.agent_process is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(
                    hosted.agent_process.conn.cancel(session_id=hosted.agent_process.session_id), 1.0
                )
        done, _ = await asyncio.wait({hosted.task}, timeout=STOP_GRACE)
        if not done:
            await hosted.close_process()
            hosted.task.cancel()
            await asyncio.wait({hosted.task})

    async def forget(self, thread_id: str) -> None:
        """The thread is deleted: its run stopped, its process ended, its session no longer to be loaded."""
        await self._end(thread_id)
        self._sessions.drop(thread_id)
        self._writes.drop(thread_id)
        self._allowed.clear(thread_id)

    async def _end(self, thread_id: str) -> None:
        await self.cancel(thread_id)
        hosted = self._hosted.pop(thread_id, None)
        if hosted is not None:
            await hosted.close_process()

    async def shutdown(self) -> None:
        """The server stops: every process ends; their sessions stay saved, for session/load after the restart."""
        for thread_id in list(self._hosted):
            await self._end(thread_id)
