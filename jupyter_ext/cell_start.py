"""An approved cell's cell_started, and when it says the cell runs: once the kernel began its request.
A cell sent to a kernel that looked idle may still queue behind another client's cell (the busy that
says so can be on its way): it is said to wait first, as a cell held back for a busy kernel is."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from agent_core.contract import make_event
from agent_core.contract.event_fields import CellStartedEventDict, CellStartedFields
from agent_core.tools import CellPlacement

from .kernel_clients import KernelMessage

BUSY_NOTICE_SECONDS = 0.3  # a kernel busy this long before our cell is running someone else's


@dataclass
class CellStart:
    """`announce(msg_id, waiting)` emits the cell's cell_started for its request `msg_id`;
    `said_waiting`: one saying it waits went before it was sent."""

    announce: Callable[[str, bool], None]
    said_waiting: bool = False
    running: bool = False
    msg_id: str = ""
    sent_at: float = 0.0

    def sent(self, msg_id: str) -> None:
        """The cell's request left (a second one, resent after an abort, keeps the first's id)."""
        if not self.msg_id:
            self.msg_id, self.sent_at = msg_id, time.monotonic()

    def timeout(self, poll: float) -> float:
        """How long the next iopub read may wait: until the waiting notice is due, while it is."""
        if self.running or self.said_waiting:
            return poll
        return max(0.0, min(poll, self.sent_at + BUSY_NOTICE_SECONDS - time.monotonic()))

    def saw(self, burst: list[KernelMessage], msg_id: str) -> None:
        """The kernel's first message about request `msg_id` (its busy) says the cell runs."""
        if not self.running and any(msg.get("parent_header", {}).get("msg_id") == msg_id for msg in burst):
            self.begun()

    def quiet(self) -> None:
        """Nothing of our request yet: past the notice, the kernel is working on another cell."""
        if not self.running and not self.said_waiting and time.monotonic() - self.sent_at >= BUSY_NOTICE_SECONDS:
            self.said_waiting = True
            self.announce(self.msg_id, True)

    def begun(self) -> None:
        if not self.running:
            self.running = True
            self.announce(self.msg_id, False)

    def said(self) -> None:
        """Before anything else of the cell is emitted (an output, its end): a cell_started went."""
        if not self.running and not self.said_waiting:
            self.begun()


def cell_started(
    call_id: str,
    code: str,
    notebook_path: str,
    kernel_id: str,
    msg_id: str | None,
    placement: CellPlacement | None,
    waiting: bool = False,
) -> CellStartedEventDict:
    """The cell's cell_started: waiting for the kernel (not sent yet: `msg_id` None; or `waiting`
    behind another cell as request `msg_id`), or running as request `msg_id`."""
    fields: CellStartedFields = {
        "id": call_id,
        "code": code,
        "notebook_path": notebook_path,
        "kernel_id": kernel_id,
        "waiting_for_kernel": msg_id is None or waiting,
    }
    if msg_id is not None:  # the cell's messages are told by it after a restart (cell_reattach.py)
        fields["kernel_msg_id"] = msg_id
    if placement is not None:
        fields["cell_id"], fields["edit"] = placement.cell_id, placement.edit
        if placement.provenance:
            fields["provenance"] = placement.provenance
        if placement.previous_source is not None:
            fields["previous_source"] = placement.previous_source
    return make_event("cell_started", **fields)
