"""With jupyter-collaboration: `cell_finished` on the thread's event stream -> the cell finished in a
second collaborator's copy of the notebook (a y-sync peer on the room's websocket, as a browser is),
versus the baseline of the same peer seeing an edit another peer made (the room's own relay), both
measured in this run on the same server. Prints p50/p95 of each and the ratio of the medians.

    python bench/rtc_cell_visible.py [cells]
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from devtools.collaboration import NotebookPeer, collaboration_server  # noqa: E402
from devtools.fake_llm import FakeLLM, text, tool_call  # noqa: E402
from devtools.jupyter_process import TOKEN, JupyterProcess  # noqa: E402
from jupyter_ext.shared_notebook import agent_metadata  # noqa: E402

PER_RUN = 20


def finished_at(peer: NotebookPeer, seen: dict[str, float]) -> None:
    """Note when each agent cell first shows an execution count in the peer's copy."""
    notebook = peer.notebook
    for index in range(notebook.cell_number):
        ycell = notebook.ycells[index]
        meta = agent_metadata(ycell)
        if meta and meta["tool_call_id"] not in seen and ycell.get("execution_count") is not None:
            seen[meta["tool_call_id"]] = time.perf_counter()


async def agent_cells(server: JupyterProcess, peer: NotebookPeer, cells: int, llm: FakeLLM) -> list[float]:
    """Runs of auto-approved cells (at most PER_RUN each: a run's model calls are capped); per cell,
    the time it finished in the peer's copy minus the arrival of its cell_finished on the stream."""
    seen: dict[str, float] = {}
    loop = asyncio.get_running_loop()
    # Read after the update's transaction, not inside its callback (the document is not readable there).
    peer.notebook.ydoc.observe(lambda _event: loop.call_soon(finished_at, peer, seen))
    arrived: dict[str, float] = {}
    async with httpx.AsyncClient(base_url=server.url, headers={"Authorization": f"token {TOKEN}"}, timeout=600) as api:
        changed = await api.put("cellwright/api/config", json={"auto_approve": ["run_cell"]})  # no approval round trips
        assert changed.status_code == 200, changed.text
        for first in range(0, cells, PER_RUN):
            batch = range(first, min(cells, first + PER_RUN))
            llm.script(*(tool_call("run_cell", {"code": f"x{n} = {n}"}, id=f"c{n}") for n in batch), text("done"))
            created = await api.post("cellwright/api/threads", json={"notebook_path": "bench.ipynb"})
            assert created.status_code == 201, (created.status_code, created.text)
            thread = created.json()["thread_id"]
            await api.post(f"cellwright/api/threads/{thread}/runs", json={"message": "go"})
            async with api.stream("GET", f"cellwright/api/threads/{thread}/events") as response:
                async for line in response.aiter_lines():
                    if line.startswith("data: ") and '"cell_finished"' in line:
                        arrived[json.loads(line[6:])["id"]] = time.perf_counter()
    assert len(arrived) == cells, f"{len(arrived)} of {cells} cells finished"
    await peer.wait_for(lambda _nb: arrived.keys() <= seen.keys(), "every cell finish")
    return [seen[call] - arrived[call] for call in arrived]


async def peer_edits(viewer: NotebookPeer, editor: NotebookPeer, rounds: int) -> list[float]:
    """An edit typed by one peer -> seen by the other, `rounds` times."""
    delays = []
    for n in range(rounds):
        mark = f"# edit {n}\n"
        source = editor.notebook.ycells[0]["source"]
        started = time.perf_counter()
        source.insert(len(str(source)), mark)
        await viewer.wait_for(lambda nb: str(nb.ycells[0]["source"]).endswith(mark), f"edit {n}")  # noqa: B023
        delays.append(time.perf_counter() - started)
    return delays


def summary(name: str, values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]
    return f"{name}: p50 {statistics.median(values) * 1000:7.1f} ms, p95 {p95 * 1000:7.1f} ms (n={len(values)})"


async def main(cells: int) -> None:
    with FakeLLM() as llm, tempfile.TemporaryDirectory() as tmp:
        env = {"OPENAI_BASE_URL": llm.base_url, "OPENAI_API_KEY": "k", "CELLWRIGHT_MODEL": "fake-model"}
        server = collaboration_server(Path(tmp), env).start()
        try:
            notebook = nbformat.v4.new_notebook()
            notebook.cells = [nbformat.v4.new_code_cell("user = 1", id="user-0")]
            nbformat.write(notebook, str(server.root / "bench.ipynb"))
            await asyncio.to_thread(server.open_notebook, "bench.ipynb")
            viewer = await NotebookPeer.join(server, "bench.ipynb")
            editor = await NotebookPeer.join(server, "bench.ipynb")
            await peer_edits(viewer, editor, 3)  # warm
            baseline = await peer_edits(viewer, editor, cells)
            agent = await agent_cells(server, viewer, cells, llm)
            await viewer.close()
            await editor.close()
        finally:
            server.stop()
    print(summary("peer edit -> other peer sees it (baseline)      ", baseline))
    print(summary("cell_finished on the stream -> peer sees the cell", agent))
    print(f"ratio of medians: {statistics.median(agent) / statistics.median(baseline):.1f}x")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 30))
