"""Fixtures: a real Jupyter server with Cellwright (pytest-jupyter), a real ipykernel behind a
notebook session, and the scripted fake LLM the real `openai` client talks to."""

from __future__ import annotations

import asyncio
import json
import signal
from collections.abc import Iterator
from typing import Any

import pytest

from devtools import forked_kernels, jupyter_process, warm_fork
from devtools.fake_llm import FakeLLM
from devtools.sse import parse_sse

pytest_plugins = [
    "pytest_jupyter.jupyter_server",
    "tests.postgres_fixtures",
    "tests.kernel_backends",
    "tests.thread_leaks",
    "tests.bench_tables",
]

NOTEBOOK = "analysis.ipynb"


def pytest_configure(config: pytest.Config) -> None:
    # Started as a background job of a script (`.ci/run ... &`), the test command inherits SIGINT ignored,
    # and so would every server, hub and kernel a test starts: unlike a server under a service manager or
    # a hub's spawner, whose SIGINT stops it (tests/test_server_stop.py, the hub's stop). Python's default.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    # The kernels of this process's in-process servers are forked from a warm process: the same
    # ipykernel, ~1 s of CPU less each (devtools/forked_kernels.py says what changes and what does not).
    forked_kernels.install()
    # So are the Jupyter servers it starts as processes (~3 s of CPU less each): devtools/warm_fork.py.
    jupyter_process.fork_servers()
    config.addinivalue_line(
        "markers",
        "alone: a test whose outcome depends on the machine's speed (a real model under llama.cpp): the test "
        "command runs these after the parallel part, with no other test beside them (tests/README.md)",
    )
    config.addinivalue_line(
        "markers",
        "runs_long: a test that takes a minute or more; scheduled first, so parallel workers do not end the run "
        "waiting on one of them (tests/README.md)",
    )


def pytest_unconfigure(config: pytest.Config) -> None:
    warm_fork.stop_all()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Long tests first (a stable sort: otherwise collection order). pytest-xdist hands tests out in this
    order, so each worker starts on a long one and the short ones fill in around them."""
    items.sort(key=lambda item: item.get_closest_marker("runs_long") is None)


@pytest.fixture(scope="session")
def llama_prompt_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """llama.cpp's server with SmolLM2-135M and the model's own chat template (prompt tool calling),
    shared by the tests that run alone: the agent's prompt (~4,400 tokens) is evaluated once, and the
    next runs take its prefix from the server's cache (the first evaluation took ~35 s in CI)."""
    from devtools.llama_server import serve

    with serve(tmp_path_factory.mktemp("llama-prompt")) as url:
        yield url


@pytest.fixture
def fake_llm() -> Iterator[FakeLLM]:
    with FakeLLM() as llm:
        yield llm


@pytest.fixture
def cellwright_config(fake_llm: FakeLLM, tmp_path: Any, database_url: str) -> dict[str, Any]:
    return {
        **({"database_url": database_url} if database_url else {}),
        "model": "fake-model",
        "base_url": fake_llm.base_url,
        "api_key": "sk-test-secret-key",
        "data_dir": str(tmp_path / "cellwright-data"),
        "request_timeout": 10.0,
        "max_retries": 1,
    }


@pytest.fixture
def jp_server_config(cellwright_config: dict[str, Any], kernel_server_config: dict[str, Any]) -> dict[str, Any]:
    return {
        "ServerApp": {"jpserver_extensions": {"cellwright": True}},
        "Cellwright": cellwright_config,
        **kernel_server_config,  # tests/kernel_backends.py: the kernels on a Kernel Gateway, or local
    }


class Api:
    """The routes of API.md through the real server (token auth, as the panel's requests)."""

    def __init__(self, jp_fetch: Any) -> None:
        self._fetch = jp_fetch

    async def call(self, method: str, path: str, body: Any = None, expect: int | None = None, **kw: Any) -> Any:
        kwargs: dict[str, Any] = {"method": method, "raise_error": False, **kw}
        if body is not None:
            kwargs["body"] = body if isinstance(body, (str, bytes)) else json.dumps(body)
        response = await self._fetch("cellwright", "api", *path.split("/"), **kwargs)
        if expect is not None:
            assert response.code == expect, f"{method} {path}: {response.code} {response.body!r}"
        text = response.body.decode() if response.body else ""
        return response.code, (
            json.loads(text) if text and "json" in response.headers.get("Content-Type", "") else text
        )

    async def new_thread(self, notebook_path: str = NOTEBOOK) -> str:
        _, data = await self.call("POST", "threads", {"notebook_path": notebook_path}, expect=201)
        return data["thread_id"]

    async def run(self, thread_id: str, message: str, **fields: Any) -> str:
        body = {"message": message, "notebook_path": NOTEBOOK, **fields}
        _, data = await self.call("POST", f"threads/{thread_id}/runs", body, expect=202)
        return data["run_id"]

    async def events(
        self, thread_id: str, after: int = 0, headers: dict[str, str] | None = None, timeout: float = 60
    ) -> list[dict[str, Any]]:
        """Read the event stream until the server closes it (end of the active run)."""
        code, text = await self.call(
            "GET",
            f"threads/{thread_id}/events",
            params={"after": after} if not headers else None,
            headers=headers or {},
            request_timeout=timeout,
        )
        assert code == 200, text
        return parse_sse(text)

    async def until_finished(self, thread_id: str, after: int = 0, timeout: float = 60) -> list[dict[str, Any]]:
        """Events after `after` up to and including the next run_finished (`timeout`: per read of
        the stream, which stays open while the run is active)."""
        collected: list[dict[str, Any]] = []
        for _ in range(50):
            batch = await self.events(thread_id, after, timeout=timeout)
            collected += batch
            if any(e["type"] == "run_finished" for e in collected):
                return collected
            after = collected[-1]["seq"] if collected else after
            await asyncio.sleep(0.1)
        raise AssertionError(f"no run_finished in {collected}")

    async def approve(self, thread_id: str, call_id: str, decision: str = "approve", **fields: Any) -> tuple[int, Any]:
        return await self.call("POST", f"threads/{thread_id}/approvals/{call_id}", {"decision": decision, **fields})


def _stopped_at_end() -> Iterator[list[Any]]:
    started: list[Any] = []
    yield started
    for server in started:
        server.stop()


@pytest.fixture
def servers() -> Iterator[list[Any]]:
    """Jupyter server processes a test starts (devtools.jupyter_process), stopped at its end."""
    yield from _stopped_at_end()


@pytest.fixture(scope="module")
def module_servers() -> Iterator[list[Any]]:
    """Jupyter server processes a module's tests share, stopped after its last test."""
    yield from _stopped_at_end()


@pytest.fixture
def api(jp_fetch: Any) -> Api:
    return Api(jp_fetch)


@pytest.fixture
def notebook_kernel(jp_serverapp: Any, jp_root_dir: Any, jp_asyncio_loop: Any) -> Iterator[str]:
    """A real ipykernel behind a Jupyter session for NOTEBOOK, as JupyterLab makes when it opens it."""
    import nbformat

    nbformat.write(nbformat.v4.new_notebook(), str(jp_root_dir / NOTEBOOK))
    create = jp_serverapp.session_manager.create_session(path=NOTEBOOK, kernel_name="python3", type="notebook")
    kernel_id = jp_asyncio_loop.run_until_complete(create)["kernel"]["id"]
    yield kernel_id
    if kernel_id in jp_serverapp.kernel_manager:
        jp_asyncio_loop.run_until_complete(jp_serverapp.kernel_manager.shutdown_kernel(kernel_id, now=True))


def of_type(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == kind]


async def execute_reply(serverapp: Any, kernel_id: str, code: str, timeout: float = 10) -> dict[str, Any]:
    """Run `code` in the kernel on a client of its own (local or gateway: the server's own way of
    connecting, jupyter_ext.kernel_clients); the execute_reply."""
    from jupyter_ext.kernel_clients import connected_client

    client = await connected_client(serverapp.kernel_manager.get_kernel(kernel_id), outputs=False)
    try:
        msg_id = client.execute(code)
        while (reply := await client.get_shell_msg(timeout=timeout))["parent_header"].get("msg_id") != msg_id:
            pass
        return reply
    finally:
        client.stop_channels()
