"""Finding again, after a server restart, a kernel on a Kernel Gateway that ran a background cell
(issue 38). A gateway's kernel outlives the server that asked for it (kill -9 included): the new
server asks the gateway for it by id, registers it with its own kernel manager (jupyter_server's
"using existing kernel": the kernel list, the notebook's next cells and a browser's websocket reach
it), gives the notebook a session on it when the notebook has none (JupyterLab then opens the
notebook on that kernel, variables and all), and follows the cell over a websocket of its own.

The gateway proves the kernel alive by a kernel_info asked on control (answered while the cell runs)
whose status comes on iopub. Outputs the cell printed while no server was connected are not
recovered: the gateway buffers them only for the session of the last connection that closed, which
need not be ours (a browser's may have closed last)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, TypeGuard

from jupyter_server.gateway.managers import GatewayKernelManager, GatewayMappingKernelManager
from jupyter_server.services.sessions.sessionmanager import ModelName
from tornado.web import HTTPError

from .cell_reattach import is_kernel_id, proven
from .gateway_channels import GatewayChannels

if TYPE_CHECKING:
    from jupyter_server.services.sessions.sessionmanager import SessionManager

    from .kernel_clients import KernelChannels

log = logging.getLogger(__name__)


class GatewayKernel:
    """A gateway kernel followed again: its websocket, and the kernel manager now registered for it."""

    def __init__(self, channels: GatewayChannels, manager: GatewayKernelManager) -> None:
        self._channels = channels
        self._manager = manager

    @property
    def channels(self) -> KernelChannels:
        return self._channels

    def ask_on_control(self, msg_type: str) -> str:
        return self._channels.ask_on_control(msg_type)

    def alive(self) -> bool:
        """The websocket is open and the gateway did not restart the kernel's process under it."""
        return not self._channels.stale

    async def interrupt(self) -> None:
        await self._manager.interrupt_kernel()  # the gateway's REST route, as the server's own Stop

    def stop(self) -> None:
        self._channels.stop_channels()


def is_gateway(kernel_manager: object) -> TypeGuard[GatewayMappingKernelManager]:
    """The server runs its kernels on a Kernel Gateway (`--gateway-url`)."""
    return isinstance(kernel_manager, GatewayMappingKernelManager)


async def registered(kernel_manager: GatewayMappingKernelManager, kernel_id: str) -> GatewayKernelManager | None:
    """The gateway's kernel `kernel_id`, registered with the server's kernel manager; None when the
    gateway no longer has it (it died and was culled, or the gateway restarted) or does not answer."""
    if not is_kernel_id(kernel_id):  # our own record, but it becomes part of a URL
        return None
    if kernel_id not in kernel_manager:
        try:
            await kernel_manager.start_kernel(kernel_id=kernel_id)  # fetches its model; adds no process
        except (HTTPError, OSError) as exc:
            log.warning("Cellwright could not ask the gateway for kernel %s: %s", kernel_id, exc)
            kernel_manager.remove_kernel(kernel_id)
            return None
    manager = kernel_manager.get_kernel(kernel_id)
    if not isinstance(manager, GatewayKernelManager) or manager.kernel is None:  # the gateway answered 404
        kernel_manager.remove_kernel(kernel_id)
        return None
    return manager


async def reattached_on_gateway(
    kernel_manager: GatewayMappingKernelManager, session_manager: SessionManager, kernel_id: str, notebook_path: str
) -> GatewayKernel | None:
    """The kernel registered (and the notebook's session on it), then proven alive over a websocket of
    our own; None when the gateway does not have it or it does not answer. A kernel registered but
    not proven stays registered: it is alive on the gateway, and the user's notebook can use it."""
    manager = await registered(kernel_manager, kernel_id)
    if manager is None:
        return None
    await _notebook_session(session_manager, notebook_path, kernel_id)
    channels = GatewayChannels(manager)
    try:
        await channels.start_channels(shell=True, iopub=True, control=True)
    except (HTTPError, OSError) as exc:
        log.warning("Cellwright could not connect to gateway kernel %s: %s", kernel_id, exc)
        return None
    kernel = GatewayKernel(channels, manager)
    if await proven(kernel):
        return kernel
    kernel.stop()
    return None


async def _notebook_session(session_manager: SessionManager, notebook_path: str, kernel_id: str) -> None:
    """A session of the notebook on the kernel, unless the notebook already has one (a browser that
    came back first started a new kernel: the found one is then in the kernel list to choose)."""
    if not notebook_path or await session_manager.session_exists(path=notebook_path):
        return
    name = ModelName(notebook_path.rsplit("/", 1)[-1])
    await session_manager.create_session(path=notebook_path, name=name, type="notebook", kernel_id=kernel_id)
