"""The benchmark run: a real Cellwright Jupyter server started for it (its own folders), pointed at
the endpoint and model given, the datasets generated in its root, every selected task driven through
it in turn, and a report (settings, date, per-task results, summary)."""

from __future__ import annotations

import datetime
import tempfile
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.agent_tasks.datasets import generate
from bench.agent_tasks.driver import KEPT, Server, TaskResult, run_task
from bench.agent_tasks.expected import Expected, expected_answers
from bench.agent_tasks.report import summary
from bench.agent_tasks.tasks import Task
from devtools.jupyter_process import TOKEN, JupyterProcess


@dataclass(frozen=True)
class Settings:
    base_url: str
    model: str
    mode: str = "single"
    tool_calling: str = "native"
    policy: str = "approve-all"  # the approval policy
    tasks: str = ""  # the --tasks pattern ("" for all)
    limit_s: float = 300.0  # per task
    verify: bool = True
    jobs: int = 1  # tasks run at once (their times then include waiting for each other)
    max_model_calls: int = 0  # per run; 0 keeps the server's default
    max_reply_tokens: int = 0  # per model reply; 0 keeps the server's default (the endpoint's own limit)
    sandbox: str = "auto"  # c.Cellwright.sandbox: "off" asks for every explore (issue 37)
    # The test suite's runs only: kernels forked from a warm process (devtools/forked_kernels.py), ~1 s
    # sooner each. Never the command line's, whose figures are what a user's server does.
    forked_kernels: bool = False


@contextmanager
def cellwright_server(settings: Settings, api_key: str = "", base: Path | None = None) -> Iterator[JupyterProcess]:
    """A real Jupyter server with Cellwright, configured for `settings`, stopped on leaving."""
    with tempfile.TemporaryDirectory(prefix="cellwright-bench-") as tmp:
        env = {"OPENAI_BASE_URL": settings.base_url, "OPENAI_API_KEY": api_key, "CELLWRIGHT_MODEL": settings.model}
        args = [f"--Cellwright.max_model_calls={settings.max_model_calls}"] if settings.max_model_calls else []
        args += [f"--Cellwright.max_reply_tokens={settings.max_reply_tokens}"] if settings.max_reply_tokens else []
        args += [f"--Cellwright.sandbox={settings.sandbox}"]
        server = JupyterProcess(base or Path(tmp), env, extra_args=args, forked_kernels=settings.forked_kernels)
        try:
            server.start()
            yield server
        finally:
            server.stop()


def run_on_new_server(
    settings: Settings,
    tasks: list[Task],
    expected: dict[str, Expected],
    api_key: str = "",
    on_result: Callable[[TaskResult], None] | None = None,
) -> dict[str, Any]:
    """The report of `tasks` run through a Cellwright server started for them (the datasets in its root)."""
    with cellwright_server(settings, api_key) as server:
        generate(server.root)
        return run_benchmark(server.url, server.root, tasks, settings, expected, on_result)


def prepare(root: Path, tasks: list[Task]) -> dict[str, Expected]:
    """The datasets written under `root` and what each task expects of them."""
    generate(root)
    return expected_answers(tasks, root)


def run_benchmark(
    url: str,
    root: Path,
    tasks: list[Task],
    settings: Settings,
    expected: dict[str, Expected] | None = None,
    on_result: Callable[[TaskResult], None] | None = None,
) -> dict[str, Any]:
    """Every task of `tasks` through the server at `url` (root folder `root`); the report."""
    expected = expected or prepare(root, tasks)
    setup = Server(url, TOKEN)
    try:
        setup.call(
            "PUT",
            "cellwright/api/config",
            {"model": settings.model, "tool_calling": settings.tool_calling, "auto_approve": []},
        )
        setup.call("PUT", f"api/contents/{KEPT}", {"type": "directory"})
    finally:
        setup.close()
    local = threading.local()  # a connection pool per worker thread: httpx clients are not shared across threads
    servers: list[Server] = []

    def one(task: Task) -> dict[str, Any]:
        if not hasattr(local, "server"):
            local.server = Server(url, TOKEN)
            local.path = f"bench-{len(servers)}.ipynb"  # the worker's notebook (driver.run_task says why one)
            servers.append(local.server)
        result = run_task(
            local.server,
            task,
            expected[task.id],
            local.path,
            settings.mode,
            settings.policy,
            settings.limit_s,
            settings.verify,
        )
        if on_result is not None:
            on_result(result)
        return result.as_dict()

    try:
        with ThreadPoolExecutor(max_workers=max(1, settings.jobs)) as pool:
            results = list(pool.map(one, tasks))  # each task its own notebook, kernel and thread: nothing shared
    finally:
        for server in servers:
            server.close()
    return {
        "settings": asdict(settings),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "results": results,
        "summary": summary(results),
    }
