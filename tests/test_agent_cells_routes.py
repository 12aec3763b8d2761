"""POST agent_cells (issue 23) through the real server, a real kernel and the scripted model: the agent
cells of a notebook in the order they ran, with stored outputs, execution counts and provenance; an
undone step marked; pages that add up; another owner's threads never read; bad paths refused."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from devtools.fake_llm import FakeLLM, text, tool_call
from tests.conftest import NOTEBOOK, Api, of_type


async def _cells(api: Api, path: str = NOTEBOOK, **fields: Any) -> list[dict[str, Any]]:
    """Every page of the notebook's agent cells."""
    cells: list[dict[str, Any]] = []
    offset: int | None = 0
    while offset is not None:
        _, page = await api.call("POST", "agent_cells", {"notebook_path": path, "offset": offset, **fields}, expect=200)
        cells += page["cells"]
        offset = page["next_offset"]
    return cells


async def test_a_notebooks_agent_cells_in_order_with_outputs_and_provenance(
    api: Api, fake_llm: FakeLLM, notebook_kernel: str
) -> None:
    thread = await api.new_thread()
    fake_llm.script(
        tool_call("run_cell", {"code": "a = 6 * 7\nprint('a is', a)"}, id="first"),
        tool_call("add_markdown", {"content": "## Findings\n`a` is *42*."}, id="note"),
        tool_call("run_cell", {"code": "a + 1"}, id="second"),
        text("Done."),
    )
    await api.run(thread, "compute")
    events = await api.until_finished(thread)
    for call_id in ("first", "second"):
        assert of_type(events, "approval_required")[-1]["id"] == call_id
        await api.approve(thread, call_id)
        events += await api.until_finished(thread, events[-1]["seq"])
        if call_id == "first":  # read half way, twice at once: later reads fold only the events since
            early = await asyncio.gather(_cells(api), _cells(api))
            assert early[0] == early[1] and [c["tool_call_id"] for c in early[0]] == ["first", "note"]
            assert early[0][0]["outputs"] == [{"output_type": "stream", "name": "stdout", "text": "a is 42\n"}]
    started = {e["id"]: e for e in of_type(events, "cell_started")}

    cells = await _cells(api)
    assert [c["tool_call_id"] for c in cells] == ["first", "note", "second"]
    first, note, second = cells
    assert first["cell_type"] == "code" and first["cell_id"] == started["first"]["cell_id"]
    assert first["source"] == "a = 6 * 7\nprint('a is', a)" and first["finished"] is True
    assert first["outputs"] == [{"output_type": "stream", "name": "stdout", "text": "a is 42\n"}]
    assert second["outputs"][0]["data"]["text/plain"] == "43"
    assert first["execution_count"] >= 1 and second["execution_count"] == first["execution_count"] + 1
    assert first["provenance"] == started["first"]["provenance"] and first["thread_id"] == thread
    assert first["run_id"] == started["first"]["run_id"] and first["seq"] >= started["first"]["seq"]
    assert note["cell_type"] == "markdown" and note["source"] == "## Findings\n`a` is *42*."
    assert not any(c.get("undone") for c in cells)

    # Pages of one add up to the same list; another notebook has none.
    assert await _cells(api, limit=1) == cells
    assert await _cells(api, "other.ipynb") == []

    # An undone step stays in the list, marked: the panel does not insert it.
    await api.call("POST", f"threads/{thread}/undo/second", {}, expect=200)
    assert [c["tool_call_id"] for c in await _cells(api) if c.get("undone")] == ["second"]


async def test_another_owners_cells_are_never_answered(api: Api, jp_serverapp: Any) -> None:
    from agent_core.contract import make_event
    from agent_core.storage.thread_store import ThreadStore

    mine = jp_serverapp.web_app.settings["cellwright"].run_manager.threads
    bob = ThreadStore(Path(mine._path), owner="bob")
    await bob.open()
    try:
        record = await bob.create(NOTEBOOK, "bob's")
        stamps = {"thread_id": record.thread_id, "run_id": "r", "agent": "main"}
        started = make_event(
            "cell_started", id="bobs", code="secret = 1", notebook_path=NOTEBOOK, kernel_id=None, cell_id="cw-bob"
        )
        await bob.events.append(record.thread_id, {**started, **stamps})
        assert [c["tool_call_id"] for c in await _cells_of(bob)] == ["bobs"]  # the store itself sees bob's
    finally:
        await bob.close()
    assert await _cells(api) == []


async def _cells_of(store: Any) -> list[dict[str, Any]]:
    from agent_core.contract.notebook_cells import AgentCellsRequest
    from agent_core.loop.agent_cells import agent_cells

    answer = await agent_cells(store, AgentCellsRequest(notebook_path=NOTEBOOK))
    return [cell.model_dump() for cell in answer.cells]


async def test_bad_paths_and_bodies_are_refused(api: Api) -> None:
    for path in ("../outside.ipynb", "/etc/passwd", "a/../../b.ipynb"):
        code, body = await api.call("POST", "agent_cells", {"notebook_path": path})
        assert code == 400 and body["error"] == "path_outside_root", (path, body)
    for body_ in ({}, {"notebook_path": ""}, {"notebook_path": "."}, {"notebook_path": NOTEBOOK, "limit": 0}):
        code, body = await api.call("POST", "agent_cells", body_)
        assert code == 400 and body["message"], (body_, body)


async def test_a_stored_cell_that_no_longer_fits_the_contract_is_left_out_not_a_500(
    api: Api, jp_serverapp: Any
) -> None:
    """Events an older release stored: a provenance without today's fields, an output of no known type."""
    assert await _cells(api) == []  # the server's first request opens its store
    store = jp_serverapp.web_app.settings["cellwright"].run_manager.threads
    record = await store.create(NOTEBOOK, "old")
    stamps = {"thread_id": record.thread_id, "run_id": "r", "agent": "main"}
    base = {"type": "cell_started", "code": "x = 1", "notebook_path": NOTEBOOK, "kernel_id": None, **stamps}
    await store.events.append(
        record.thread_id, {**base, "id": "old", "cell_id": "cw-old", "provenance": {"model": "m"}}
    )
    await store.events.append(record.thread_id, {**base, "id": "odd", "cell_id": "cw-odd"})
    odd_output = {"type": "cell_output", "id": "odd", "output": {"output_type": "hologram"}, **stamps}
    await store.events.append(record.thread_id, odd_output)
    cells = await _cells(api)
    assert [c["tool_call_id"] for c in cells] == ["old"] and "provenance" not in cells[0]
