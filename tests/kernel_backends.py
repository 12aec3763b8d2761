"""Running the kernel-path route tests against a Kernel Gateway too (a pytest plugin, loaded by
tests/conftest.py; issue 22: "the whole route suite once more with a gateway kernel").

- `kernel_backend`: "local" (the server's own ipykernels, the default) or "gateway": the in-process
  server of pytest-jupyter then has `GatewayClient.url` set, so its kernel manager is jupyter_server's
  GatewayMappingKernelManager and `notebook_kernel` starts on one real `jupyter kernelgateway`
  shared by the session.
- Tests marked `also_gateway` (the kernel paths: cells with outputs, Stop, restart, @mentions and
  variables, undo, @tool functions, check_resource) run once per backend. The gateway variant runs
  on SQLite only: the store is not what a gateway changes, and the Postgres variants already run."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from jupyter_server.gateway.gateway_client import GatewayClient

from devtools.jupyter_process import KernelGatewayProcess

BACKENDS = ("local", "gateway")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "also_gateway: run the test once more with its kernel on a Kernel Gateway")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "kernel_backend" in metafunc.fixturenames and metafunc.definition.get_closest_marker("also_gateway"):
        metafunc.parametrize("kernel_backend", BACKENDS, indirect=True)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """No gateway x PostgreSQL variant (see the module's docstring)."""
    kept, dropped = [], []
    for item in items:
        params = getattr(item, "callspec", None)
        chosen = params.params if params else {}
        both = chosen.get("kernel_backend") == "gateway" and chosen.get("database_url") == "postgres"
        (dropped if both else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


@pytest.fixture(scope="session")
def kernel_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KernelGatewayProcess]:
    """One real Kernel Gateway for the session's gateway variants (started by the first of them)."""
    gateway = KernelGatewayProcess(tmp_path_factory.mktemp("kernel-gateway")).start()
    yield gateway
    gateway.stop()


@pytest.fixture
def kernel_backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """Where the test server's kernels run. GatewayClient is a process-wide singleton that the
    server makes from its config once: it is dropped before and after, so a gateway variant's URL
    never leaks into the next test's server (nor a local one's lack of it into a gateway variant)."""
    backend = str(getattr(request, "param", "local"))
    GatewayClient.clear_instance()
    yield backend
    GatewayClient.clear_instance()


@pytest.fixture
def kernel_server_config(kernel_backend: str, request: pytest.FixtureRequest) -> dict[str, dict[str, str]]:
    """The server config that puts its kernels on the session's gateway (none for local kernels)."""
    if kernel_backend != "gateway":
        return {}
    gateway: KernelGatewayProcess = request.getfixturevalue("kernel_gateway")
    return {"GatewayClient": {"url": gateway.url}}
