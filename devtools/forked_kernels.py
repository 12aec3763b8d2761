"""Kernels for the tests' Jupyter servers, forked from a warm process (devtools/warm_fork.py).

Starting an ipykernel costs ~1.2 s of CPU on the 2-core machine, nearly all of it importing IPython,
ipykernel, zmq and tornado; the suite starts ~450 of them. Forked, the child runs `python -m
ipykernel_launcher <args>` exactly as the kernel spec says (its own connection file, environment,
working directory and session): the same ipykernel, started ~1 s sooner on ~0.2 s of CPU.

Used by the test processes (tests/conftest.py registers the provisioner as the default of
jupyter_client's provisioner factory) and by the labs of the browser tests. Servers the tests start
for crash, restart, hub, gateway and PostgreSQL tests keep jupyter_client's own provisioner, as users
have it. A kernel spec that is not this interpreter's `ipykernel_launcher` is launched as usual.
`CELLWRIGHT_TEST_FORKED=0` turns it off."""

from __future__ import annotations

import os
from importlib.metadata import EntryPoint
from typing import Any

from jupyter_client.provisioning import LocalProvisioner

from . import warm_fork

NAME = "cellwright-test-forked"

# What every kernel imports at start. Of what they read from the environment while imported, only
# IPKernelApp's parent (JPY_PARENT_PID) matters here: it is given on the command line below.
# ipykernel.debugger brings debugpy and pydevd (~130 modules, ~0.1 s of CPU per kernel), starting no thread.
PRELOAD = (
    "IPython",
    "ipykernel.kernelapp",
    "ipykernel.ipkernel",
    "ipykernel.debugger",
    "jupyter_client",
    "tornado.ioloop",
    "zmq",
)


class ForkedProvisioner(LocalProvisioner):  # type: ignore[misc]
    """LocalProvisioner whose kernel process comes from the zygote when the command is this
    interpreter's `-m ipykernel_launcher`; any other command is launched as LocalProvisioner does."""

    async def launch_kernel(self, cmd: list[str], **kwargs: Any) -> Any:
        env = dict(kwargs.get("env") or os.environ)
        if len(cmd) < 3 or cmd[1:3] != ["-m", "ipykernel_launcher"] or not warm_fork.this_python(cmd[0], env):
            return await super().launch_kernel(cmd, **kwargs)
        zygote = warm_fork.zygote_for(PRELOAD, env)
        if zygote is None:
            return await super().launch_kernel(cmd, **kwargs)
        cwd = str(kwargs.get("cwd") or os.getcwd())
        # Its parent is the zygote: it ends when that does, as a kernel ends with the server that
        # started it. In a session of its own, as jupyter_client starts a kernel: its group is itself.
        argv = [*cmd[3:], f"--IPKernelApp.parent_handle={zygote.pid}"]
        self.process = zygote.fork("ipykernel_launcher", argv, env, cwd, new_session=True)
        self.pid = self.pgid = self.process.pid
        self.cwd = cwd
        return self.connection_info


def install() -> bool:
    """Make forked kernels the default of this process's kernel managers (unless switched off)."""
    if os.environ.get(warm_fork.SWITCH) == "0":
        return False
    from jupyter_client.provisioning.factory import KernelProvisionerFactory

    group = KernelProvisionerFactory.GROUP_NAME
    KernelProvisionerFactory.provisioners[NAME] = EntryPoint(NAME, f"{__name__}:ForkedProvisioner", group)
    KernelProvisionerFactory.instance().default_provisioner_name = NAME
    return True
