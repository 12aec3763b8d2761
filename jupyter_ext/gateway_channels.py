"""A gateway kernel's channels for the executor: the Kernel Gateway's kernel websocket
(`<ws_url>/api/kernels/<id>/channels`, one JSON message per frame whose `channel` field names shell,
iopub, ...), read by a task on the server's event loop.

Not jupyter_server's GatewayKernelClient, measured unusable here: its get_*_msg spins on
`asyncio.sleep(0)` until a message or the timeout, so a 5 s `time.sleep(5)` cell cost the server
5.4 s of CPU (a whole core, for as long as any cell runs); its router thread ends at the first
message of a channel it did not start (an evaluation without iopub then never saw its reply); it
connects with a blocking call on the event loop; and that thread is not a daemon, so a client
never stopped keeps the server's process alive."""

from __future__ import annotations

import asyncio
import json
import queue
import time
from typing import Any

from jupyter_client.jsonutil import json_default
from jupyter_client.session import Session
from jupyter_server.gateway.gateway_client import GatewayClient
from jupyter_server.gateway.managers import GatewayKernelManager
from jupyter_server.services.kernels.connection.base import deserialize_binary_message
from jupyter_server.utils import url_path_join
from tornado.escape import url_escape
from tornado.httpclient import HTTPRequest
from tornado.websocket import WebSocketClientConnection, websocket_connect

# Kept per channel, the oldest dropped first: iopub is a broadcast of every client's cells, and a
# kept client reads it only while one of ours runs. ZMQ's high-water mark bounds a local client too.
QUEUE_LIMIT = 10_000
# tornado's default (10 MiB) would close the connection at a large output (a big image), ending the cell.
MAX_MESSAGE_BYTES = 256 * 2**20


class GatewayChannels:
    """Shell and iopub of one gateway kernel over its websocket, with the few methods of
    jupyter-client's AsyncKernelClient that the executor uses (kernel_clients.KernelChannels).
    The gateway signs messages for the kernel: the session here only shapes them, and its id,
    sent as `session_id`, keeps this connection apart from every other on the gateway."""

    def __init__(self, manager: GatewayKernelManager) -> None:
        assert manager.kernel_id is not None, "a gateway kernel manager without a kernel"
        self.kernel_id: str = manager.kernel_id
        self.session = Session(username="cellwright")
        self._queues: dict[str, asyncio.Queue[dict[str, Any]]] = {}
        self._ws: WebSocketClientConnection | None = None
        self._reader: asyncio.Task[None] | None = None

    async def start_channels(
        self, shell: bool = True, iopub: bool = True, stdin: bool = False, hb: bool = False, control: bool = False
    ) -> None:
        """Connect; only shell and iopub are read (messages of the channels not asked for are dropped)."""
        if stdin or hb or control:
            raise ValueError("only the shell and iopub channels of a gateway kernel are offered here")
        self._queues = {name: asyncio.Queue() for name, wanted in (("shell", shell), ("iopub", iopub)) if wanted}
        gateway = GatewayClient.instance()
        url = url_path_join(gateway.ws_url or "", gateway.kernels_endpoint, url_escape(self.kernel_id), "channels")
        # The gateway's own TLS, token and timeouts, as jupyter_server's websocket proxy uses them.
        request = HTTPRequest(f"{url}?session_id={url_escape(self.session.session)}", **gateway.load_connection_args())
        # tornado's websocket_connect gives a Future already: ensure_future only says so to the type checker.
        connecting = asyncio.ensure_future(websocket_connect(request, max_message_size=MAX_MESSAGE_BYTES))
        try:
            # Shielded: a caller cancelled mid-handshake must not leave a connection that opens later, unowned.
            self._ws = await asyncio.shield(connecting)
        except asyncio.CancelledError:
            connecting.add_done_callback(_close_when_open)
            raise
        self._reader = asyncio.create_task(self._read(self._ws))

    @property
    def closed(self) -> bool:
        """The websocket ended (the gateway closed it, or stop_channels): a kept client is replaced."""
        return self._reader is None or self._reader.done()

    async def _read(self, ws: WebSocketClientConnection) -> None:
        while (frame := await ws.read_message()) is not None:
            # A message with binary buffers comes as a binary frame (jupyter_server's legacy protocol).
            msg = deserialize_binary_message(frame) if isinstance(frame, bytes) else json.loads(frame)
            channel = self._queues.get(msg.get("channel"))
            if channel is None:
                continue
            if channel.qsize() >= QUEUE_LIMIT:
                channel.get_nowait()
            channel.put_nowait(msg)

    def _send(self, msg_type: str, content: dict[str, Any]) -> str:
        if self._ws is None:
            raise RuntimeError("the gateway kernel's channels are not started")
        msg = self.session.msg(msg_type, content)
        self._ws.write_message(json.dumps({**msg, "channel": "shell"}, default=json_default))
        return str(msg["header"]["msg_id"])

    def execute(
        self,
        code: str,
        silent: bool = False,
        store_history: bool = True,
        user_expressions: dict[str, Any] | None = None,
        allow_stdin: bool | None = None,
    ) -> str:
        content = {
            "code": code,
            "silent": silent,
            "store_history": store_history,
            "user_expressions": user_expressions or {},
            "allow_stdin": bool(allow_stdin),
            "stop_on_error": True,
        }
        return self._send("execute_request", content)

    def history(self, raw: bool = True, output: bool = False, hist_access_type: str = "range", **kwargs: Any) -> str:
        content = {"raw": raw, "output": output, "hist_access_type": hist_access_type, **kwargs}
        return self._send("history_request", content)

    async def get_shell_msg(self, timeout: float | None = None) -> dict[str, Any]:
        return await self._get("shell", timeout)

    async def get_iopub_msg(self, timeout: float | None = None) -> dict[str, Any]:
        return await self._get("iopub", timeout)

    async def _get(self, channel: str, timeout: float | None) -> dict[str, Any]:
        """The next message, or queue.Empty after `timeout` seconds, as jupyter-client's clients answer."""
        waiting = self._queues[channel]
        if waiting.empty() and self.closed:  # at once, not after each timeout: the executor then stops waiting
            raise ConnectionError(f"the gateway closed the websocket of kernel {self.kernel_id}")
        try:
            if timeout is not None and timeout <= 0:
                return waiting.get_nowait()
            return await asyncio.wait_for(waiting.get(), timeout)
        except (asyncio.QueueEmpty, asyncio.TimeoutError):
            raise queue.Empty from None

    async def wait_for_ready(self, timeout: float | None = None) -> None:
        """A kernel_info round trip: its reply on shell proves the kernel answers, and its "idle" on
        iopub that iopub reaches this client (after a restart the gateway's iopub reconnects to the
        new process by itself). RuntimeError when either does not come within `timeout` seconds."""
        msg_id = self._send("kernel_info_request", {})
        deadline = None if timeout is None else time.monotonic() + timeout
        for channel in self._queues:
            while True:
                try:
                    msg = await self._get(
                        channel, None if deadline is None else max(deadline - time.monotonic(), 0.001)
                    )
                except queue.Empty:
                    raise RuntimeError(f"the gateway kernel did not answer within {timeout} s") from None
                if msg.get("parent_header", {}).get("msg_id") != msg_id:
                    continue
                if channel == "shell" or msg["content"].get("execution_state") == "idle":
                    break

    def stop_channels(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
        if self._ws is not None:
            self._ws.close()


def _close_when_open(connecting: asyncio.Future[WebSocketClientConnection]) -> None:
    if not connecting.cancelled() and connecting.exception() is None:
        connecting.result().close()
