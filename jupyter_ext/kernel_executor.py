"""Runs approved cells in a notebook's kernel over jupyter-client: execute_request out, iopub
messages back as `cell_output` events, execute_reply closes the cell. Cancel interrupts the kernel;
a dead kernel ends the cell with a clear error, never a hang."""

from __future__ import annotations

import ast
import asyncio
import json
import queue
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from agent_core.contract import CellStatus, EventDict, make_event
from agent_core.contract.event_fields import ErrorEventDict
from agent_core.json_types import JsonObject, json_object
from agent_core.tools import CellPlacement, CellRun, ToolInputError
from agent_core.tools.base import Emit, cell_finished
from agent_core.tools.cell_progress import ProgressReader

from .cell_start import BUSY_NOTICE_SECONDS, CellStart, cell_started
from .iopub_outputs import kernel_died, outputs_of_burst, read_widgets, waiting_messages, went_idle
from .kernel_clients import (
    KernelChannels,
    KernelClients,
    KernelManagerProtocol,
    MappingKernelManagerProtocol,
    connected_client,
    is_remote,
    process_of,
)
from .kernel_evaluations import KernelEvaluations, evaluate_once, shell_reply
from .kernel_history import session_inputs
from .kernel_restarts import KernelRestarts
from .kernel_state import BUSY_GRACE_SECONDS, busy, idle_within

if TYPE_CHECKING:
    from jupyter_server.services.sessions.sessionmanager import SessionManager

    from agent_core.tools.base import ShadowKernel
    from agent_core.workspace import Workspace

POLL_SECONDS = 1.0
INTERRUPT_GRACE_SECONDS = 1.5  # how long a cell may take to stop after an interrupt before the next
MAX_INTERRUPTS = 3
READY_SECONDS = 10.0
KERNEL_DIED = "The kernel died while running this cell (out of memory?). Restart it and try again."
KERNEL_RESTARTED = (
    "The kernel died while running this cell (out of memory?) and was restarted: its variables are gone. "
    "Re-run the cells you need, then try again."
)


class NoKernel(ToolInputError):
    """No kernel to run in: the model is told, and so is the user."""


@dataclass
class KernelEnvironment:
    """The ToolEnvironment of a server-side run: the notebook's kernel, found at the moment a cell runs."""

    kernel_manager: MappingKernelManagerProtocol
    session_manager: SessionManager
    root_dir: Path
    notebook_path: str
    kernel_id: str | None = None
    cell_timeout: float | None = None
    # An agent_core.workspace.Workspace built from the server's configuration (allow_hidden, its data
    # and runtime folders); None falls back to the safe default for root_dir.
    workspace: Workspace | None = None
    # The server's kept kernel clients (kernel_clients.KernelClients); None: a client per cell.
    clients: KernelClients | None = None
    # The server's kept evaluation clients; None: a client per evaluation.
    evaluations: KernelEvaluations | None = None
    # Restarts made through the server (kernel_restarts.KernelRestarts): a gateway kernel's identity.
    restarts: KernelRestarts | None = None
    # Under jupyter-collaboration: a notebook's cells from its shared document (shared_notebook.py).
    shared: Callable[[str], Awaitable[list[JsonObject] | None]] | None = None
    # The server's bound on shadow kernels running at once (verify_notebook): a check waits for a slot.
    shadow_slots: asyncio.Semaphore | None = None

    async def shared_cells(self) -> list[JsonObject] | None:
        """agent_core's HasSharedNotebook: what edit_cell checks and diffs against."""
        if self.shared is None or not self.notebook_path:
            return None
        return await self.shared(self.notebook_path)

    async def resolve_kernel(self) -> str:
        if self.kernel_id and self.kernel_id in self.kernel_manager:
            return self.kernel_id
        # After a restart the notebook has a new kernel: find it through its session.
        for session in await self.session_manager.list_sessions():
            kernel = session.get("kernel") or {}
            if (
                self.notebook_path
                and session.get("path") == self.notebook_path
                and kernel.get("id") in self.kernel_manager
            ):
                return kernel["id"]
        target = self.notebook_path or "this thread (no notebook)"
        raise NoKernel(f"no kernel for {target}: open the notebook or start its kernel, then ask again")

    # The panel writes this run's cells into the notebook, edited ones too.
    edits_cells = True

    async def run_cell(self, call_id: str, code: str, emit: Emit, placement: CellPlacement | None = None) -> CellRun:
        kernel_id = await self.resolve_kernel()
        manager = self.kernel_manager.get_kernel(kernel_id)
        if self.clients is None:
            client = await connected_client(manager, outputs=True)
            try:
                waited = await self._wait_for_turn(client, manager, kernel_id, call_id, code, emit, placement=placement)
                return await self._execute(client, manager, kernel_id, call_id, code, emit, placement, waited)
            finally:
                client.stop_channels()
        shared = await self.clients.get(kernel_id, manager, self.kernel_manager)
        started, queued, turn_taken = time.monotonic(), shared.turn.locked(), False
        if queued:  # another run's cell is on this kernel
            emit(cell_started(call_id, code, self.notebook_path, kernel_id, None, placement))
        try:
            async with shared.turn:
                turn_taken = True
                restarts = self.restarts.count(kernel_id) if self.restarts is not None else 0
                waited = await self._wait_for_turn(
                    shared.client,
                    manager,
                    kernel_id,
                    call_id,
                    code,
                    emit,
                    ready=not await shared.needs_ready(manager, restarts, BUSY_GRACE_SECONDS),
                    placement=placement,
                )
                shared.mark_ready(manager, restarts)
                return await self._execute(
                    shared.client, manager, kernel_id, call_id, code, emit, placement, queued or waited
                )
        except asyncio.CancelledError:
            if queued and not turn_taken:  # stopped before its turn: it never ran
                emit(cell_finished(call_id, "aborted", None, started))
            raise
        finally:
            self.clients.done(kernel_id, shared)

    def shadow_kernel(self, notebook_path: str, kernel_name: str | None) -> AbstractAsyncContextManager[ShadowKernel]:
        """agent_core's HasShadowKernel (verify_notebook): a fresh kernel beside the notebook's."""
        # jupyter_ext.shadow_kernel imports this module
        from .shadow_kernel import shadow_kernel

        return shadow_kernel(
            self.kernel_manager,
            self.session_manager,
            self.root_dir,
            self.workspace,
            notebook_path,
            kernel_name,
            self.shadow_slots,
        )

    async def kernel_busy(self) -> bool:
        """Whether the notebook's kernel is running a cell now: an evaluation would wait behind it.
        The state the server tracks from iopub lags the shell's reply: our own evaluation a moment
        ago still shows as busy until its "idle" is read (one IPython answered: the quick path's
        answers to read-only probes publish no status). So a busy
        kernel gets BUSY_GRACE_SECONDS to turn idle, woken by the state's change, not polled: a
        50 ms poll here was most of a run's time to first token with a kernel. An evaluation of ours
        in flight gets the same grace to be answered: one sent just before a user's cell started
        waits behind that cell, and a probe queued behind it would wait its whole time limit."""
        try:
            kernel_id = await self.resolve_kernel()
        except NoKernel:
            return False
        if self.evaluations is not None:
            if self.evaluations.joinable(kernel_id):
                return False  # the request about to leave: this evaluation travels in it
            if not await self.evaluations.answered_within(kernel_id, BUSY_GRACE_SECONDS):
                return True
        return not await self._idle_within(kernel_id, self.kernel_manager.get_kernel(kernel_id))

    async def _idle_within(self, kernel_id: str, manager: KernelManagerProtocol) -> bool:
        """idle_within BUSY_GRACE_SECONDS; for a gateway kernel, from the cells' kept websocket when its
        own iopub shows the kernel idle (asking costs a websocket and two kernel_info round trips)."""
        if self.clients is not None and await self.clients.turns_idle(kernel_id, BUSY_GRACE_SECONDS):
            return True
        return await idle_within(manager, BUSY_GRACE_SECONDS)

    async def kernel_history(self, n: int) -> list[tuple[int, str]]:
        """The last `n` inputs of the kernel's current session as (execution count, source), oldest
        first. A busy kernel would answer only after its cell: ToolInputError instead of a wait."""
        kernel_id = await self.resolve_kernel()
        manager = self.kernel_manager.get_kernel(kernel_id)
        # With the grace kernel_busy gives: an evaluation of ours a moment ago that IPython answered (on a
        # kernel without the quick path) still shows busy until its "idle" is read: the history came back refused.
        if not await self._idle_within(kernel_id, manager):
            raise ToolInputError("the kernel is busy running a cell")
        return await session_inputs(self.evaluations, kernel_id, manager, self.kernel_manager, n)

    def ask_ahead(self, expressions: list[str]) -> None:
        """agent_core's AsksAhead: the kernel named for this run gets them now (one found only through
        the notebook's session is left to the evaluations themselves: finding it is a wait). Not a
        kernel that runs a cell: they would wait behind it, and the run asks for nothing then."""
        if self.evaluations is None or not self.kernel_id or self.kernel_id not in self.kernel_manager:
            return
        manager = self.kernel_manager.get_kernel(self.kernel_id)
        if manager.execution_state != "busy":
            self.evaluations.ask_ahead(self.kernel_id, manager, self.kernel_manager, expressions)

    async def evaluate_json(self, expression: str) -> Any:
        kernel_id = await self.resolve_kernel()
        manager = self.kernel_manager.get_kernel(kernel_id)
        if not await manager.is_alive():
            raise NoKernel(f"the kernel of {self.notebook_path or kernel_id} is not running: restart it and try again")
        if self.evaluations is None:
            value = await evaluate_once(manager, expression)
        else:
            value = await self.evaluations.evaluate(kernel_id, manager, self.kernel_manager, expression)
        if not value:
            raise ToolInputError("the kernel did not answer within 30 s: it may be busy running a cell")
        if value.get("status") != "ok":
            raise ToolInputError(f"the kernel could not evaluate it: {value.get('ename')}: {value.get('evalue')}")
        return json.loads(ast.literal_eval(str(json_object(value["data"])["text/plain"])))

    async def _wait_for_turn(
        self,
        client: KernelChannels,
        manager: KernelManagerProtocol,
        kernel_id: str,
        call_id: str,
        code: str,
        emit: Emit,
        ready: bool = False,
        placement: CellPlacement | None = None,
    ) -> bool:
        """Wait while the kernel runs another cell (the user's), then until our client is connected.
        An approved cell waits as a queued cell would, however long; a Stop meanwhile leaves the
        other cell alone, as this one has not been sent. True when its cell_started said it waits."""
        started = time.monotonic()
        waiting = False
        # A gateway's execution_state can stay "busy" for good once it restarted a kernel that died
        # (seen: its watch of the kernel's iopub is not renewed). So for a gateway kernel, busy is a
        # kernel_info request not answered at once: the kernel answers it after the cell it runs.
        remote = is_remote(manager)
        try:
            while True:
                while not remote and await busy(manager):
                    # A silent evaluation of ours (an undo snapshot, tool discovery) that just ended
                    # can still read as busy until the server sees its "idle": only a kernel busy
                    # for longer is another cell to wait for, and said so.
                    if not waiting and time.monotonic() - started >= BUSY_NOTICE_SECONDS:
                        waiting = True
                        emit(cell_started(call_id, code, self.notebook_path, kernel_id, None, placement))
                    if not await manager.is_alive():
                        raise NoKernel(
                            f"the kernel of {self.notebook_path or kernel_id} died while the cell waited for it"
                        )
                    try:  # a status change wakes us early
                        await client.get_iopub_msg(timeout=POLL_SECONDS if waiting else BUSY_NOTICE_SECONDS)
                    except queue.Empty:
                        pass
                if ready:  # a kept client already proved its iopub connected to this kernel process
                    return waiting
                try:
                    # Checks that iopub is connected, so no output of the cell is missed; answered
                    # at once by an idle kernel, so it only fails when a user's cell started meanwhile.
                    await client.wait_for_ready(
                        timeout=BUSY_NOTICE_SECONDS if remote and not waiting else READY_SECONDS
                    )
                    return waiting
                except RuntimeError:
                    if not await manager.is_alive():
                        raise NoKernel(
                            f"the kernel of {self.notebook_path or kernel_id} is not running: restart it and try again"
                        ) from None
                    if remote and not waiting:
                        waiting = True
                        emit(cell_started(call_id, code, self.notebook_path, kernel_id, None, placement))
                except ConnectionError as exc:  # a gateway's websocket could not be made anew
                    raise NoKernel(
                        f"the connection to the kernel of {self.notebook_path or kernel_id} was lost ({exc}): the "
                        "cell did not run; run it again"
                    ) from None
        except (asyncio.CancelledError, NoKernel):
            if waiting:
                emit(cell_finished(call_id, "aborted", None, started))
            raise

    async def _execute(
        self,
        client: KernelChannels,
        manager: KernelManagerProtocol,
        kernel_id: str,
        call_id: str,
        code: str,
        emit: Emit,
        placement: CellPlacement | None = None,
        said_waiting: bool = False,
    ) -> CellRun:
        """Send the cell and follow it to its end; `said_waiting`: its cell_started said it waits."""
        started = time.monotonic()
        outputs: list[JsonObject] = []
        start = CellStart(
            lambda msg_id, waiting: emit(
                cell_started(call_id, code, self.notebook_path, kernel_id, msg_id, placement, waiting)
            ),
            said_waiting,
        )

        def cell_emit(event: EventDict) -> None:  # the cell's own events come after its cell_started
            start.said()
            emit(event)

        for _attempt in range(2):
            msg_id = client.execute(code, store_history=True, allow_stdin=False)
            start.sent(msg_id)
            try:
                status, count = await self._collect(
                    client, manager, msg_id, call_id, outputs, cell_emit, started, start
                )
            except asyncio.CancelledError:
                stopped = await self._interrupt_until_stopped(client, kernel_id, msg_id)
                cell_emit(cell_finished(call_id, "aborted", None, started))
                if not stopped:
                    emit(_unresponsive(kernel_id))
                raise
            except _KernelGone:
                status, count = "error", None
            except asyncio.TimeoutError:
                stopped = await self._interrupt_until_stopped(client, kernel_id, msg_id)
                outputs.append(
                    _error_output("CellTimeout", f"Interrupted after the cell time-out of {self.cell_timeout} s.")
                )
                cell_emit(make_event("cell_output", id=call_id, output=outputs[-1]))
                if not stopped:
                    emit(_unresponsive(kernel_id))
                status, count = "error", None
            # ipykernel aborts a request that arrives in its stop-on-error window, just after an
            # interrupted cell's error (TESTING.md): that one never ran, so it is sent once more.
            if not (status == "aborted" and not outputs and count is None):
                break
        cell_emit(cell_finished(call_id, status, count, started))
        return CellRun(status, outputs, count, int((time.monotonic() - started) * 1000))

    async def _interrupt_until_stopped(self, client: KernelChannels, kernel_id: str, msg_id: str) -> bool:
        """Interrupt until this cell's execution ends (the kernel went idle for it). A SIGINT can
        be lost under load (seen on CI), so one interrupt is not proof; a few, then give up."""
        for _ in range(MAX_INTERRUPTS):
            await self.kernel_manager.interrupt_kernel(kernel_id)
            deadline = time.monotonic() + INTERRUPT_GRACE_SECONDS
            while (remaining := deadline - time.monotonic()) > 0:
                try:
                    msg = await client.get_iopub_msg(timeout=remaining)
                except queue.Empty:
                    break
                except ConnectionError:  # a gateway's websocket closed: no "idle" can come any more
                    return False
                if msg.get("parent_header", {}).get("msg_id") == msg_id and went_idle(msg):
                    return True
        return False

    async def _collect(
        self,
        client: KernelChannels,
        manager: KernelManagerProtocol,
        msg_id: str,
        call_id: str,
        outputs: list[JsonObject],
        emit: Emit,
        started: float,
        start: CellStart,
    ) -> tuple[CellStatus, int | None]:
        """Forward this cell's outputs until the kernel is idle again; then read its reply. Its `\\r`
        redraws and progress widgets become coalesced `cell_progress` events (issue 38)."""
        reply: JsonObject | None = None
        process = process_of(manager)
        progress = ProgressReader(call_id)
        try:
            while True:
                try:
                    msg = await client.get_iopub_msg(timeout=(wait := start.timeout(POLL_SECONDS)))
                except queue.Empty:
                    if wait < POLL_SECONDS:  # only the waiting notice was due: not a quiet poll interval
                        start.quiet()
                        continue
                    if event := progress.event():  # the last redraw of a bar that went quiet
                        emit(event)
                    await self._check_alive(manager, process, call_id, outputs, emit, started)
                    # iopub is a broadcast: a kernel that prints faster than it is read overflows the
                    # socket's queue, and the dropped messages can include the "idle" that ends the
                    # cell (seen with 20 000 flushed lines). The reply on shell is never dropped: with
                    # it in and iopub quiet for a whole poll interval after it, the cell is over. A reply
                    # found only now may have overtaken the cell's last output: a gateway relays shell and
                    # iopub apart (seen: a first cell's only line lost on a loaded machine).
                    if reply is not None:
                        break
                    reply = await shell_reply(client, msg_id, timeout=0)
                    continue
                burst = [msg, *await waiting_messages(client)]
                start.saw(burst, msg_id)
                fresh, idle = outputs_of_burst(burst, msg_id)
                read_widgets(progress, burst, msg_id)
                for output in fresh:
                    kept = progress.stream(output) if output["output_type"] == "stream" else output
                    if kept is not None:
                        outputs.append(kept)
                        emit(make_event("cell_output", id=call_id, output=kept))
                if event := progress.event():
                    emit(event)
                if idle:
                    break
                # A gateway restarts a kernel that died at once and keeps calling it alive: the status
                # its websocket sends then is the only sign that this cell's process is gone.
                if any(kernel_died(m) for m in burst):
                    self._gone(call_id, outputs, emit, "KernelDied", KERNEL_RESTARTED)
            reply = reply or await self._reply(client, msg_id)
            for output in progress.finish():  # a bar's last state stays in the cell, as a terminal shows it
                outputs.append(output)
                emit(make_event("cell_output", id=call_id, output=output))
        except ConnectionError as exc:  # a gateway's websocket closed: nothing more of this cell can come
            self._gone(call_id, outputs, emit, "KernelConnectionLost", f"The connection to the kernel ended: {exc}.")
        status: CellStatus = (
            "ok" if reply.get("status") == "ok" else ("aborted" if reply.get("status") == "aborted" else "error")
        )
        count = reply.get("execution_count")
        return status, count if isinstance(count, int) else None

    async def _check_alive(
        self,
        manager: KernelManagerProtocol,
        process: object,
        call_id: str,
        outputs: list[JsonObject],
        emit: Emit,
        started: float,
    ) -> None:
        """End the cell if the kernel process that runs it is gone: dead, or already replaced by the
        kernel manager's auto-restart (which can come between two polls: alive, but not this cell's)."""
        if not await manager.is_alive():
            self._gone(call_id, outputs, emit, "KernelDied", KERNEL_DIED)
        if process is not None and process_of(manager) is not process:
            self._gone(call_id, outputs, emit, "KernelDied", KERNEL_RESTARTED)
        if self.cell_timeout is not None and time.monotonic() - started > self.cell_timeout:
            raise asyncio.TimeoutError

    def _gone(self, call_id: str, outputs: list[JsonObject], emit: Emit, name: str, message: str) -> NoReturn:
        """End the cell: its kernel is gone, and the model and the user are told why."""
        outputs.append(_error_output(name, message))
        emit(make_event("cell_output", id=call_id, output=outputs[-1]))
        raise _KernelGone()

    async def _reply(self, client: KernelChannels, msg_id: str, timeout: float = 10) -> JsonObject:
        return await shell_reply(client, msg_id, timeout) or {"status": "error"}

    async def kernel_identity(self) -> str | None:
        try:
            kernel_id = await self.resolve_kernel()
        except NoKernel:
            return None
        process = process_of(self.kernel_manager.get_kernel(kernel_id))
        pid = getattr(process, "pid", None)
        if pid is not None:
            return f"{kernel_id}:{pid}"
        # A gateway's kernel keeps its id across a restart: the restarts seen stand in for its process.
        return f"{kernel_id}:restart{self.restarts.count(kernel_id)}" if self.restarts is not None else kernel_id

    async def kernel_pid(self) -> int | None:
        """The pid of the kernel's local process (None for a kernel that runs elsewhere); NoKernel without one."""
        kernel_id = await self.resolve_kernel()
        pid = getattr(process_of(self.kernel_manager.get_kernel(kernel_id)), "pid", None)
        return pid if isinstance(pid, int) else None

    async def restart_kernel(self) -> str:
        kernel_id = await self.resolve_kernel()
        try:
            await self.kernel_manager.restart_kernel(kernel_id)
        except Exception as exc:  # a kernel that will not come back: the model and the user are told
            raise ToolInputError(f"the kernel could not be restarted: {type(exc).__name__}: {exc}") from None
        if self.restarts is not None:
            await self.restarts.settled()  # the tool's kernel_identity, asked next, is the new kernel's
        return "The kernel restarted: every variable, import and loaded dataset is gone. Re-run the cells you need."


class _KernelGone(Exception):
    pass


def _unresponsive(kernel_id: str) -> ErrorEventDict:
    message = (
        f"The kernel is still busy after {MAX_INTERRUPTS} interrupts: the cell ignores them (a long call in C code, "
        "or a handler that swallows KeyboardInterrupt). Restart the kernel to stop it; its variables will be lost."
    )
    return make_event("error", kind="kernel_unresponsive", message=message, retryable=False, kernel_id=kernel_id)


def _error_output(name: str, message: str) -> JsonObject:
    return {"output_type": "error", "ename": name, "evalue": message, "traceback": [f"{name}: {message}"]}
