"""Real-time collaboration for tests and benches, without turning it on for the rest of the suite.

jupyter-collaboration enables itself in whatever environment it is installed in (its server
extensions and lab extensions), which would put every browser test on a shared document. So it lives
in a virtualenv of its own (this environment's JupyterLab and Cellwright, plus jupyter-collaboration),
made once per environment in the user's cache (outside the checkout) and reused; its servers are JupyterProcesses
started with that venv's Python. `NotebookPeer` is a second collaborator on a notebook: the
collaboration extension's own websocket protocol (y-sync on the room's websocket) and a jupyter_ydoc
YNotebook kept in sync with it."""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import json
import os
import subprocess
import sys
import sysconfig
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from .jupyter_process import TOKEN, JupyterProcess

COLLABORATION = "jupyter-collaboration==5.0.4"  # what the RTC tests run against
# Its server extensions, enabled by name: a venv over this environment's site-packages does not read
# the venv's own jupyter_server_config.d.
EXTENSIONS = {"jupyter_server_ydoc": True, "jupyter_server_fileid": True}


def _venv_dir() -> Path:
    """Where the venv for this environment lives: outside the checkout, named by what it is made of, so a
    fresh clone (CI's) reuses it and a change of either input makes a new one."""
    made_of = f"{COLLABORATION} over {sys.executable} {sys.version}"
    key = hashlib.sha256(made_of.encode()).hexdigest()[:16]
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "cellwright-tests" / f"rtc-venv-{key}"


def collaboration_python() -> Path:
    """The venv's Python with jupyter-collaboration installed (made on first use: ~35 s with pip's cache).
    It sees this environment's packages through a .pth file, not `--system-site-packages`, which would
    give it the base interpreter's when the tests run in a virtualenv themselves. Test processes running
    side by side (pytest-xdist) make it once: the second waits on the first's lock."""
    venv = _venv_dir()
    python = venv / "bin" / "python"
    marker = venv / "installed.txt"
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / f"{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if marker.exists() and python.exists():
            return python
        started = time.monotonic()
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        site_packages = subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        here = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
        # After the venv's own packages on sys.path (so its jupyter-collaboration wins), and seen by pip.
        (Path(site_packages) / "outer-environment.pth").write_text("\n".join(here) + "\n")
        subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", COLLABORATION], check=True
        )
        marker.write_text(COLLABORATION)
        print(f"made {venv} with {COLLABORATION} in {time.monotonic() - started:.0f} s", file=sys.stderr)
        return python


def collaboration_server(
    base: Path, env: dict[str, str], app: str = "server", args: tuple[str, ...] = ()
) -> JupyterProcess:
    """A Jupyter server (or lab) with jupyter-collaboration on, not started yet."""
    shared = Path(sysconfig.get_paths()["data"]) / "share" / "jupyter"  # this environment's JupyterLab and panel
    (base / "data").mkdir(parents=True, exist_ok=True)  # the file id database goes there
    return JupyterProcess(
        base,
        {"JUPYTERLAB_DIR": str(shared / "lab"), "JUPYTER_PATH": str(shared), **env},
        app=app,
        extra_args=[
            # Its session file and update store stay out of the notebooks' folder.
            f"--YDocExtension.session_store_path={base / 'collaboration_sessions.json'}",
            f"--SQLiteYStore.db_path={base / 'ystore.db'}",
            *args,
        ],
        python=str(collaboration_python()),
        extensions=EXTENSIONS,
    )


class _Channel:
    """A pycrdt Channel over a tornado websocket."""

    def __init__(self, connection: Any, path: str) -> None:
        self._connection = connection
        self._path = path

    @property
    def path(self) -> str:
        return self._path

    def __aiter__(self) -> _Channel:
        return self

    async def __anext__(self) -> bytes:
        message = await self._connection.read_message()
        if message is None:
            raise StopAsyncIteration
        return message if isinstance(message, bytes) else message.encode()

    async def send(self, message: bytes) -> None:
        await self._connection.write_message(message, binary=True)

    async def recv(self) -> bytes:
        return await self.__anext__()


class NotebookPeer:
    """A collaborator with `path` open: `notebook` is its YNotebook, kept in sync with the room."""

    def __init__(self, notebook: Any, provider: Any, task: asyncio.Task[None], connection: Any) -> None:
        self.notebook = notebook
        self._provider = provider
        self._task = task
        self._connection = connection
        self._changed = asyncio.Event()
        notebook.ydoc.observe(lambda _event: self._changed.set())

    @classmethod
    async def join(cls, server: JupyterProcess, path: str) -> NotebookPeer:
        from jupyter_ydoc import YNotebook
        from pycrdt import Doc, Provider
        from tornado.httpclient import HTTPRequest
        from tornado.websocket import websocket_connect

        async with httpx.AsyncClient(headers={"Authorization": f"token {TOKEN}"}) as client:
            response = await client.put(
                f"{server.url}/api/collaboration/session/{path}",
                content=json.dumps({"format": "json", "type": "notebook"}),
            )
        response.raise_for_status()
        session = response.json()
        room = f"json:notebook:{session['fileId']}"
        url = f"ws://127.0.0.1:{server.port}/api/collaboration/room/{room}?sessionId={session['sessionId']}"
        connection = await websocket_connect(HTTPRequest(url, headers={"Authorization": f"token {TOKEN}"}))
        doc = Doc()
        provider = Provider(doc, _Channel(connection, room))
        task = asyncio.create_task(provider.start())
        await provider.started.wait()
        await asyncio.wait_for(provider.synced.wait(), 30)
        notebook = YNotebook(doc)
        peer = cls(notebook, provider, task, connection)
        await peer.wait_for(lambda nb: nb.cell_number > 0, "the notebook's cells")  # loaded from the file
        return peer

    async def wait_for(self, condition: Callable[[Any], bool], what: str, timeout: float = 60) -> None:
        """Until `condition(notebook)` holds (woken by each change the room sends); TimeoutError naming `what`."""
        deadline = time.monotonic() + timeout
        while not condition(self.notebook):
            self._changed.clear()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"the peer never saw {what}: {str(self.notebook.get())[:3000]}")
            try:
                await asyncio.wait_for(self._changed.wait(), remaining)
            except asyncio.TimeoutError:
                pass

    async def close(self) -> None:
        await self._provider.stop()
        self._connection.close()
        await asyncio.gather(self._task, return_exceptions=True)
