"""Restarts of kernels made through this server (the user's restart button, the restart_kernel
tool), counted per kernel from jupyter_server's kernel action events. A local kernel's identity is
its process, which a restart replaces; a gateway kernel has no process here and keeps its id and
websocket across a restart, so the count stands in for the process: without it neither the model
("the kernel restarted since your last cell") nor undo ("its snapshot is gone") would be told."""

from __future__ import annotations

from typing import Any

from agent_core.json_types import JsonObject

KERNEL_ACTIONS = "https://events.jupyter.org/jupyter_server/kernel_actions/v1"


class KernelRestarts:
    def __init__(self, event_logger: Any) -> None:
        self._counts: dict[str, int] = {}
        self._events = event_logger
        if event_logger is not None:
            event_logger.add_listener(schema_id=KERNEL_ACTIONS, listener=self._on_action)

    async def _on_action(self, logger: object, schema_id: str, data: JsonObject) -> None:
        kernel_id = data.get("kernel_id")
        if (
            data.get("action") == "restart"
            and data.get("status") == "success"
            and isinstance(kernel_id, str)
            and kernel_id
        ):
            self._counts[kernel_id] = self._counts.get(kernel_id, 0) + 1

    async def settled(self) -> None:
        """Once the events emitted so far are counted: jupyter_events runs listeners as tasks, so a
        restart just awaited is not counted until they ran."""
        if self._events is not None:
            await self._events.gather_listeners()

    def count(self, kernel_id: str) -> int:
        return self._counts.get(kernel_id, 0)
