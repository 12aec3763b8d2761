"""Kernels for the tests' in-process Jupyter servers, forked from a warm process instead of started
with a fresh interpreter.

Starting an ipykernel costs ~1.2 s of CPU on the 2-core machine, nearly all of it importing IPython,
ipykernel, zmq and tornado; the suite starts ~450 of them. A "zygote" process per test process
imports those once and forks a child per kernel; the child then runs `python -m ipykernel_launcher
<args>` exactly as the kernel spec says (its own connection file, environment, working directory and
session), so it is the same ipykernel, started ~1 s sooner on ~0.2 s of CPU.

Used only by the test processes (tests/conftest.py registers the provisioner as the default of
jupyter_client's provisioner factory). Servers the tests start as processes (labs, crash and restart
tests, the hub, the gateway) keep jupyter_client's own provisioner, as users have it. A kernel spec
that is not this interpreter's `ipykernel_launcher` is launched as usual.
`CELLWRIGHT_TEST_FORKED_KERNELS=0` turns it off."""

from __future__ import annotations

import os
import pickle
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from importlib.metadata import EntryPoint
from typing import Any

from jupyter_client.provisioning import LocalProvisioner

NAME = "cellwright-test-forked"
SWITCH = "CELLWRIGHT_TEST_FORKED_KERNELS"

# What every kernel imports at start: imported once, by the zygote, before it forks.
_ZYGOTE = """
import os, pickle, signal, socket, struct, sys
import IPython, ipykernel.kernelapp, ipykernel.ipkernel, jupyter_client, tornado.ioloop, zmq

channel = socket.socket(fileno=int(sys.argv[1]))
exits = {}

def reap(*_):
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        exits[pid] = os.waitstatus_to_exitcode(status)

signal.signal(signal.SIGCHLD, reap)

def receive():
    head = b""
    while len(head) < 4:
        part = channel.recv(4 - len(head))
        if not part:
            sys.exit(0)  # the test process is gone
        head += part
    size, body = struct.unpack("!I", head)[0], b""
    while len(body) < size:
        body += channel.recv(size - len(body))
    return pickle.loads(body)

def answer(value):
    body = pickle.dumps(value)
    channel.sendall(struct.pack("!I", len(body)) + body)

while True:
    request = receive()
    reap()
    if request[0] == "exit":
        answer(exits.get(request[1], None if os.path.exists(f"/proc/{request[1]}") else -1))
        continue
    _, argv, env, cwd = request
    pid = os.fork()
    if pid:
        exits.pop(pid, None)  # an earlier kernel's pid, reused
        answer(pid)
        continue
    # The kernel: what `python -m ipykernel_launcher <argv>` would be, in a session of its own.
    code = 1
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        channel.close()
        os.setsid()
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(env)
        os.environ["JPY_PARENT_PID"] = str(os.getppid())
        sys.argv = ["ipykernel_launcher", *argv]
        sys.path[0] = cwd
        ipykernel.kernelapp.launch_new_instance()
        code = 0
    except SystemExit as exit:
        code = exit.code if isinstance(exit.code, int) else (0 if exit.code is None else 1)
    finally:
        os._exit(code)
"""


class _Zygote:
    """The warm process of this test process; started on first use, asked over a socket pair."""

    def __init__(self) -> None:
        # What the interpreter read at its start (its path, warnings, modes): a kernel whose
        # environment says otherwise is launched as usual, not forked from this one.
        self.interpreter_variables = _interpreter_variables(os.environ)
        ours, theirs = socket.socketpair()
        self._process = subprocess.Popen(
            [sys.executable, "-c", _ZYGOTE, str(theirs.fileno())],
            pass_fds=[theirs.fileno()],
            stdin=subprocess.DEVNULL,
        )
        theirs.close()
        self._channel = ours
        self._lock = threading.Lock()  # one request at a time: the kernel manager's and the tests' threads

    def ask(self, request: tuple[Any, ...]) -> Any:
        body = pickle.dumps(request)
        with self._lock:
            self._channel.sendall(struct.pack("!I", len(body)) + body)
            head = self._read(4)
            return pickle.loads(self._read(struct.unpack("!I", head)[0]))

    def _read(self, size: int) -> bytes:
        data = b""
        while len(data) < size:
            part = self._channel.recv(size - len(data))
            if not part:
                raise RuntimeError("the kernel zygote ended")
            data += part
        return data

    def stop(self) -> None:
        self._channel.close()
        self._process.wait(10)


_zygote: _Zygote | None = None
_zygote_lock = threading.Lock()


def _the_zygote() -> _Zygote:
    global _zygote
    with _zygote_lock:
        if _zygote is None:
            _zygote = _Zygote()
        return _zygote


def stop_zygote() -> None:
    global _zygote
    with _zygote_lock:
        if _zygote is not None:
            _zygote.stop()
            _zygote = None


class ForkedKernel:
    """The part of `subprocess.Popen` that jupyter_client's LocalProvisioner uses, for a kernel the
    zygote forked (its child, not ours: the zygote reaps it and keeps its exit code)."""

    stdin = stdout = stderr = None

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = _the_zygote().ask(("exit", self.pid))
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while (code := self.poll()) is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(["ipykernel_launcher"], timeout or 0)
            time.sleep(0.02)
        return code

    def send_signal(self, signum: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, signum)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class ForkedProvisioner(LocalProvisioner):  # type: ignore[misc]
    """LocalProvisioner whose kernel process comes from the zygote when the command is this
    interpreter's `-m ipykernel_launcher`; any other command is launched as LocalProvisioner does."""

    async def launch_kernel(self, cmd: list[str], **kwargs: Any) -> Any:
        if len(cmd) < 3 or cmd[1:3] != ["-m", "ipykernel_launcher"] or not _this_python(cmd[0], kwargs.get("env")):
            return await super().launch_kernel(cmd, **kwargs)
        env = dict(kwargs.get("env") or os.environ)
        zygote = _the_zygote()
        if _interpreter_variables(env) != zygote.interpreter_variables:
            return await super().launch_kernel(cmd, **kwargs)
        cwd = str(kwargs.get("cwd") or os.getcwd())
        self.process = ForkedKernel(zygote.ask(("fork", cmd[3:], env, cwd)))
        self.pid = self.pgid = self.process.pid  # a session of its own: its group is itself
        self.cwd = cwd
        return self.connection_info


def _interpreter_variables(env: Mapping[str, str]) -> dict[str, str]:
    return {name: value for name, value in env.items() if name.startswith("PYTHON")}


def _this_python(program: str, env: dict[str, str] | None) -> bool:
    import shutil

    found = shutil.which(program, path=(env or os.environ).get("PATH"))
    return found is not None and os.path.realpath(found) == os.path.realpath(sys.executable)


def install() -> bool:
    """Make forked kernels the default of this process's kernel managers (unless switched off)."""
    if os.environ.get(SWITCH) == "0" or sys.platform != "linux":
        return False
    from jupyter_client.provisioning.factory import KernelProvisionerFactory

    group = KernelProvisionerFactory.GROUP_NAME
    KernelProvisionerFactory.provisioners[NAME] = EntryPoint(NAME, f"{__name__}:ForkedProvisioner", group)
    KernelProvisionerFactory.instance().default_provisioner_name = NAME
    return True
