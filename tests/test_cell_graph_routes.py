"""Issue 42 through the real server, a real kernel and a scripted model that knows only what the
tools showed it: the agent edits the cell that defines `df`; the approval card says which cells that
leaves stale; read_notebook then marks them with the reason; an answer that does not say so goes
back to the model once; GET notebook/graph gives the panel the same facts. And the route's bounds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat

from devtools.fake_llm import FakeLLM, reading, text, tool_call
from tests.conftest import NOTEBOOK, Api, execute_reply, of_type

USER_CELLS = [
    ("cell-aa", "df = 1"),
    ("cell-bb", "total = df + 1"),
    ("cell-cc", "other = 3"),
    ("cell-dd", "print(total)"),
]


async def ran_and_saved(jp_serverapp: Any, kernel_id: str, root: Path) -> None:
    """The user's cells run in the kernel in order (execution counts 1-4) and saved with those counts."""
    notebook = nbformat.v4.new_notebook()
    for cell_id, source in USER_CELLS:
        reply = await execute_reply(jp_serverapp, kernel_id, source)
        cell = nbformat.v4.new_code_cell(source, id=cell_id)
        cell.execution_count = reply["content"]["execution_count"]
        notebook.cells.append(cell)
    nbformat.write(notebook, str(root / NOTEBOOK))


async def test_an_edit_that_leaves_cells_stale_is_shown_and_said(
    api: Api, fake_llm: FakeLLM, notebook_kernel: str, jp_serverapp: Any, jp_root_dir: Path
) -> None:
    await ran_and_saved(jp_serverapp, notebook_kernel, jp_root_dir)
    fake_llm.script(
        tool_call("read_notebook", {}),
        reading(lambda seen: tool_call("edit_cell", {"cell_id": seen.cell("df = 1")["id"], "source": "df = 10"})),
        tool_call("read_notebook", {}),
        text("df is 10 now."),  # says nothing of the cells that read df: sent back
        reading(
            lambda seen: text(
                f"df is 10 now. Cells {seen.find_in_prompt(r'left cells ([0-9, ]+) stale')} are stale: "
                "they still show results of df = 1."
            )
        ),
        # the second request: bring the last stale cell up to date (the cell it reads from comes along)
        reading(lambda seen: tool_call("rerun_stale", {"cell_ids": [seen.find(r"cell 3, id (\S+) \(stale\)")]})),
        tool_call("read_notebook", {}),
        text("Cells 1 and 3 are up to date."),
    )
    thread = await api.new_thread()
    await api.run(thread, "set df to 10 in my first cell")
    events = await api.until_finished(thread)
    card = of_type(events, "approval_required")[0]
    assert card["name"] == "edit_cell"
    assert card["makes_stale"]["text"] == "redefines df, read by cell 1; cells that depend on those: 3", card
    assert [c["cell_id"] for c in card["makes_stale"]["cells"]] == ["cell-bb", "cell-dd"]

    code, _ = await api.approve(thread, card["id"])
    assert code == 202
    events = await api.until_finished(thread, events[-1]["seq"])
    assert events[-1]["status"] == "completed", events[-1]

    reads = [m for m in fake_llm.requests[-1]["messages"] if m.get("role") == "tool"]
    after_edit = str(reads[-1]["content"])
    assert "--- cell 1, id cell-bb (code, execution_count 2, stale)" in after_edit
    assert "cell 1, id cell-bb (stale): reads df, redefined by cell 0 at [5]" in after_edit
    assert "cell 3, id cell-dd (stale): reads total from cell 1, which is stale" in after_edit
    assert "cell-cc (stale)" not in after_edit
    # the first answer went back with the note, once; the answer the user reads names the cells
    notes = [m for m in fake_llm.requests[-1]["messages"] if str(m.get("content", "")).startswith("[Stale cells]")]
    assert len(notes) == 1 and "left cells 1, 3 stale" in notes[0]["content"]
    finals = of_type(events, "final")
    assert len(finals) == 1 and "Cells 1, 3 are stale" in finals[0]["answer"]

    code, graph = await api.call("GET", "notebook/graph", params={"path": NOTEBOOK})
    assert code == 200 and graph["kernel"] is True, graph
    stale = {c["cell_id"]: c["reasons"][0]["text"] for c in graph["cells"] if c["stale"]}
    assert stale == {
        "cell-bb": "reads df, redefined by cell 0 at [5]",
        "cell-dd": "reads total from cell 1, which is stale",
    }
    assert graph["rerun_order"] == ["cell-bb", "cell-dd"]

    # rerun_stale: one approval for the chain, the cells re-run in place in order, nothing stale after
    await api.run(thread, "re-run the stale cells")
    events = await api.until_finished(thread, events[-1]["seq"])
    card = of_type(events, "approval_required")[-1]
    assert card["name"] == "rerun_stale" and card["description"].startswith("Re-run stale cells 1, 3 in this order")
    code, _ = await api.approve(thread, card["id"])
    events = await api.until_finished(thread, events[-1]["seq"])
    started = of_type(events, "cell_started")
    assert [(e["cell_id"], e["edit"], e["code"]) for e in started] == [
        ("cell-bb", True, "total = df + 1"),
        ("cell-dd", True, "print(total)"),
    ]
    assert [o["output"].get("text") for o in of_type(events, "cell_output")] == ["11\n"]
    last_read = str([m for m in fake_llm.requests[-1]["messages"] if m.get("role") == "tool"][-1]["content"])
    assert "Stale cells" not in last_read and "(stale" not in last_read
    code, graph = await api.call("GET", "notebook/graph", params={"path": NOTEBOOK})
    assert not [c for c in graph["cells"] if c["stale"]] and graph["rerun_order"] == []


async def test_approve_and_rerun_dependents_reruns_the_stale_chain_under_one_approval(
    api: Api, fake_llm: FakeLLM, notebook_kernel: str, jp_serverapp: Any, jp_root_dir: Path
) -> None:
    await ran_and_saved(jp_serverapp, notebook_kernel, jp_root_dir)
    fake_llm.script(
        tool_call("read_notebook", {}),
        reading(lambda seen: tool_call("edit_cell", {"cell_id": seen.cell("df = 1")["id"], "source": "df = 10"})),
        reading(
            lambda seen: text(
                f"df is 10; re-ran cells {seen.find(r're-ran the cells it made stale .cells ([0-9, ]+)')}."
            )
        ),
    )
    thread = await api.new_thread()
    await api.run(thread, "set df to 10 in my first cell")
    events = await api.until_finished(thread)
    card = of_type(events, "approval_required")[0]
    assert [c["cell_id"] for c in card["makes_stale"]["cells"]] == ["cell-bb", "cell-dd"]

    code, body = await api.approve(thread, card["id"], rerun_dependents="yes please")
    assert code == 400, body  # a wrong type is refused, and the call stays pending
    code, _ = await api.approve(thread, card["id"], rerun_dependents=True)
    assert code == 202
    events = await api.until_finished(thread, events[-1]["seq"])
    assert events[-1]["status"] == "completed", events[-1]
    assert not of_type(events, "approval_required")  # one approval for the edit and its chain
    started = of_type(events, "cell_started")
    assert [(e["cell_id"], e["code"]) for e in started] == [
        ("cell-aa", "df = 10"),
        ("cell-bb", "total = df + 1"),
        ("cell-dd", "print(total)"),
    ]
    assert [o["output"].get("text") for o in of_type(events, "cell_output")] == ["11\n"]
    result = str([m for m in fake_llm.requests[-1]["messages"] if m.get("role") == "tool"][-1]["content"])
    assert "cell 3, id cell-dd" in result and "11" in result, result  # the re-run's output reached the model
    assert of_type(events, "final")[-1]["answer"] == "df is 10; re-ran cells 1, 3."
    code, graph = await api.call("GET", "notebook/graph", params={"path": NOTEBOOK})
    assert not [c for c in graph["cells"] if c["stale"]] and graph["rerun_order"] == []


async def test_graph_route_refuses_paths_outside_the_root_and_non_notebooks(api: Api, jp_root_dir: Path) -> None:
    (jp_root_dir / "data.txt").write_text("x")
    for path, code_wanted in (
        ("../../etc/passwd.ipynb", 400),
        ("/etc/x.ipynb", 400),
        ("data.txt", 400),
        ("missing.ipynb", 400),
        ("a" * 5000 + ".ipynb", 400),
        ("", 400),
    ):
        code, body = await api.call("GET", "notebook/graph", params={"path": path})
        assert code == code_wanted, (path, code, body)
        assert "error" in body or "message" in body, body
