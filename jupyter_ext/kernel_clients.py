"""Kernel clients: how one is made and connected (local kernels over ZMQ, a Kernel Gateway's over
its websocket), and one connected client per kernel kept for the server's lifetime: starting
channels and proving iopub connected (wait_for_ready waits for 0.2 s of iopub silence) cost ~200 ms
per cell. Cells of all runs on one kernel take turns on its client (the kernel runs them one at a
time anyway), and every reader filters messages by the msg_id of its own request, so replies never mix."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypedDict, TypeGuard, cast

from jupyter_client.session import Session
from jupyter_server.gateway.managers import GatewayKernelManager

from agent_core.json_types import JsonObject

from .gateway_channels import GatewayChannels

if TYPE_CHECKING:
    from jupyter_client.asynchronous.client import AsyncKernelClient


class KernelManagerProtocol(Protocol):
    """What is asked of one kernel's manager: jupyter_server's KernelManagerProtocol, or a gateway's
    GatewayKernelManager (a subclass). A protocol rather than the class: jupyter-client annotates the
    synchronous KernelManager's methods, and the server's are coroutines."""

    session: Session
    execution_state: str | None  # tracked from iopub by the server (a gateway's can lag: see kernel_executor)

    def client(self, **kwargs: object) -> AsyncKernelClient: ...

    def get_connection_info(self) -> Mapping[str, object]: ...

    async def is_alive(self) -> bool: ...

    def observe(self, handler: Callable[[Mapping[str, object]], None], names: str) -> None: ...

    def unobserve(self, handler: Callable[[Mapping[str, object]], None], names: str) -> None: ...


class MappingKernelManagerProtocol(Protocol):
    """What is asked of the server's kernel manager (its kernels by id); async, as KernelManagerProtocol's."""

    def __contains__(self, kernel_id: object) -> bool: ...

    def get_kernel(self, kernel_id: str) -> KernelManagerProtocol: ...

    async def start_kernel(self, *, kernel_name: str | None = None, path: str | None = None) -> str: ...

    async def interrupt_kernel(self, kernel_id: str) -> None: ...

    async def restart_kernel(self, kernel_id: str) -> None: ...

    async def shutdown_kernel(self, kernel_id: str, now: bool = False) -> None: ...


class MessageHeader(TypedDict, total=False):
    msg_id: str
    msg_type: str
    session: str


class KernelMessage(TypedDict, total=False):
    """A message of Jupyter's messaging protocol, as read here."""

    header: MessageHeader
    parent_header: MessageHeader  # {} on a message no request of ours caused
    content: JsonObject  # its fields depend on the header's msg_type
    metadata: dict[str, object]


class KernelChannels(Protocol):
    """What the executor asks of a connected client: jupyter-client's AsyncKernelClient for a local
    kernel, GatewayChannels for a gateway's. get_*_msg raise queue.Empty after `timeout` seconds."""

    def execute(
        self,
        code: str,
        silent: bool = False,
        store_history: bool = True,
        user_expressions: dict[str, str] | None = None,
        allow_stdin: bool | None = None,
    ) -> str: ...

    def history(
        self, raw: bool = True, output: bool = False, hist_access_type: str = "range", **kwargs: Any
    ) -> str: ...

    async def get_iopub_msg(self, timeout: float | None = None) -> KernelMessage: ...

    async def get_shell_msg(self, timeout: float | None = None) -> KernelMessage: ...

    async def wait_for_ready(self, timeout: float | None = None) -> None: ...

    def stop_channels(self) -> None: ...


def is_remote(manager: KernelManagerProtocol) -> TypeGuard[GatewayKernelManager]:
    """A kernel behind a Kernel Gateway (`jupyter server --gateway-url=...`): no local process, its
    channels are one websocket, and its execution_state is what the gateway last answered."""
    return isinstance(manager, GatewayKernelManager)


async def connected_client(manager: KernelManagerProtocol, outputs: bool) -> KernelChannels:
    """A client of its own with only the channels used here: shell, and iopub when the outputs
    matter. No heartbeat, stdin or control: each is a socket (the heartbeat also a thread) per
    client, and a server making a client per evaluation ran out of ZMQ sockets (1023 per context)."""
    client: AsyncKernelClient | GatewayChannels = (
        GatewayChannels(manager) if is_remote(manager) else _own_client(manager)
    )
    started = client.start_channels(shell=True, iopub=outputs, stdin=False, hb=False, control=False)
    if inspect.isawaitable(started):  # a gateway's websocket connects asynchronously
        await started
    # jupyter-client types its messages dict[str, Any]; they are the messaging protocol's (KernelMessage).
    return cast(KernelChannels, client)


def _own_client(manager: KernelManagerProtocol) -> AsyncKernelClient:
    """A client with a session of its own: clients made by `manager.client()` share its session,
    hence one ZMQ identity, and the kernel's replies then go to whichever of them connected last
    (a concurrent evaluation would swallow a cell's execute_reply). Its sockets live in the kernel
    manager's ZMQ context (the server's, shared by its kernels; they close with linger 0): a
    context of the client's own was made and destroyed per evaluation, ~0.8 ms and a term() that
    blocked the event loop, twice at the start of every run with a kernel."""

    session = Session(key=manager.session.key, signature_scheme=manager.session.signature_scheme, username="cellwright")
    context = getattr(manager, "context", None)
    shared = {"context": context} if context is not None and not context.closed else {}
    client: AsyncKernelClient = manager.client(session=session, **shared)
    return client


@dataclass
class SharedClient:
    client: KernelChannels
    manager: KernelManagerProtocol  # the kernel manager it was made for: a kernel started anew under the same id needs a new client
    connection: object  # ports and keys the client was made for: a restart on new ports needs a new client
    turn: asyncio.Lock = field(default_factory=asyncio.Lock)
    # The kernel process the client last proved connected to: a restart starts a new provisioner,
    # and a new process's iopub must be proven connected again before a cell's output can be trusted.
    # A gateway's kernel has no process here: the count of its restarts made through this server.
    ready_for: object = None

    async def needs_ready(self, manager: KernelManagerProtocol, restarts: int = 0, grace: float = 0.0) -> bool:
        """Whether the next cell must first prove this client connected to the kernel's process (for a
        gateway's, also that the kernel is idle, given `grace` seconds to turn so). `restarts`: the
        kernel's restarts made through this server."""
        if isinstance(self.client, GatewayChannels):
            # A gateway restarts its kernel out of our sight, under the same id and websocket: its own
            # iopub says so ("restarting", "starting"), or a restart through this server counted it.
            return self.ready_for != restarts or not await self.client.turns_idle(grace)
        return self.ready_for is not process_of(manager)

    def mark_ready(self, manager: KernelManagerProtocol, restarts: int = 0) -> None:
        self.ready_for = restarts if isinstance(self.client, GatewayChannels) else process_of(manager)

    @property
    def stale(self) -> bool:
        """A gateway's websocket that closed or outlived its kernel's process: the next cell gets a new client."""
        return isinstance(self.client, GatewayChannels) and self.client.stale


def process_of(manager: KernelManagerProtocol) -> object:
    """The kernel's local process (or what stands for it); None for a gateway's kernel."""
    if is_remote(manager):
        return None
    provisioner = getattr(manager, "provisioner", None)  # kept across restarts; its process is not
    return getattr(provisioner, "process", None) or provisioner or getattr(manager, "kernel", None)


def _connection(manager: KernelManagerProtocol) -> object:
    try:
        return manager.get_connection_info()
    except Exception:  # a manager without one: keep the client as long as the manager
        return None


class KernelClients:
    """Kept clients, one per kernel: with iopub for cells (`outputs`), shell only for evaluations."""

    def __init__(self, outputs: bool = True) -> None:
        self._outputs = outputs
        self._clients: dict[str, SharedClient] = {}
        self._connecting = asyncio.Lock()  # two first cells on one kernel make one client, not two

    async def turns_idle(self, kernel_id: str, seconds: float) -> bool:
        """A gateway kernel whose kept client's own iopub shows it idle, now or within `seconds`
        (GatewayChannels.turns_idle); False for a local kernel or one without a kept client."""
        shared = self._clients.get(kernel_id)
        return (
            shared is not None
            and isinstance(shared.client, GatewayChannels)
            and await shared.client.turns_idle(seconds)
        )

    async def get(
        self, kernel_id: str, manager: KernelManagerProtocol, kernel_manager: MappingKernelManagerProtocol
    ) -> SharedClient:
        async with self._connecting:
            self._forget_gone(kernel_manager)
            shared = self._clients.get(kernel_id)
            if (
                shared is None
                or shared.manager is not manager
                or shared.connection != _connection(manager)
                or shared.stale
            ):
                if shared is not None and not shared.turn.locked():
                    shared.client.stop_channels()
                client = await connected_client(manager, outputs=self._outputs)
                shared = self._clients[kernel_id] = SharedClient(client, manager, _connection(manager))
            return shared

    def _forget_gone(self, kernel_manager: MappingKernelManagerProtocol) -> None:
        for kernel_id in [k for k in self._clients if k not in kernel_manager]:
            shared = self._clients.pop(kernel_id)
            if not shared.turn.locked():
                shared.client.stop_channels()

    def done(self, kernel_id: str, shared: SharedClient) -> None:
        """After a turn: a client dropped meanwhile (its kernel went away) is closed by its last user."""
        if self._clients.get(kernel_id) is not shared and not shared.turn.locked():
            shared.client.stop_channels()

    def close(self) -> None:
        """At the server's shutdown: every kept client stops, so no connection (or a client's thread) outlives it."""
        for shared in self._clients.values():
            shared.client.stop_channels()
        self._clients.clear()
