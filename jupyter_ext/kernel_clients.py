"""One connected jupyter-client per kernel, kept for the server's lifetime: starting channels and
proving iopub connected (wait_for_ready waits for 0.2 s of iopub silence) cost ~200 ms per cell.
Cells of all runs on one kernel take turns on its client (the kernel runs them one at a time anyway),
and every reader filters messages by the msg_id of its own request, so replies never mix."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any


@dataclass
class SharedClient:
    client: Any
    connection: Any  # ports and keys the client was made for: a restart on new ports needs a new client
    turn: asyncio.Lock = field(default_factory=asyncio.Lock)
    # The kernel process the client last proved connected to: a restart starts a new provisioner,
    # and a new process's iopub must be proven connected again before a cell's output can be trusted.
    ready_for: Any = None

    def needs_ready(self, manager: Any) -> bool:
        return self.ready_for is not process_of(manager)

    def mark_ready(self, manager: Any) -> None:
        self.ready_for = process_of(manager)


def process_of(manager: Any) -> Any:
    provisioner = getattr(manager, "provisioner", None)  # kept across restarts; its process is not
    return getattr(provisioner, "process", None) or provisioner or getattr(manager, "kernel", None)


def _connection(manager: Any) -> Any:
    try:
        return manager.get_connection_info()
    except Exception:  # a manager without one: keep the client as long as the manager
        return None


class KernelClients:
    def __init__(self) -> None:
        self._clients: dict[str, SharedClient] = {}

    def get(self, kernel_id: str, manager: Any, kernel_manager: Any) -> SharedClient:
        self._forget_gone(kernel_manager)
        shared = self._clients.get(kernel_id)
        if shared is None or shared.client.parent is not manager or shared.connection != _connection(manager):
            if shared is not None and not shared.turn.locked():
                shared.client.stop_channels()
            from .kernel_executor import connected_client

            client = connected_client(manager, outputs=True)
            shared = self._clients[kernel_id] = SharedClient(client, _connection(manager))
        return shared

    def _forget_gone(self, kernel_manager: Any) -> None:
        for kernel_id in [k for k in self._clients if k not in kernel_manager]:
            shared = self._clients.pop(kernel_id)
            if not shared.turn.locked():
                shared.client.stop_channels()

    def done(self, kernel_id: str, shared: SharedClient) -> None:
        """After a turn: a client dropped meanwhile (its kernel went away) is closed by its last user."""
        if self._clients.get(kernel_id) is not shared and not shared.turn.locked():
            shared.client.stop_channels()

    def close(self) -> None:
        for shared in self._clients.values():
            shared.client.stop_channels()
        self._clients.clear()
