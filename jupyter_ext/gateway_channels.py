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
import socket
import time
from typing import TYPE_CHECKING, Any

from jupyter_client.jsonutil import json_default
from jupyter_client.session import Session
from jupyter_server.gateway.gateway_client import GatewayClient
from jupyter_server.gateway.managers import GatewayKernelManager
from jupyter_server.services.kernels.connection.base import deserialize_binary_message
from jupyter_server.utils import url_path_join
from tornado.escape import url_escape
from tornado.httpclient import HTTPRequest
from tornado.websocket import WebSocketClientConnection, websocket_connect

from agent_core.deadlines import within
from agent_core.json_types import JsonObject

from .iopub_outputs import kernel_died

if TYPE_CHECKING:  # kernel_clients imports this module
    from .kernel_clients import KernelMessage

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
        self._channels: tuple[str, ...] = ()
        self._queues: dict[str, asyncio.Queue[KernelMessage]] = {}
        self._ws: WebSocketClientConnection | None = None
        self._reader: asyncio.Task[None] | None = None
        self._process_replaced = False
        self._unproven = False  # its last wait_for_ready went unanswered
        self._proven = False  # a wait_for_ready was answered on this connection, by this kernel process
        self._state = ""  # the kernel's execution_state, as its last status on iopub said
        self._status_came = asyncio.Event()  # set by each status on iopub

    async def start_channels(
        self, shell: bool = True, iopub: bool = True, stdin: bool = False, hb: bool = False, control: bool = False
    ) -> None:
        """Connect; shell, iopub and control are read (messages of the channels not asked for are
        dropped). Control answers while a cell runs: re-attaching after a restart proves a busy kernel alive on it."""
        if stdin or hb:
            raise ValueError("only the shell, iopub and control channels of a gateway kernel are offered here")
        wanted = (("shell", shell), ("iopub", iopub), ("control", control))
        self._channels = tuple(name for name, asked in wanted if asked)
        await self._connect()

    async def _connect(self) -> None:
        self._queues = {name: asyncio.Queue() for name in self._channels}
        self._process_replaced = self._unproven = self._proven = False
        self._state = ""
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
        self._reader = asyncio.create_task(self._read(self._ws, self._queues))

    async def _reconnect(self) -> None:
        """A new websocket, under a new session id: the gateway would replay the old session's
        buffered messages (the "restarting" among them) into a connection that resumes it."""
        self.stop_channels()
        self.session = Session(username="cellwright")
        await self._connect()

    @property
    def closed(self) -> bool:
        """The websocket ended (the gateway closed it, or stop_channels)."""
        return self._reader is None or self._reader.done()

    @property
    def proven_idle(self) -> bool:
        """A kernel_info round trip was answered on this connection, the kernel's process has not
        changed since (no status but busy and idle came), and its last status was idle: a cell can go
        without another round trip (issue 41: one was ~50 ms through a gateway), as a local kernel's
        does on jupyter_server's tracked state. A user's cell started meanwhile says busy first."""
        return self._proven and self._state == "idle" and not self.stale and not self._unproven

    async def turns_idle(self, seconds: float) -> bool:
        """proven_idle now, or within `seconds` when the kernel shows busy: a request of ours on another
        client (an evaluation, the history) has its idle on the way here too. Woken by each status."""
        deadline = asyncio.get_running_loop().time() + seconds
        while not self.proven_idle:
            left = deadline - asyncio.get_running_loop().time()
            if not self._proven or self._state != "busy" or left <= 0:
                return False
            self._status_came.clear()
            try:
                await asyncio.wait_for(self._status_came.wait(), left)
            except asyncio.TimeoutError:
                return False
        return True

    @property
    def stale(self) -> bool:
        """Closed, or the kernel's process died under it ("restarting": the gateway restarted it,
        maybe on new ports, which the gateway's end of this connection may no longer reach)."""
        return self.closed or self._process_replaced

    async def _read(self, ws: WebSocketClientConnection, queues: dict[str, asyncio.Queue[KernelMessage]]) -> None:
        """Route one connection's messages to its own queues (a reconnection gets new ones)."""
        while (frame := await ws.read_message()) is not None:
            acks_at_once(ws)
            # A message with binary buffers comes as a binary frame (jupyter_server's legacy protocol).
            msg = deserialize_binary_message(frame) if isinstance(frame, bytes) else json.loads(frame)
            if queues is self._queues:
                self._note_status(msg)
            channel = queues.get(msg.get("channel"))
            if channel is None:
                continue
            if channel.qsize() >= QUEUE_LIMIT:
                channel.get_nowait()
            channel.put_nowait(msg)

    def _note_status(self, msg: KernelMessage) -> None:
        if kernel_died(msg):
            self._process_replaced = True
        if msg.get("channel") != "iopub" or msg["header"]["msg_type"] != "status":
            return
        self._state = str(msg["content"].get("execution_state", ""))
        self._status_came.set()
        if self._state not in ("busy", "idle"):  # "starting": a new process, whose iopub is not proven
            self._proven = False

    def _send(self, msg_type: str, content: JsonObject, channel: str = "shell") -> str:
        if self._ws is None:
            raise RuntimeError("the gateway kernel's channels are not started")
        msg = self.session.msg(msg_type, content)
        self._ws.write_message(json.dumps({**msg, "channel": channel}, default=json_default))
        acks_at_once(self._ws)  # the answer's first message is acknowledged as it comes
        return str(msg["header"]["msg_id"])

    def ask_on_control(self, msg_type: str) -> str:
        """A request without content (kernel_info_request, interrupt_request) on the control channel; its msg_id."""
        return self._send(msg_type, {}, channel="control")

    def execute(
        self,
        code: str,
        silent: bool = False,
        store_history: bool = True,
        user_expressions: dict[str, str] | None = None,
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

    async def get_shell_msg(self, timeout: float | None = None) -> KernelMessage:
        return await self._get("shell", timeout)

    async def get_iopub_msg(self, timeout: float | None = None) -> KernelMessage:
        return await self._get("iopub", timeout)

    async def _get(self, channel: str, timeout: float | None) -> KernelMessage:
        """The next message, or queue.Empty after `timeout` seconds, as jupyter-client's clients answer."""
        waiting = self._queues[channel]
        if waiting.empty() and self.closed:  # at once, not after each timeout: the executor then stops waiting
            raise ConnectionError(f"the gateway closed the websocket of kernel {self.kernel_id}")
        try:
            if not waiting.empty() or (timeout is not None and timeout <= 0):
                return waiting.get_nowait()  # no task and no turn of the loop for a message already here
            async with within(timeout):
                return await waiting.get()
        except (asyncio.QueueEmpty, asyncio.TimeoutError):
            raise queue.Empty from None

    async def wait_for_ready(self, timeout: float | None = None) -> None:
        """A kernel_info round trip: its reply on shell proves the kernel answers (a kernel running a
        cell answers after it), and its "idle" on iopub that iopub reaches this client (a restart
        asked for keeps the websocket: the gateway's streams reconnect to the new process).
        RuntimeError when either does not come within `timeout` seconds.

        A connection that went stale, or whose last round trip went unanswered, is made anew first:
        the gateway sets up a connection opened while it restarts a dead kernel for the old process
        (it skips its own check while it still takes the kernel for busy), and such a connection never
        reaches the new one. Waiting for a user's long cell thus reconnects once per call."""
        if self.stale or self._unproven:
            await self._reconnect()
        asked = self._send("kernel_info_request", {})
        deadline = None if timeout is None else time.monotonic() + timeout
        self._unproven = True
        for channel in ("shell", "iopub"):  # a kernel_info asked on shell: no answer comes on control
            if channel in self._channels:
                await self._answer(channel, asked, deadline)
        self._unproven = False
        self._proven = True

    async def _answer(self, channel: str, asked: str, deadline: float | None) -> None:
        """Until request `asked` is answered on `channel` (its "idle", on iopub); RuntimeError at the deadline."""
        while True:
            try:
                msg = await self._get(channel, None if deadline is None else max(deadline - time.monotonic(), 0.001))
            except queue.Empty:
                raise RuntimeError("the gateway kernel did not answer in time") from None
            if msg.get("parent_header", {}).get("msg_id") == asked and (
                channel == "shell" or msg["content"].get("execution_state") == "idle"
            ):
                return

    def stop_channels(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
        if self._ws is not None:
            self._ws.close()


def _close_when_open(connecting: asyncio.Future[WebSocketClientConnection]) -> None:
    if not connecting.cancelled() and connecting.exception() is None:
        connecting.result().close()


def acks_at_once(ws: WebSocketClientConnection) -> None:
    """Have Linux acknowledge at once what the gateway sends next. The gateway's kernel websocket
    (jupyter_server's handler) leaves Nagle's algorithm on, so after the first message of an answer
    (the kernel's "busy") it holds the next until that one is acknowledged; and Linux delays an
    acknowledgement by up to 40 ms on a connection that has just sent, hoping to carry it on the
    next send. A `pass` through a gateway took ~45 ms instead of ~7 (issue 41). Quick-ack mode is
    not kept by the kernel: set again after each send and each message read."""
    stream = getattr(ws.protocol, "stream", None)
    if stream is not None and not stream.closed():
        quick_ack(stream.socket)


def quick_ack(sock: socket.socket) -> None:
    """Linux's quick-ack mode on `sock`, until the kernel leaves it; a no-op where TCP_QUICKACK
    does not exist (not Linux) or the socket is closing (its reader sees the end)."""
    flag = getattr(socket, "TCP_QUICKACK", None)
    if flag is None:
        return
    try:
        sock.setsockopt(socket.IPPROTO_TCP, flag, 1)
    except OSError:
        pass
