"""A real JupyterHub for the tests: `jupyterhub` (PyPI) with `configurable-http-proxy` (npm, from
node_modules), DummyAuthenticator and SimpleLocalProcessSpawner, on free ports of 127.0.0.1, its
database and every user's home in a temporary folder (tests/jupyterhub_config.py).

Each user's single-user server runs Cellwright from this working tree (PYTHONPATH, the panel built
here linked into the user's Jupyter data folder) with the scripted fake LLM. The tests drive the hub
as an admin would, through its REST API with a service token: start servers, issue users' tokens."""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from devtools.fake_llm import FakeLLM
from devtools.jupyter_process import QUIET_LAB_ARGS, REPO, free_port, quiet_lab_settings, use_working_tree_panel

USERS = ("alice", "bob")
PASSWORD = "hub-test-password"  # DummyAuthenticator's one password, for every allowed user
PROXY = REPO / "node_modules" / ".bin" / "configurable-http-proxy"
CONFIG = Path(__file__).with_name("jupyterhub_config.py")
STOP_TIMEOUT = 30  # seconds for the hub to stop with its servers and proxy


def unavailable() -> str | None:
    """Why a hub cannot run here, or None."""
    if shutil.which("jupyterhub") is None and not _importable("jupyterhub"):
        return "jupyterhub is not installed (pip install .[test])"
    if not PROXY.exists():
        return f"{PROXY.relative_to(REPO)} is missing: run `npm ci` (scripts/test.sh does)"
    return None


def _importable(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


class Hub:
    """One JupyterHub process (with its proxy and the single-user servers it spawns)."""

    def __init__(self, base: Path, server_env: dict[str, str], users: tuple[str, ...] = USERS) -> None:
        self.base = base
        self.users = users
        self.port = free_port()
        self.admin_token = secrets.token_hex(16)
        self.log_path = base / "hub.log"
        self.proc: subprocess.Popen[bytes] | None = None
        for user in users:
            self.notebooks(user).mkdir(parents=True, exist_ok=True)
            use_working_tree_panel(self.home(user) / ".jupyter" / "data")
            quiet_lab_settings(self.home(user) / ".jupyter" / "config")
        self.settings = {
            "base": str(base),
            "bind_url": self.url,
            "hub_bind_url": f"http://127.0.0.1:{free_port()}",
            "proxy_api_url": f"http://127.0.0.1:{free_port()}",
            "proxy_command": str(PROXY),
            "users": list(users),
            "password": PASSWORD,
            "admin_token": self.admin_token,
            "python": sys.executable,
            "server_args": [*QUIET_LAB_ARGS, *(["--allow-root"] if os.geteuid() == 0 else [])],
            "environment": {
                "PATH": os.environ.get("PATH", os.defpath),
                # The working tree's code, also when an older Cellwright is pip-installed.
                "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH", "")])),
                "JUPYTER_PLATFORM_DIRS": "1",
                **server_env,
            },
        }

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def home(self, user: str) -> Path:
        return self.base / "home" / user

    def notebooks(self, user: str) -> Path:
        """The user's server root (Spawner.notebook_dir)."""
        return self.home(user) / "notebooks"

    def user_url(self, user: str) -> str:
        """The user's server through the proxy: /user/<name>."""
        return f"{self.url}/user/{user}"

    def start(self, timeout: float = 60) -> Hub:
        import json

        env = {**os.environ, "CELLWRIGHT_TEST_HUB": json.dumps(self.settings)}
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "jupyterhub", "-f", str(CONFIG)],
            env=env,
            cwd=self.base,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        self._wait(lambda: self._answers("hub/api/"), timeout, "the hub did not start")
        return self

    def api(self, method: str, path: str, body: Any = None, token: str | None = None) -> httpx.Response:
        """The hub's REST API (`/hub/api/<path>`), as the tests' admin service unless `token` is given."""
        return httpx.request(
            method,
            f"{self.url}/hub/api/{path}",
            json=body,
            headers={"Authorization": f"token {token or self.admin_token}"},
            timeout=30,
        )

    def start_servers(self, *users: str, timeout: float = 90) -> None:
        """Start the users' servers through the hub and wait until the hub says each is ready."""
        for user in users:
            response = self.api("POST", f"users/{user}/server")
            assert response.status_code in (201, 202), response.text
        for user in users:
            self._wait(lambda user=user: self._ready(user), timeout, f"{user}'s server did not start")

    def new_token(self, user: str, note: str = "cellwright tests") -> str:
        """A new API token of `user` (with the user's own permissions), issued by the admin service."""
        response = self.api("POST", f"users/{user}/tokens", {"note": note})
        assert response.status_code == 201, response.text
        return str(response.json()["token"])

    def log(self, tail: int = 4000) -> str:
        return self.log_path.read_text(errors="replace")[-tail:]

    def stop(self) -> None:
        """Stop the hub: it stops the single-user servers and the proxy itself (cleanup_servers,
        cleanup_proxy); any of them still running after that is ended here."""
        if not self.proc:
            return
        spawned = []
        try:
            spawned = psutil.Process(self.proc.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            pass
        stuck = False
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                # The hub sends each server SIGINT, SIGTERM 10 s later, then SIGKILL: a few seconds
                # when they stop as they should.
                self.proc.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                stuck = True
                self.proc.kill()
                self.proc.wait()
        for child in spawned:
            try:
                child.terminate()
            except psutil.NoSuchProcess:
                pass
        _, alive = psutil.wait_procs(spawned, timeout=10)
        for child in alive:
            child.kill()
        if stuck:
            raise RuntimeError(f"the hub had not stopped its servers {STOP_TIMEOUT} s after SIGTERM:\n{self.log()}")

    def _answers(self, path: str) -> bool:
        try:
            return httpx.get(f"{self.url}/{path}", timeout=5).status_code == 200
        except httpx.TransportError:
            return False

    def _ready(self, user: str) -> bool:
        server = self.api("GET", f"users/{user}").json().get("servers", {}).get("")
        return bool(server and server.get("ready"))

    def _wait(self, condition: Any, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"jupyterhub exited ({self.proc.returncode}):\n{self.log()}")
            if condition():
                return
            time.sleep(0.2)
        raise RuntimeError(f"{what} within {timeout:.0f} s:\n{self.log()}")


def hub_server_env(llm: FakeLLM, database_url: str = "") -> dict[str, str]:
    """What each single-user server needs: the scripted model, and the shared database if any."""
    env = {"OPENAI_BASE_URL": llm.base_url, "OPENAI_API_KEY": "sk-hub-secret", "CELLWRIGHT_MODEL": "fake-model"}
    return {**env, **({"CELLWRIGHT_DATABASE_URL": database_url} if database_url else {})}


@pytest.fixture(scope="module")
def hub_llm() -> Iterator[FakeLLM]:
    """The scripted model every user's server of the module's hub talks to."""
    with FakeLLM() as llm:
        yield llm


def running_hub(base: Path, server_env: dict[str, str], servers: tuple[str, ...] = USERS) -> Iterator[Hub]:
    """A started hub with the servers of `servers` running; stopped at the end."""
    reason = unavailable()
    if reason:
        pytest.skip(reason)
    hub = Hub(base, server_env)
    try:
        hub.start()
        hub.start_servers(*servers)
        yield hub
    finally:
        hub.stop()
