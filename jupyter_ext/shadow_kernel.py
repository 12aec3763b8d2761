"""The shadow kernel of verify_notebook: a fresh kernel started through the server's own kernel
manager (so a server whose kernels live on a Kernel Gateway starts it there too), in the notebook's
folder, of the notebook's kernelspec; no session names it, so it is never the notebook's kernel;
shut down when the check ends, whatever happens."""

from __future__ import annotations

import asyncio
import logging
import posixpath
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from agent_core.json_types import JsonObject
from agent_core.tools.base import CellRun

from .kernel_executor import KernelEnvironment

if TYPE_CHECKING:
    from jupyter_server.services.sessions.sessionmanager import SessionManager

    from agent_core.contract import EventDict
    from agent_core.workspace import Workspace

    from .kernel_clients import MappingKernelManagerProtocol

log = logging.getLogger(__name__)
START_SECONDS = 60.0


def _ignore(event: EventDict) -> None:
    """The shadow kernel's cells are nobody's events: no thread shows them."""


@dataclass
class ShadowKernel:
    env: KernelEnvironment
    kernel_name: str

    async def run(self, code: str, timeout: float) -> CellRun:
        call_id = f"verify-{uuid.uuid4().hex[:12]}"
        try:
            return await asyncio.wait_for(self.env.run_cell(call_id, code, _ignore), timeout)
        except asyncio.TimeoutError:
            error: JsonObject = {
                "output_type": "error",
                "ename": "TimeLimit",
                "evalue": "verify_notebook's time limit ran out while this cell ran",
                "traceback": [],
            }
            return CellRun("error", [error])


def _known_kernel(kernel_manager: MappingKernelManagerProtocol, wanted: str | None) -> str:
    """The notebook's kernelspec when the server knows it, else the server's default kernel."""
    default = str(getattr(kernel_manager, "default_kernel_name", "") or "python3")
    specs = getattr(getattr(kernel_manager, "kernel_spec_manager", None), "get_all_specs", None)
    if wanted and specs is not None and not asyncio.iscoroutinefunction(specs):
        try:
            return wanted if wanted in specs() else default
        except Exception:  # a gateway lists its specs asynchronously: let it refuse an unknown name itself
            return wanted
    return wanted or default


@asynccontextmanager
async def shadow_kernel(
    kernel_manager: MappingKernelManagerProtocol,
    session_manager: SessionManager,
    root_dir: Path,
    workspace: Workspace | None,
    notebook_path: str,
    kernel_name: str | None,
    slots: asyncio.Semaphore | None = None,
) -> AsyncIterator[ShadowKernel]:
    """A kernel of its own for re-running `notebook_path`, shut down on leaving; with `slots`, only
    as many at once as it allows (the others wait), so repeated checks cannot fill the machine."""
    async with slots if slots is not None else nullcontext():
        name = _known_kernel(kernel_manager, kernel_name)
        folder = posixpath.dirname(notebook_path)
        kernel_id = await asyncio.wait_for(kernel_manager.start_kernel(kernel_name=name, path=folder), START_SECONDS)
        try:
            env = KernelEnvironment(kernel_manager, session_manager, root_dir, "", kernel_id, None, workspace=workspace)
            yield ShadowKernel(env, name)
        finally:
            try:
                await kernel_manager.shutdown_kernel(kernel_id, now=True)
            except Exception as exc:  # already gone (it died): nothing left to stop
                log.info("the shadow kernel %s was already gone: %s", kernel_id, exc)
