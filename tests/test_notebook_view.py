"""Issue 44 through the real routes, a real kernel and scripted models that know only what the tools
showed them (devtools.fake_llm_script.reading): read_notebook gives each cell's id, edit_cell acts on
it (or on the index, checked), and with no browser open the agent's own cells are part of the
notebook every tool reads, so the agent can fix its failed cell and verify_notebook never answers
over a file that lacks the work."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat

from agent_core.contract.notebook_cells import AgentCell
from agent_core.tools.notebook_view import overlay
from devtools.fake_llm import FakeLLM, Shown, reading, text, tool_call
from tests.conftest import NOTEBOOK, Api, of_type

USER_CELLS = [
    ("cell-aa", "alpha = 1"),
    ("cell-bb", "beta = alpha + 1"),
    ("cell-cc", "gamma = 3"),
    ("cell-dd", "print(beta)"),
]


def write_cells(root: Path, cells: list[tuple[str, str]]) -> None:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source, id=cell_id) for cell_id, source in cells]
    nbformat.write(notebook, str(root / NOTEBOOK))


def told(fake_llm: FakeLLM, tool: str) -> list[str]:
    """What the model was told by every `tool` call, as the last request holds it."""
    return Shown(fake_llm.requests[-1]).results(tool)


async def approve_pending(api: Api, thread: str, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Approve the card the run stopped at (its id as the event gave it) and read the next segment."""
    card = of_type(events, "approval_required")[-1]
    code, _ = await api.approve(thread, card["id"])
    assert code == 202
    return await api.until_finished(thread, events[-1]["seq"])


async def kernel_value(jp_serverapp: Any, kernel_id: str, expression: str) -> str:
    """`expression`'s repr in the kernel, asked on a client of the test's own (no cell, no history)."""
    from jupyter_ext.kernel_clients import connected_client

    client = await connected_client(jp_serverapp.kernel_manager.get_kernel(kernel_id), outputs=False)
    try:
        msg_id = client.execute("", silent=True, user_expressions={"v": expression})
        while (answer := await client.get_shell_msg(timeout=10))["parent_header"].get("msg_id") != msg_id:
            pass
    finally:
        client.stop_channels()
    return str(answer["content"]["user_expressions"]["v"]["data"]["text/plain"])


async def test_the_model_reads_the_id_and_edits_the_users_first_cell_in_place(
    api: Api, fake_llm: FakeLLM, notebook_kernel: str, jp_root_dir: Path
) -> None:
    write_cells(jp_root_dir, USER_CELLS)
    fake_llm.script(
        tool_call("read_notebook", {}),
        reading(lambda seen: tool_call("edit_cell", {"cell_id": seen.cell("alpha")["id"], "source": "alpha = 10"})),
        tool_call("read_notebook", {}),
        text("alpha is 10 now."),
    )
    thread = await api.new_thread()
    await api.run(thread, "change alpha in my first cell to 10")
    events = await api.until_finished(thread)
    card = of_type(events, "approval_required")[0]
    assert card["name"] == "edit_cell" and card["args"]["cell_id"] == "cell-aa", card
    assert "-alpha = 1" in card["diff"] and "+alpha = 10" in card["diff"] and "cell 0 (cell-aa)" in card["diff"]

    events = await approve_pending(api, thread, events)
    started = of_type(events, "cell_started")[0]
    assert started["cell_id"] == "cell-aa" and started["edit"] is True and events[-1]["status"] == "completed"
    first, second = told(fake_llm, "read_notebook")
    assert "--- cell 0, id cell-aa (code)\nalpha = 1" in first
    # Edited in place: still four cells, the first with the new source (no browser has saved it yet).
    assert second.startswith(f"{NOTEBOOK}: 4 cells (1 of them not yet in the saved file)")
    assert "--- cell 0, id cell-aa (code, execution_count 1, edited by the agent" in second and "alpha = 10" in second
    assert "--- cell 3, id cell-dd (code)\nprint(beta)" in second
    assert [c.id for c in nbformat.read(str(jp_root_dir / NOTEBOOK), as_version=4).cells] == [c for c, _ in USER_CELLS]


async def test_a_cell_moved_between_the_read_and_the_edit_is_refused_with_the_layout(
    api: Api, fake_llm: FakeLLM, notebook_kernel: str, jp_root_dir: Path
) -> None:
    write_cells(jp_root_dir, USER_CELLS)
    saved_after_move: list[str] = []

    def edit_what_was_read(seen: Shown) -> Any:
        cell = seen.cell("alpha")
        # Meanwhile the user drags the first cell below the second and saves.
        moved = [USER_CELLS[1], USER_CELLS[0], *USER_CELLS[2:]]
        write_cells(jp_root_dir, moved)
        saved_after_move.append((jp_root_dir / NOTEBOOK).read_text())
        return tool_call("edit_cell", {"cell_id": cell["id"], "index": cell["index"], "source": "alpha = 10"})

    fake_llm.script(
        tool_call("read_notebook", {}),
        reading(edit_what_was_read),
        # The refusal shows the cells as they are now: the model takes the index from there.
        reading(
            lambda seen: tool_call(
                "edit_cell",
                {
                    "cell_id": "cell-aa",
                    "index": int(seen.find(r"cell (\d+), id cell-aa \(code\)", tool="edit_cell")),
                    "source": "alpha = 10",
                },
            )
        ),
        text("Done."),
    )
    thread = await api.new_thread()
    await api.run(thread, "change alpha in my first cell to 10")
    events = await api.until_finished(thread)
    refused = of_type(events, "tool_result")[1]
    assert refused["name"] == "edit_cell" and refused["status"] == "error"
    message = told(fake_llm, "edit_cell")[0]
    assert "cell 'cell-aa' is at index 1 now, not 0" in message and "nothing was edited" in message
    assert "cell 0, id cell-bb (code): beta = alpha + 1" in message
    assert (jp_root_dir / NOTEBOOK).read_text() == saved_after_move[0]  # no cell was touched
    assert not [e for e in events if e["type"] == "cell_started"]
    card = of_type(events, "approval_required")[0]
    assert card["args"] == {"cell_id": "cell-aa", "index": 1, "source": "alpha = 10"}
    assert "cell 1 (cell-aa)" in card["diff"] and "-alpha = 1" in card["diff"]


async def test_with_no_browser_the_agent_fixes_its_own_failed_cell(
    api: Api, fake_llm: FakeLLM, notebook_kernel: str, jp_root_dir: Path, jp_serverapp: Any
) -> None:
    fake_llm.script(
        tool_call("run_cell", {"code": "ratio = 1 / 0"}),
        reading(
            lambda seen: tool_call(
                "edit_cell",
                {"cell_id": seen.find(r"\[cell_id (cw-[0-9a-f]+)", tool="run_cell"), "source": "ratio = 1 / 4"},
            )
        ),
        tool_call("read_notebook", {}),
        text("Fixed."),
    )
    thread = await api.new_thread()
    await api.run(thread, "compute the ratio", kernel_id=notebook_kernel)  # over the API: no browser holds it
    events = await api.until_finished(thread)
    events = await approve_pending(api, thread, events)
    assert "ZeroDivisionError" in told(fake_llm, "run_cell")[0]
    card = of_type(events, "approval_required")[0]
    assert card["name"] == "edit_cell" and not card.get("will_fail"), card
    assert "not yet in the saved file" in card["diff"] and "+ratio = 1 / 4" in card["diff"]

    events = await approve_pending(api, thread, events)
    assert of_type(events, "tool_result")[0]["status"] == "ok" and events[-1]["status"] == "completed"
    assert await kernel_value(jp_serverapp, notebook_kernel, "ratio") == "0.25"
    read = told(fake_llm, "read_notebook")[0]
    cells = read[: read.index("Run order")]  # the kernel's input history follows, with both inputs
    assert cells.startswith(f"{NOTEBOOK}: 1 cells (1 of them not yet in the saved file)")
    assert cells.count("ratio = ") == 1 and "ratio = 1 / 4" in cells and "ZeroDivisionError" not in cells
    # What a browser that opens the notebook will place: the cell, then the edit of it.
    _, listed = await api.call("POST", "agent_cells", {"notebook_path": NOTEBOOK}, expect=200)
    ran, fixed = listed["cells"]
    assert fixed["edit"] is True and fixed["cell_id"] == ran["cell_id"] and fixed["source"] == "ratio = 1 / 4"


async def test_with_no_browser_verify_names_the_agents_cell_the_file_lacks(
    api: Api, fake_llm: FakeLLM, notebook_kernel: str, jp_root_dir: Path
) -> None:
    fake_llm.script(tool_call("run_cell", {"code": "x = 5"}), tool_call("verify_notebook", {}), text("Checked."))
    thread = await api.new_thread()
    await api.run(thread, "set x and check the notebook", kernel_id=notebook_kernel)
    events = await api.until_finished(thread)
    events = await approve_pending(api, thread, events)
    events = await approve_pending(api, thread, events)
    assert nbformat.read(str(jp_root_dir / NOTEBOOK), as_version=4).cells == []  # nobody placed the cell
    cell_id = Shown(fake_llm.requests[-1]).find(r"\[cell_id (cw-[0-9a-f]+)", tool="run_cell")
    answer = told(fake_llm, "verify_notebook")[0]
    assert answer.startswith(f"{NOTEBOOK} on disk lacks 1 of your cells or edits"), answer
    assert f"cell 0, id {cell_id} (new, re-runs and gives what it gave): x = 5" in answer
    result = json.loads(answer.splitlines()[-1])
    assert result["not_in_saved_file"] == [{"cell_id": cell_id, "index": 0, "status": "same"}]


async def test_a_cell_the_user_deleted_or_an_undone_step_is_named_as_such(
    api: Api, fake_llm: FakeLLM, notebook_kernel: str, jp_root_dir: Path
) -> None:
    write_cells(jp_root_dir, [("cell-aa", "alpha = 1")])
    fake_llm.script(tool_call("run_cell", {"code": "y = 2"}), text("ran"))
    thread = await api.new_thread()
    await api.run(thread, "set y", kernel_id=notebook_kernel)
    events = await approve_pending(api, thread, await api.until_finished(thread))
    run_cell_id = of_type(events, "cell_started")[0]["cell_id"]
    call_id = of_type(events, "cell_started")[0]["id"]
    # A browser placed it and saved, then the user deleted it and saved again.
    notebook = nbformat.read(str(jp_root_dir / NOTEBOOK), as_version=4)
    notebook.metadata["cellwright"] = {"placed": [call_id]}
    nbformat.write(notebook, str(jp_root_dir / NOTEBOOK))
    fake_llm.script(
        # The id as the earlier run_cell result gave it (the thread's history holds it).
        reading(
            lambda seen: tool_call(
                "edit_cell", {"cell_id": seen.find(r"\[cell_id (cw-[0-9a-f]+)", tool="run_cell"), "source": "y = 3"}
            )
        ),
        tool_call("edit_cell", {"cell_id": "cell-zz", "source": "z = 1"}),
        text("Both are gone."),
    )
    await api.run(thread, "change y", kernel_id=notebook_kernel)
    events = await api.until_finished(thread, events[-1]["seq"])
    assert not of_type(events, "approval_required")
    deleted, unknown = told(fake_llm, "edit_cell")
    assert (
        f"cell {run_cell_id!r} is no longer in {NOTEBOOK}: it was placed in the notebook, and the user deleted it"
        in (deleted)
    )
    assert "there is no cell with id 'cell-zz'" in unknown and "cell 0, id cell-aa (code): alpha = 1" in unknown


def _agent(call: str, cell_id: str, source: str, **extra: Any) -> AgentCell:
    return AgentCell(
        tool_call_id=call,
        thread_id="t",
        run_id="r",
        cell_type="code",
        cell_id=cell_id,
        source=source,
        finished=True,
        seq=1,
        **extra,
    )


def test_the_view_places_the_records_cells_as_a_reconcile_would() -> None:
    saved = [
        {"id": "mine", "cell_type": "code", "source": "a = 1", "metadata": {}},
        {"id": "cw-1", "cell_type": "code", "source": "b = 1", "metadata": {"cellwright": {"tool_call_id": "c1"}}},
    ]
    record = [
        _agent("c1", "cw-1", "b = 1"),  # placed and saved: once
        _agent("c2", "cw-2", "c = 1 / 0"),  # never placed: added at the end
        _agent("e1", "cw-2", "c = 1", edit=True),  # its fix: applied to it, still new
        _agent("c3", "cw-3", "d = 1"),  # placed, then deleted by the user
        _agent("c4", "cw-4", "e = 1", undone=True),  # undone: never shown
        _agent("e2", "mine", "a = 2", edit=True),  # an edit of the user's cell the file lacks
        AgentCell(
            tool_call_id="m1",
            thread_id="t",
            run_id="r",
            cell_type="markdown",
            cell_id="cw-m",
            source="# Notes",
            finished=True,
            seq=1,
        ),
    ]
    view = overlay("n.ipynb", saved, {"cellwright": {"placed": ["c1", "c3"]}}, record)
    assert [(c["id"], c["source"], c.get("pending")) for c in view.cells] == [
        ("mine", "a = 2", "edit"),
        ("cw-1", "b = 1", None),
        ("cw-2", "c = 1", "new"),
        (None, "# Notes", "new"),
    ]
    assert view.gone == {
        "cw-3": "it was placed in the notebook, and the user deleted it",
        "cw-4": ("the user undid the step that made it"),
    }
    assert "no longer in n.ipynb: it was placed in the notebook, and the user deleted it" in view.missing("cw-3")
    # The browser sends cells without metadata: an agent's Markdown cell there cannot be told apart.
    browser = overlay("n.ipynb", [{"id": "mine", "cell_type": "code", "source": "a = 2"}], {}, record, markdown=False)
    assert [c.get("pending") for c in browser.cells] == [None, "new", "new", "new"]
    assert [c["id"] for c in browser.cells] == ["mine", "cw-1", "cw-2", "cw-3"]
