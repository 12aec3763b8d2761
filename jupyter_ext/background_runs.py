"""The run manager's side of long cells (issue 38): a run whose cell went on in the background ended
as waiting_for_cell; this drives it on when the cell ends (a callback of agent_core's
BackgroundSteps, tab open or not), when the user continues without waiting, or at start-up for a
step a restart cut off (its cell followed again when its kernel outlived the server: cell_reattach.py).
A message sent meanwhile is kept for the model; Stop interrupts the cell."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

from agent_core.json_types import JsonObject
from agent_core.storage.event_log import seq_of
from agent_core.storage.thread_store import ThreadRecord

from .errors import Conflict

if TYPE_CHECKING:
    from agent_core.loop.background_steps import BackgroundSteps

    from .cell_reattach import LostCell, ReattachedKernel
    from .run_manager import RunManager

log = logging.getLogger(__name__)


class BackgroundRuns:
    """The run manager's helper for background steps: it drives runs on through the manager's locks,
    tasks and runner."""

    def __init__(self, manager: RunManager) -> None:
        self._manager = manager
        self._background: BackgroundSteps | None = None
        self._resumes: set[asyncio.Task[None]] = set()
        self._driving_on: set[str] = set()  # between the cell's end and the next segment's task: still busy
        self._preloading: asyncio.Future[None] | None = None

    def steps(self) -> BackgroundSteps:
        """Made with the runner (agent_core's loop loads on first use, not at server start)."""
        if self._background is None:
            from agent_core.loop.background_steps import BackgroundSteps

            self._background = BackgroundSteps(self._manager.threads.events, self._cell_ended)
        return self._background

    def waiting_for_cell(self, thread_id: str) -> bool:
        return thread_id in self._driving_on or (self._background is not None and self._background.waiting(thread_id))

    def waits(self, record: ThreadRecord) -> bool:
        """The thread's run waits for a cell, as stored (until recovery at start drives it on) or here."""
        return record.status == "waiting_for_cell" or self.waiting_for_cell(record.thread_id)

    def refuse_if_waiting(self, thread_id: str) -> None:
        if self.waiting_for_cell(thread_id):
            raise Conflict(
                "This thread's run waits for a cell running in the background: press Stop, or continue without "
                "waiting, first.",
                "run_active",
            )

    async def queue_if_waiting(self, record: ThreadRecord, message: str) -> str | None:
        """POST runs while the thread waits for a cell (`record`: the owner's, as the route read it):
        the message is kept for the model, given with the cell's outcome; the waiting run's id, or
        None when the thread is not waiting."""
        thread_id = record.thread_id
        async with self._manager._thread_locks[thread_id]:
            queued = self._background is not None and self._background.queue(thread_id, message)
            return record.last_run_id if queued else None

    async def continue_without_waiting(self, thread_id: str) -> str:
        """POST threads/{id}/continue: the model gets the cell's output so far and goes on."""
        async with self._manager._thread_locks[thread_id]:
            if self._background is None or not self._background.let_go(thread_id):
                raise Conflict(
                    "This thread is not waiting for a cell (or the cell has just ended and the agent goes on).",
                    "conflict",
                )
            return await self._drive_on(thread_id)

    async def stop_background(self, thread_id: str) -> bool:
        """Stop: the background cell (waited for, or one the run went on without) is interrupted; the
        caller ends the run as for a pending call."""
        return self._background is not None and await self._background.stop(thread_id)

    def _cell_ended(self, thread_id: str) -> None:
        task = asyncio.create_task(self._resume(thread_id))
        self._resumes.add(task)
        task.add_done_callback(self._resumes.discard)

    async def _resume(self, thread_id: str) -> None:
        try:
            async with self._manager._thread_locks[thread_id]:
                await self._drive_on(thread_id)
        except Exception:  # the thread stays waiting_for_cell; a restart or a new message drives it on
            log.exception("Cellwright could not resume thread %s after its cell ended", thread_id)

    async def _drive_on(self, thread_id: str) -> str:
        """Under the thread's lock: once the run that sent the cell has ended, the next segment."""
        manager = self._manager
        self._driving_on.add(thread_id)  # event streams stay open until the next segment is active
        try:
            task = manager._active.get(thread_id)
            if task is not None:  # the run that sent the cell is still writing its run_finished
                await asyncio.wait([task])
            messages = await self.steps().resuming(thread_id)
            settings = manager._settings()
            run = await (await manager.runner()).after_background(
                thread_id,
                manager._environment(settings),
                settings,
                "\n\n".join(messages),
                manager._on_released(thread_id),
            )
            return manager._launch(run)
        finally:
            self._driving_on.discard(thread_id)

    async def recover_waiting(self, record: ThreadRecord) -> None:
        """At start-up, a thread a restart left waiting_for_cell: its cell is followed again when its
        kernel outlived the restart (the run goes on when the cell ends); otherwise the run goes on
        at once with what can be said."""
        from agent_core.tools.background import KERNEL_DIED_MEANWHILE, UNFOLLOWED

        self._preload_model_client()
        if await self._follow_again(record):
            return
        # A kernel the server knows again (a gateway's) but could not follow; else it died with the server.
        kernel_alive = await self._manager.environment_of(record).kernel_identity() is not None
        self.steps().orphaned(record.thread_id, UNFOLLOWED if kernel_alive else KERNEL_DIED_MEANWHILE)
        await self._drive_on(record.thread_id)

    def _preload_model_client(self) -> None:
        """The model's SDK imported in a worker thread, once: the run resumed when the cell ends is
        this process's first model request, and its imports (measured: 2-5 s on a loaded machine)
        would otherwise sit between the cell's end and the request."""
        if self._preloading is None:
            from agent_core.llm.sdk_clients import preload

            self._preloading = asyncio.ensure_future(asyncio.to_thread(preload))

    async def _follow_again(self, record: ThreadRecord) -> bool:
        """Follow the thread's lost cell again in a kernel left by the server that died
        (jupyter_ext.cell_reattach): its events go on into the log under the waiting run's id."""
        from agent_core.tools.background import BackgroundStep, EmitRelay
        from agent_core.tools.base import CellPlacement, ToolOutcome
        from agent_core.tools.notebook import still_running

        from .cell_reattach import follow_again, lost_cell

        cell = lost_cell(await self._log_of(record.thread_id))
        kernel = await self._found_again(record, cell) if cell is not None else None
        if cell is None or kernel is None:
            return False
        log.info("Cellwright follows again cell %s of thread %s after the restart", cell.call_id, record.thread_id)
        relay = EmitRelay(lambda _event: None, cell.call_id)  # held until run_ended redirects it to the log
        relay.outputs.extend(cell.outputs)
        relay.hold()
        since = time.monotonic()

        def so_far() -> ToolOutcome:
            return still_running(relay.outputs, CellPlacement(cell.cell_id), time.monotonic() - since)

        task = asyncio.create_task(follow_again(kernel, cell, relay))
        self.steps().follow(BackgroundStep(record.thread_id, cell.call_id, task, relay, so_far))
        self.steps().run_ended(record.thread_id, record.last_run_id)
        return True

    async def _found_again(self, record: ThreadRecord, cell: LostCell) -> ReattachedKernel | None:
        """The lost cell's kernel, if it outlived the server: asked of the Kernel Gateway (and
        registered with the kernel manager), or found through the connection file a local one left."""
        from .cell_reattach import reattached
        from .gateway_reattach import is_gateway, reattached_on_gateway

        serverapp = getattr(self._manager.parent, "serverapp", None)
        kernel_manager = getattr(serverapp, "kernel_manager", None)
        if is_gateway(kernel_manager) and serverapp is not None:
            sessions = serverapp.session_manager
            return await reattached_on_gateway(kernel_manager, sessions, cell.kernel_id, record.notebook_path)
        return await reattached(str(getattr(kernel_manager, "connection_dir", "") or ""), cell.kernel_id)

    async def _log_of(self, thread_id: str) -> list[JsonObject]:
        """The thread's whole event log (read once, at start-up, for a thread left waiting)."""
        events: list[JsonObject] = []
        while page := await self._manager.threads.events.events_after(thread_id, seq_of(events[-1]) if events else 0):
            events += page
        return events
