"""A real `jupyter server` / `jupyter lab` in a subprocess, for tests that restart it or drive it
from a browser, and a real Jupyter Kernel Gateway for tests of remote kernels. Each instance gets
its own config, data and runtime directories."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from . import warm_fork
from .sse import parse_sse

TOKEN = "cellwright-test-token"
REPO = Path(__file__).resolve().parent.parent


APP_MODULES = {"server": "jupyter_server", "lab": "jupyterlab"}

# What a Jupyter server with Cellwright imports at start and on its first run (~4 s of CPU; importing
# jupyterlab.labapp also runs node to read yarn's configuration). Checked for what they read from the
# environment while imported: only LabApp's two folders below, which a forked lab is given explicitly.
SERVER_PRELOAD = (
    "jupyter_server.serverapp",
    "jupyterlab.labapp",
    "jupyter_ext.extension",
    "jupyter_ext.sandbox_health",  # GET health, which the panel asks at once
    "agent_core.loop.thread_runner",  # what recovering threads at start imports
    "nbconvert",  # GET api/nbconvert, which JupyterLab asks on every page load
    "langgraph.graph",
    "openai",
)


class _Forking:
    """Whether this process starts its Jupyter servers forked from a warm process (devtools/warm_fork.py):
    the test processes do (tests/conftest.py), a benchmark's command line never does."""

    on = False


def fork_servers() -> None:
    _Forking.on = True


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def port_is_free(port: int) -> bool:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as tornado binds: TIME_WAIT is no obstacle
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def isolated_env(base: Path, env: dict[str, str]) -> dict[str, str]:
    """The process's environment: Jupyter's folders under `base`, and this working tree's code first."""
    return {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(base / "config"),
        "JUPYTER_DATA_DIR": str(base / "data"),
        "JUPYTER_RUNTIME_DIR": str(base / "runtime"),
        "JUPYTER_PLATFORM_DIRS": "1",
        # The working tree's code, also when an older Cellwright is pip-installed.
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH", "")])),
        **env,
    }


def wait_serving(
    proc: subprocess.Popen[bytes] | warm_fork.ForkedProcess, url: str, log_path: Path, name: str, timeout: float
) -> None:
    """Poll `url` until it answers 200; RuntimeError with the log's tail if the process exits or never does."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{name} exited: {log_path.read_text()[-3000:]}")
        try:
            if httpx.get(url, headers={"Authorization": f"token {TOKEN}"}, timeout=5).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{name} did not start: {log_path.read_text()[-3000:]}")


def stop_process(proc: subprocess.Popen[bytes] | warm_fork.ForkedProcess | None) -> None:
    if proc and proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# No news feed and no update check: nothing pops up over the panel, nothing is fetched from outside.
QUIET_LAB_ARGS = ["--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]


def use_working_tree_panel(data_dir: Path) -> None:
    """Lab loads the panel built in this working tree (npm run build), not an installed copy: the
    server's own data directory (JUPYTER_DATA_DIR) comes first on Jupyter's path."""
    built = REPO / "jupyter_ext" / "labextension"
    link = data_dir / "labextensions" / "cellwright"
    if (built / "package.json").exists() and not link.is_symlink():
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(built, target_is_directory=True)


def quiet_lab_settings(config_dir: Path) -> None:
    """No "receive Jupyter news?" toast over the panel: the user settings (in JUPYTER_CONFIG_DIR) answer it."""
    settings = config_dir / "lab" / "user-settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True, exist_ok=True)
    (settings / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )


class JupyterProcess:
    def __init__(
        self,
        base: Path,
        env: dict[str, str],
        app: str = "server",
        extra_args: list[str] | None = None,
        cellwright: bool = True,
        python: str = sys.executable,
        extensions: dict[str, bool] | None = None,
        forked_kernels: bool = False,
    ) -> None:
        self.base = base
        self.python = python  # another environment's, e.g. devtools.collaboration's venv
        self.extensions = extensions or {}  # server extensions enabled besides Cellwright
        self.root = base / "root"
        self.root.mkdir(parents=True, exist_ok=True)
        self.env = isolated_env(base, env)
        self.app = app
        self.extra_args = extra_args or []
        self.cellwright = cellwright
        self.proc: subprocess.Popen[bytes] | warm_fork.ForkedProcess | None = None
        self.port = 0
        if app == "lab":
            use_working_tree_panel(base / "data")
        self.log_path = base / f"{app}.log"
        if forked_kernels:  # devtools/forked_kernels.py, in the server's process (its config is Python)
            config = base / "config" / "jupyter_server_config.py"
            config.parent.mkdir(parents=True, exist_ok=True)
            config.write_text("from devtools import forked_kernels\n\nforked_kernels.install()\n")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60, port: int = 0) -> JupyterProcess:
        """Start and wait until it serves; on `port` if given and still free (else on any free one)."""
        self.port = port if port and port_is_free(port) else free_port()
        options = [
            "--no-browser",
            "--allow-root",
            f"--port={self.port}",
            "--ServerApp.port_retries=0",  # that port or none: the URL polled below is this one's
            "--ServerApp.ip=127.0.0.1",
            f"--IdentityProvider.token={TOKEN}",
            f"--ServerApp.root_dir={self.root}",
            f"--ServerApp.jpserver_extensions={ {'cellwright': self.cellwright, **self.extensions} }",
            *self.extra_args,
        ]
        self.proc = self._forked(options) or self._launched(options)
        wait_serving(self.proc, f"{self.url}/api/status", self.log_path, f"jupyter {self.app}", timeout)
        return self

    def _launched(self, options: list[str]) -> subprocess.Popen[bytes]:
        # `jupyter <app>` runs the app's script found on PATH, whose Python is this one's: another
        # environment's Python runs the app's module itself.
        app = ["jupyter", self.app] if self.python == sys.executable else [APP_MODULES[self.app]]
        log = open(self.log_path, "ab")
        # No terminal on stdin, as under a service manager or JupyterHub: a SIGINT then ends the event
        # loop at once (Jupyter asks "Shut down?" only on a terminal).
        return subprocess.Popen(
            [self.python, "-m", *app, *options],
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=self.root,
        )

    def _forked(self, options: list[str]) -> warm_fork.ForkedProcess | None:
        """The same server forked from a warm process, in a test process that asked for it."""
        if not _Forking.on or self.python != sys.executable:
            return None
        zygote = warm_fork.zygote_for(SERVER_PRELOAD, self.env)
        if zygote is None:
            return None
        if self.app == "lab":  # what LabApp's defaults would be in a fresh process with this environment
            lab = Path(self.env["JUPYTER_CONFIG_DIR"]) / "lab"
            settings = self.env.get("JUPYTERLAB_SETTINGS_DIR") or lab / "user-settings"
            workspaces = self.env.get("JUPYTERLAB_WORKSPACES_DIR") or lab / "workspaces"
            options = [f"--LabApp.user_settings_dir={settings}", f"--LabApp.workspaces_dir={workspaces}", *options]
        return zygote.fork(APP_MODULES[self.app], options, self.env, str(self.root), output=str(self.log_path))

    def stop(self) -> None:
        stop_process(self.proc)

    def request(self, method: str, path: str, body: Any = None, **kw: Any) -> httpx.Response:
        headers = {"Authorization": f"token {TOKEN}", **kw.pop("headers", {})}
        content = json.dumps(body) if body is not None else None
        return httpx.request(
            method, f"{self.url}/{path}", content=content, headers=headers, timeout=kw.pop("timeout", 60), **kw
        )

    def get(self, path: str, **kw: Any) -> httpx.Response:
        return self.request("GET", path, **kw)

    def events(self, thread_id: str, after: int = 0) -> list[dict[str, Any]]:
        """The thread's events after `after`, read until the server closes the stream."""
        response = self.get(f"cellwright/api/threads/{thread_id}/events?after={after}")
        assert response.status_code == 200, response.text
        return parse_sse(response.text)

    def open_notebook(self, path: str, kernel: str = "python3") -> str:
        """What JupyterLab does when it opens a notebook: a session with a kernel (of the kernel spec
        `kernel`). Returns the kernel id."""
        import nbformat

        if not (self.root / path).exists():
            nbformat.write(nbformat.v4.new_notebook(), str(self.root / path))
        body = {"path": path, "name": path, "type": "notebook", "kernel": {"name": kernel}}
        response = self.request("POST", "api/sessions", body)
        assert response.status_code == 201, response.text
        return response.json()["kernel"]["id"]


def kill_9(server: JupyterProcess) -> None:
    """The server killed as a crash kills it: no shutdown, its kernels left to themselves."""
    assert server.proc is not None
    os.kill(server.proc.pid, signal.SIGKILL)
    server.proc.wait()


def read_until(server: JupyterProcess, thread: str, after: int, stop: Any, seen: list[dict[str, Any]]) -> None:
    """Follow the thread's SSE stream, keeping every stored event, until `stop(seen)` or the stream ends."""
    headers = {"Authorization": f"token {TOKEN}", "Last-Event-ID": str(after)}
    try:
        with httpx.stream(
            "GET", f"{server.url}/cellwright/api/threads/{thread}/events", headers=headers, timeout=60
        ) as response:
            fields: dict[str, str] = {}
            for line in response.iter_lines():
                if line:
                    if not line.startswith(":"):
                        key, _, value = line.partition(": ")
                        fields[key] = value
                    continue
                if "id" in fields:
                    seen.append(json.loads(fields["data"]))
                    if stop(seen):
                        return
                fields = {}
    except httpx.HTTPError:
        pass  # the server died under us


class KernelGatewayProcess:
    """A real Jupyter Kernel Gateway (`jupyter kernelgateway`, the websocket personality) on
    127.0.0.1: a Jupyter server started with `--gateway-url=<url>` runs its kernels here."""

    def __init__(self, base: Path, env: dict[str, str] | None = None, extra_args: list[str] | None = None) -> None:
        base.mkdir(parents=True, exist_ok=True)
        self.env = isolated_env(base, env or {})
        self.extra_args = extra_args or []
        self.log_path = base / "kernelgateway.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60) -> KernelGatewayProcess:
        self.port = free_port()
        args = [
            sys.executable,
            "-m",
            "jupyter",
            "kernelgateway",
            "--KernelGatewayApp.ip=127.0.0.1",
            f"--KernelGatewayApp.port={self.port}",
            "--KernelGatewayApp.port_retries=0",
            # GET /api/kernels: the Jupyter server lists the gateway's kernels to refresh its own
            "--JupyterWebsocketPersonality.list_kernels=True",
            *self.extra_args,
        ]
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(args, env=self.env, stdout=log, stderr=subprocess.STDOUT)
        wait_serving(self.proc, f"{self.url}/api", self.log_path, "jupyter kernelgateway", timeout)
        return self

    def kernels(self) -> list[dict[str, Any]]:
        """The gateway's kernels, as it lists them itself."""
        response = httpx.get(f"{self.url}/api/kernels", timeout=10)
        response.raise_for_status()
        return list(response.json())

    def stop(self) -> None:
        stop_process(self.proc)
