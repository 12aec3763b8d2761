"""Processes for the tests forked from a warm interpreter instead of started with a fresh one.

Most of what a kernel or a Jupyter server costs to start is importing its modules: ~1.2 s of CPU for
an ipykernel, ~4 s for a Jupyter server with Cellwright (jupyter_server, langgraph, openai, pydantic)
on the 2-core machine, and the suite starts hundreds of both. A "zygote" imports a set of modules
once and forks a child per process; the child then runs `python -m <module> <args>` exactly as a
fresh interpreter would (`runpy`, its own argv, environment, working directory and standard streams),
so it is the same program started on a fraction of the CPU.

What a fork cannot give: a module that read the environment while it was imported keeps the
zygote's value. So a zygote preloads only modules checked not to (devtools/forked_kernels.py and
devtools/jupyter_process.py list theirs), every process whose interpreter variables (PYTHON*) differ
from the zygote's is started as usual, and a zygote whose imports started a thread (which a fork
would not carry over) refuses to fork. Used only by test processes; `CELLWRIGHT_TEST_FORKED=0` turns
it off."""

from __future__ import annotations

import collections
import os
import pickle
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

SWITCH = "CELLWRIGHT_TEST_FORKED"

_ZYGOTE = """
import ctypes, importlib, os, pickle, runpy, signal, socket, struct, sys, threading

channel = socket.socket(fileno=int(sys.argv[1]))
usable = True
for name in sys.argv[2:]:
    try:
        importlib.import_module(name)
    except Exception as error:  # started as usual, then: slower, not wrong
        print(f"warm_fork: {name} cannot be preloaded ({error}); its processes start as usual", file=sys.stderr)
        usable = False
if threading.active_count() != 1:  # a thread would not exist in a forked child
    print(f"warm_fork: preloading {sys.argv[2:]} started a thread; its processes start as usual", file=sys.stderr)
    usable = False
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

def become(module, argv, env, cwd, output, new_session):
    # What `python -m <module> <argv>` would be, started by subprocess.Popen with these streams.
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    channel.close()
    if new_session:
        os.setsid()
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    if output:
        log = os.open(output, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.dup2(log, 1)
        os.dup2(log, 2)
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    sys.argv = [module, *argv]
    sys.path[0] = cwd
    # Named for what it runs (ps, top), not for the zygote's command line it inherited.
    ctypes.CDLL(None).prctl(15, ("fork:" + module).encode()[:15], 0, 0, 0)  # PR_SET_NAME
    runpy.run_module(module, run_name="__main__", alter_sys=True)

answer(usable)
while True:
    request = receive()
    reap()
    if request[0] == "exit":
        answer(exits.get(request[1], None if os.path.exists(f"/proc/{request[1]}") else -1))
        continue
    pid = os.fork()
    if pid:
        exits.pop(pid, None)  # an earlier child's pid, reused
        answer(pid)
        continue
    code = 1
    try:
        become(*request[1:])
        code = 0
    except SystemExit as exit:
        code = exit.code if isinstance(exit.code, int) else (0 if exit.code is None else 1)
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
"""


class Zygote:
    """A warm interpreter that imported `preload` once, asked over a socket pair to fork."""

    def __init__(self, preload: Sequence[str], interpreter_variables: Mapping[str, str]) -> None:
        ours, theirs = socket.socketpair()
        # The zygote's own environment: this process's, with the interpreter variables of the
        # processes it will fork (what the interpreter reads at its start: its path, its modes).
        env = {name: value for name, value in os.environ.items() if not name.startswith("PYTHON")}
        self._process = subprocess.Popen(
            [sys.executable, "-c", _ZYGOTE, str(theirs.fileno()), *preload],
            pass_fds=[theirs.fileno()],
            stdin=subprocess.DEVNULL,
            env={**env, **interpreter_variables},
        )
        theirs.close()
        self._channel = ours
        self._lock = threading.Lock()  # one request at a time: the kernel manager's and the tests' threads
        self.usable = bool(self._answer())
        self.pid = self._process.pid

    def fork(
        self,
        module: str,
        argv: Sequence[str],
        env: Mapping[str, str],
        cwd: str,
        output: str = "",
        new_session: bool = False,
    ) -> ForkedProcess:
        """A child running `python -m module argv`; `output`: the file its stdout and stderr append to."""
        pid = self.ask(("fork", module, list(argv), dict(env), cwd, output, new_session))
        return ForkedProcess(self, pid, [sys.executable, "-m", module, *argv])

    def ask(self, request: tuple[Any, ...]) -> Any:
        body = pickle.dumps(request)
        with self._lock:
            self._channel.sendall(struct.pack("!I", len(body)) + body)
            return self._answer()

    def _answer(self) -> Any:
        head = self._read(4)
        return pickle.loads(self._read(struct.unpack("!I", head)[0]))

    def _read(self, size: int) -> bytes:
        data = b""
        while len(data) < size:
            part = self._channel.recv(size - len(data))
            if not part:
                raise RuntimeError("the zygote ended")
            data += part
        return data

    def stop(self) -> None:
        self._channel.close()
        self._process.wait(10)


class ForkedProcess:
    """The part of `subprocess.Popen` that jupyter_client's LocalProvisioner and the tests use, for a
    process the zygote forked (its child, not ours: the zygote reaps it and keeps its exit code)."""

    stdin = stdout = stderr = None

    def __init__(self, zygote: Zygote, pid: int, args: list[str]) -> None:
        self._zygote = zygote
        self.pid = pid
        self.args = args
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self._zygote.ask(("exit", self.pid))
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while (code := self.poll()) is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
            time.sleep(0.02)
        return code

    def send_signal(self, signum: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, signum)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


_zygotes: dict[tuple[tuple[str, ...], tuple[tuple[str, str], ...]], Zygote] = {}
_zygotes_lock = threading.Lock()
_asked: collections.Counter[tuple[tuple[str, ...], tuple[tuple[str, str], ...]]] = collections.Counter()


def zygote_for(preload: Sequence[str], env: Mapping[str, str]) -> Zygote | None:
    """The zygote that preloaded `preload` for processes with `env`'s interpreter variables; None
    when forking is off, the zygote cannot fork safely, or this is the first such process: a zygote
    costs more than one process started as usual, so it is started for the second (a test whose
    server has an interpreter path of its own, e.g. without an extra, starts it as usual)."""
    if os.environ.get(SWITCH) == "0" or sys.platform != "linux":
        return None
    variables = interpreter_variables(env)
    key = (tuple(preload), tuple(sorted(variables.items())))
    with _zygotes_lock:
        _asked[key] += 1
        if key not in _zygotes and _asked[key] >= 2:
            _zygotes[key] = Zygote(preload, variables)
        zygote = _zygotes.get(key)
    return zygote if zygote is not None and zygote.usable else None


def stop_all() -> None:
    with _zygotes_lock:
        for zygote in _zygotes.values():
            zygote.stop()
        _zygotes.clear()


def interpreter_variables(env: Mapping[str, str]) -> dict[str, str]:
    return {name: value for name, value in env.items() if name.startswith("PYTHON")}


def this_python(program: str, env: Mapping[str, str] | None = None) -> bool:
    """Whether `program` (a path or a name on env's PATH) is this interpreter."""
    import shutil

    found = shutil.which(program, path=(env or os.environ).get("PATH"))
    return found is not None and os.path.realpath(found) == os.path.realpath(sys.executable)
