"""Cellwright's routes under a real JupyterHub, through its proxy, with the hub's own API tokens:
alice's and bob's single-user servers (/user/<name>/) on one shared PostgreSQL, as a team runs them.
No browser here (tests/ui/test_hub_browser.py logs in through the hub's form)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from devtools.fake_llm import FakeLLM, tool_call
from devtools.postgres_cluster import PostgresCluster
from devtools.sse import parse_sse
from tests.conftest import of_type
from tests.hub_fixture import Hub, hub_llm, hub_server_env, running_hub  # noqa: F401 (hub_llm: a fixture)

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def shared_database(postgres_server: PostgresCluster) -> Iterator[str]:
    """The one database both users' servers keep their threads in."""
    url = postgres_server.new_database()
    yield url
    postgres_server.drop_database(url)


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory, hub_llm: FakeLLM, shared_database: str) -> Iterator[Hub]:
    yield from running_hub(tmp_path_factory.mktemp("hub"), hub_server_env(hub_llm, shared_database))


class Client:
    """`user`'s token (issued by the hub) calling Cellwright on `server`'s /user/<server>/ through the proxy."""

    def __init__(self, hub: Hub, user: str, token: str, server: str | None = None) -> None:
        self.base = f"{hub.user_url(server or user)}/cellwright/api"
        self.headers = {"Authorization": f"token {token}"}

    def call(self, method: str, path: str, body: Any = None, timeout: float = 60) -> httpx.Response:
        # A fresh connection per call, no cookies kept: each request is authenticated by the token alone.
        return httpx.request(
            method, f"{self.base}/{path}", json=body, headers=self.headers, timeout=timeout, follow_redirects=False
        )

    def ok(self, method: str, path: str, body: Any = None, status: int = 200) -> Any:
        response = self.call(method, path, body)
        assert response.status_code == status, f"{method} {self.base}/{path}: {response.status_code} {response.text}"
        return response.json() if "json" in response.headers.get("Content-Type", "") else response.text

    def new_thread(self, notebook_path: str = "analysis.ipynb") -> str:
        return str(self.ok("POST", "threads", {"notebook_path": notebook_path}, 201)["thread_id"])


@pytest.fixture(scope="module")
def tokens(hub: Hub) -> dict[str, str]:
    return {user: hub.new_token(user) for user in hub.users}


@pytest.fixture(scope="module")
def alice(hub: Hub, tokens: dict[str, str]) -> Client:
    return Client(hub, "alice", tokens["alice"])


@pytest.fixture(scope="module")
def bob(hub: Hub, tokens: dict[str, str]) -> Client:
    return Client(hub, "bob", tokens["bob"])


@pytest.mark.parametrize("user", ["alice", "bob"])
def test_each_users_server_answers_every_route_under_its_prefix(
    hub: Hub, tokens: dict[str, str], hub_llm: FakeLLM, user: str
) -> None:
    me = Client(hub, user, tokens[user])
    health = me.ok("GET", "health")
    assert health["checkpointer"] == "postgres" and health["llm_configured"], health
    assert me.ok("GET", "config")["model"] == "fake-model"
    assert me.ok("PUT", "config", {"model": "fake-model"})["model"] == "fake-model"  # a write: no XSRF asked of a token
    assert "fake-model" in str(me.ok("GET", "config/models"))
    assert "paths" in me.ok("GET", "openapi.json")
    assert me.ok("GET", "mcp/servers") == {"servers": []}
    assert "state" in me.ok("GET", "knowledge/status")
    assert "diagnostics" in me.ok("POST", "diagnostics", {"code": "import os\n"})
    assert "system" in me.ok("POST", "resources", {})
    assert "variables" in me.ok("POST", "variables", {})
    assert me.ok("POST", "notebook_tools", {}) == {"tools": [], "notes": []}

    created = me.call("POST", "threads", {"notebook_path": f"{user}.ipynb"})
    assert created.status_code == 201, created.text
    thread_id = created.json()["thread_id"]
    # The Location the server gives is under the user's prefix, where the proxy routes it back.
    assert created.headers["Location"] == f"/user/{user}/cellwright/api/threads/{thread_id}"
    assert thread_id in [t["thread_id"] for t in me.ok("GET", "threads")["threads"]]
    assert me.ok("GET", f"threads/{thread_id}")["status"] == "idle"

    # A whole run through the proxy: started with a POST, its events read as Server-Sent Events.
    hub_llm.script(tool_call("final_answer", {"answer": f"hello {user}"}))
    me.ok("POST", f"threads/{thread_id}/runs", {"message": "say hello", "notebook_path": f"{user}.ipynb"}, 202)
    stream = me.call("GET", f"threads/{thread_id}/events")
    assert stream.status_code == 200 and stream.headers["Content-Type"].startswith("text/event-stream")
    events = parse_sse(stream.text)
    assert of_type(events, "final")[0]["answer"] == f"hello {user}"
    assert of_type(events, "run_finished"), [e["type"] for e in events]
    assert me.ok("GET", f"threads/{thread_id}")["status"] == "completed"

    assert me.call("POST", f"threads/{thread_id}/cancel").status_code == 202  # nothing to stop: accepted all the same
    assert me.call("DELETE", f"threads/{thread_id}").status_code == 204
    assert me.call("GET", f"threads/{thread_id}").status_code == 404


def test_bobs_token_cannot_reach_alices_server(hub: Hub, tokens: dict[str, str], alice: Client) -> None:
    alices_thread = alice.new_thread("private.ipynb")
    as_bob = Client(hub, "bob", tokens["bob"], server="alice")
    for method, path, body in [
        ("GET", "health", None),
        ("GET", "threads", None),
        ("GET", f"threads/{alices_thread}", None),
        ("GET", f"threads/{alices_thread}/events", None),
        ("POST", "threads", {"notebook_path": "planted.ipynb"}),
        ("POST", f"threads/{alices_thread}/runs", {"message": "hi"}),
        ("DELETE", f"threads/{alices_thread}", None),
        ("GET", "config", None),
        # an outside agent planted in her settings would run as her, with her files (issue 40)
        ("PUT", "config", {"acp_agents": {"planted": {"command": "sh", "args": ["-c", "id"]}}}),
    ]:
        response = as_bob.call(method, path, body)
        # Alice's server asks the hub who the token is; bob has no access to her server: 403, no redirect.
        assert response.status_code == 403, f"{method} {path}: {response.status_code} {response.text}"
        assert alices_thread not in response.text and "private.ipynb" not in response.text
    # Without a token: refused as well (an API route answers 403 rather than redirecting to the login).
    anonymous = httpx.get(f"{hub.user_url('alice')}/cellwright/api/threads", timeout=30)
    assert anonymous.status_code == 403, anonymous.text
    # Nothing bob sent reached her threads.
    paths = [t["notebook_path"] for t in alice.ok("GET", "threads")["threads"]]
    assert "private.ipynb" in paths and "planted.ipynb" not in paths
    assert "planted" not in alice.ok("GET", "config")["acp_agents"]


def test_bobs_server_shows_none_of_alices_threads_on_the_shared_database(alice: Client, bob: Client) -> None:
    alices_thread = alice.new_thread("alice-only.ipynb")
    bobs_thread = bob.new_thread("bob-only.ipynb")
    listed_by_bob = [t["thread_id"] for t in bob.ok("GET", "threads")["threads"]]
    assert bobs_thread in listed_by_bob
    assert alices_thread not in listed_by_bob
    for method, path, body in [
        ("GET", f"threads/{alices_thread}", None),
        ("GET", f"threads/{alices_thread}/events", None),
        ("POST", f"threads/{alices_thread}/runs", {"message": "hi"}),
        ("POST", f"threads/{alices_thread}/cancel", None),
        ("DELETE", f"threads/{alices_thread}", None),
    ]:
        response = bob.call(method, path, body)
        assert response.status_code == 404, f"{method} {path}: {response.status_code} {response.text}"
        assert "alice-only.ipynb" not in response.text
    # And the other way round; her thread is still hers.
    assert bobs_thread not in [t["thread_id"] for t in alice.ok("GET", "threads")["threads"]]
    assert alice.ok("GET", f"threads/{alices_thread}")["notebook_path"] == "alice-only.ipynb"
