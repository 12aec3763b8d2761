"""Following again, after a server restart, a cell that ran in the background (issue 38) in a kernel
that outlived the server: a kernel launched without watching its parent process (a supervisor's, a
remote provisioner's), whose connection file the dead server left in the runtime folder.

Nothing runs in the kernel. A kernel_info request on the control channel (answered at once, even
while a cell runs) proves the kernel alive and our iopub subscribed (its status comes there too).
The cell's further outputs and its "idle" come on iopub under its execute_request's msg_id (its
`cell_started` recorded it); a history request on shell, which the kernel answers only once it is
done with the cell, gives the cell's execution count and source, and tells a cell that ended while
the server was down (its reply comes with no "idle" of the cell before it).

A kernel on a Kernel Gateway is found again through the gateway instead (gateway_reattach.py): both
are a ReattachedKernel to follow_again."""

from __future__ import annotations

import asyncio
import queue
import re
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, cast

from jupyter_client.asynchronous.client import AsyncKernelClient

from agent_core.contract import CellStatus, make_event
from agent_core.json_types import JsonObject, json_items
from agent_core.output_digest import digest
from agent_core.tools.background import KERNEL_DIED_MEANWHILE
from agent_core.tools.base import Emit, ToolOutcome, cell_finished
from agent_core.tools.cell_progress import ProgressReader

from .iopub_outputs import outputs_of_burst, read_widgets, waiting_messages, went_idle
from .kernel_evaluations import shell_reply

if TYPE_CHECKING:
    from .kernel_clients import KernelChannels, KernelMessage

PROVE_SECONDS = 10.0  # a kernel whose control port listens but does not answer within this is taken for dead
POLL_SECONDS = 1.0
INTERRUPT_GRACE_SECONDS = 3.0
_KERNEL_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


class ReattachedKernel(Protocol):
    """A kernel found again after a restart, whichever host runs it: its channels (shell and iopub),
    a request on its control channel (answered while a cell runs), and how it is stopped."""

    @property
    def channels(self) -> KernelChannels: ...

    def ask_on_control(self, msg_type: str) -> str: ...

    def alive(self) -> bool: ...

    async def interrupt(self) -> None: ...

    def stop(self) -> None: ...


class LocalKernel:
    """A local kernel found through its connection file: no kernel manager holds its process."""

    def __init__(self, client: AsyncKernelClient) -> None:
        self.client = client

    @property
    def channels(self) -> KernelChannels:
        return cast("KernelChannels", self.client)  # jupyter-client types its messages dict[str, Any]

    def ask_on_control(self, msg_type: str) -> str:
        asked = self.client.session.msg(msg_type)
        self.client.control_channel.send(asked)
        return str(asked["header"]["msg_id"])

    def alive(self) -> bool:
        return _listening(self.client)

    async def interrupt(self) -> None:
        self.ask_on_control("interrupt_request")

    def stop(self) -> None:
        self.client.stop_channels()


@dataclass
class LostCell:
    """What the thread's log holds of the background cell a restart cut off."""

    call_id: str
    kernel_id: str
    msg_id: str
    code: str
    cell_id: str
    outputs: list[JsonObject] = field(default_factory=list)  # those seen before the restart


def lost_cell(events: list[JsonObject]) -> LostCell | None:
    """The last cell the log shows started and not finished, with its outputs so far; None if the
    log does not know its kernel and request (a cell of an older server, or one that never ran)."""
    cell: LostCell | None = None
    for event in events:
        kind, call_id = event.get("type"), str(event.get("id", ""))
        if kind == "cell_started" and event.get("kernel_msg_id") and event.get("kernel_id"):
            cell = LostCell(
                call_id,
                str(event["kernel_id"]),
                str(event["kernel_msg_id"]),
                str(event.get("code", "")),
                str(event.get("cell_id") or ""),
            )
        elif cell is not None and call_id == cell.call_id and kind == "cell_output":
            output = event.get("output")
            if isinstance(output, dict):
                cell.outputs.append(output)
        elif cell is not None and call_id == cell.call_id and kind == "cell_finished":
            cell = None
    return cell


def is_kernel_id(kernel_id: str) -> bool:
    """A kernel id as Jupyter makes them (a UUID): our own record, still checked before it names a file or URL."""
    return _KERNEL_ID.fullmatch(kernel_id) is not None


async def reattached(connection_dir: str, kernel_id: str) -> LocalKernel | None:
    """The kernel `kernel_id` left by the server that died, proven alive with iopub subscribed; None
    when its connection file is gone or nothing answers on it."""
    if not is_kernel_id(kernel_id) or not connection_dir:
        return None
    path = Path(connection_dir) / f"kernel-{kernel_id}.json"
    if not path.is_file():
        return None
    client = AsyncKernelClient()
    try:
        client.load_connection_file(str(path))
    except (OSError, ValueError):
        return None
    if not _listening(client):
        return None  # a dead kernel's ports refuse at once: no need to wait for an answer
    client.start_channels(shell=True, iopub=True, stdin=False, hb=False, control=True)
    kernel = LocalKernel(client)
    if await proven(kernel):
        return kernel
    kernel.stop()
    return None


def _listening(client: AsyncKernelClient) -> bool:
    """Whether the kernel's control port takes connections (a process listens); an ipc kernel: its socket file."""
    if client.transport != "tcp":
        return Path(f"{client.ip}-{client.control_port}").exists()
    try:
        with socket.create_connection((client.ip, client.control_port), timeout=1):
            return True
    except OSError:
        return False


async def proven(kernel: ReattachedKernel) -> bool:
    """A control kernel_info answered, and its status seen on iopub (a subscription starts late: ask again)."""
    deadline = time.monotonic() + PROVE_SECONDS
    while time.monotonic() < deadline:
        asked = kernel.ask_on_control("kernel_info_request")
        until = min(deadline, time.monotonic() + 0.5)
        while (left := until - time.monotonic()) > 0:
            try:
                msg = await kernel.channels.get_iopub_msg(timeout=left)
            except (queue.Empty, ConnectionError):
                break
            if _parent(msg) == asked:
                return True
    return False


async def follow_again(kernel: ReattachedKernel, cell: LostCell, emit: Emit) -> ToolOutcome:
    """Follow the cell to its end (emitting its outputs, progress and cell_finished): what the model
    is told of it. Stop (a cancel) interrupts it."""
    channels = kernel.channels
    started = time.monotonic()
    outputs: list[JsonObject] = []
    progress = ProgressReader(cell.call_id)
    history_id = channels.history(raw=True, output=False, hist_access_type="range", session=0, start=-1)
    ended_here, history, done, died = False, None, False, False
    try:
        while not done:
            try:
                burst = [await channels.get_iopub_msg(timeout=POLL_SECONDS)]
            except (queue.Empty, ConnectionError):  # ConnectionError: a gateway's websocket closed
                if not kernel.alive():
                    outputs.append(_error("KernelDied", "The kernel died while this cell ran."))
                    emit(make_event("cell_output", id=cell.call_id, output=outputs[-1]))
                    died = True
                    break
                if event := progress.event(force=True):
                    emit(event)
                continue
            burst += await waiting_messages(channels)
            fresh, idle = outputs_of_burst(burst, cell.msg_id)
            read_widgets(progress, burst, cell.msg_id)
            for output in fresh:
                kept = progress.stream(output) if output["output_type"] == "stream" else output
                if kept is not None:
                    outputs.append(kept)
                    emit(make_event("cell_output", id=cell.call_id, output=kept))
            if event := progress.event():
                emit(event)
            ended_here = ended_here or idle
            # Our history request comes after the cell: its idle on iopub means all of the cell's came before.
            done = any(_parent(m) == history_id and went_idle(m) for m in burst)
        if not died:
            history = await shell_reply(channels, history_id, POLL_SECONDS)
    except asyncio.CancelledError:
        await _interrupt(kernel, cell.msg_id)
        emit(cell_finished(cell.call_id, "aborted", None, started))
        kernel.stop()
        raise
    for output in progress.finish():
        outputs.append(output)
        emit(make_event("cell_output", id=cell.call_id, output=output))
    kernel.stop()
    if died:  # after it was found again (a local kernel stops with its server, a moment later)
        emit(cell_finished(cell.call_id, "error", None, started))
        return KERNEL_DIED_MEANWHILE
    count = _count_of(history, cell.code)
    status: CellStatus = "error" if any(o.get("output_type") == "error" for o in outputs) else "ok"
    if not ended_here:
        status = "error"  # ended while the server was down: whether it raised is not known
    emit(cell_finished(cell.call_id, status, count, started))
    return outcome_after_restart(cell, outputs, count, ended_here)


def outcome_after_restart(
    cell: LostCell, outputs: list[JsonObject], count: int | None, ended_here: bool
) -> ToolOutcome:
    """What the model is told of a cell a restart cut off and Cellwright followed again."""
    facts = [f"cell_id {cell.cell_id}"] if cell.cell_id else []
    facts += [f"execution_count {count}"] if count is not None else []
    head = f"[{', '.join(facts)}] " if facts else ""
    if ended_here:
        errored = any(o.get("output_type") == "error" for o in outputs)
        text = digest([*cell.outputs, *outputs])
        note = (
            "The server restarted while this cell ran in the background; Cellwright followed it again in its "
            "kernel until it ended. Outputs it printed while the server was down are missing."
        )
        return ToolOutcome("error" if errored else "ok", f"{head}{note}\n{text}".strip(), summary=text)
    note = (
        "This cell ended while the server was down"
        + (f" (the kernel's history has it as execution {count})" if count is not None else "")
        + ": whether it raised is not known, and what it printed after the server stopped is missing. Look at "
        "the notebook or the variables it sets before running it again. Its output before the restart:"
    )
    return ToolOutcome("error", f"{head}{note}\n{digest(cell.outputs)}".strip())


def _parent(msg: KernelMessage) -> str | None:
    return msg.get("parent_header", {}).get("msg_id")


def _count_of(history: JsonObject | None, code: str) -> int | None:
    """The cell's execution count: the kernel's last history entry, if its source is the cell's."""
    entries = [e for e in json_items((history or {}).get("history")) if isinstance(e, list) and len(e) == 3]
    if entries and str(entries[-1][2]).strip() == code.strip() and isinstance(entries[-1][1], int):
        return entries[-1][1]
    return None


async def _interrupt(kernel: ReattachedKernel, msg_id: str) -> None:
    """Stop: the kernel interrupted, then a little wait for the cell's idle."""
    await kernel.interrupt()
    deadline = time.monotonic() + INTERRUPT_GRACE_SECONDS
    while (left := deadline - time.monotonic()) > 0:
        try:
            msg = await kernel.channels.get_iopub_msg(timeout=left)
        except (queue.Empty, ConnectionError):
            return
        if _parent(msg) == msg_id and went_idle(msg):
            return


def _error(name: str, message: str) -> JsonObject:
    return {"output_type": "error", "ename": name, "evalue": message, "traceback": [f"{name}: {message}"]}
