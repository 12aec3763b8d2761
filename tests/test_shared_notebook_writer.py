"""The shared-notebook writer on a real jupyter_ydoc YNotebook, without a server: what it does when an
event comes twice, when the user deleted the agent's cell, when two threads number their calls alike,
and what it never touches. (tests/test_shared_notebook_rtc.py runs it under a real collaboration
server.)"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("jupyter_ydoc")

from jupyter_ydoc import YNotebook  # noqa: E402

from jupyter_ext.shared_notebook import Memory, write_event  # noqa: E402


def notebook(*sources: str) -> YNotebook:
    doc = YNotebook()
    cells = [
        {"cell_type": "code", "source": s, "metadata": {}, "outputs": [], "id": f"u{i}"} for i, s in enumerate(sources)
    ]
    doc.set({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    return doc


def apply(doc: YNotebook, memory: Memory, *events: dict[str, Any]) -> None:
    for event in events:
        with doc.ydoc.transaction():
            write_event(doc, event, memory)


def started(call: str, thread: str = "t1", **extra: Any) -> dict[str, Any]:
    return {"type": "cell_started", "id": call, "code": f"# {call}", "thread_id": thread, "run_id": "r", **extra}


def output(call: str, text: str, thread: str = "t1") -> dict[str, Any]:
    return {
        "type": "cell_output",
        "id": call,
        "thread_id": thread,
        "output": {"output_type": "stream", "name": "stdout", "text": text},
    }


def test_an_event_seen_twice_changes_nothing_twice_and_a_deleted_cell_stays_deleted() -> None:
    doc, memory = notebook("user = 1"), Memory()
    first = started("call_0", cell_id="cw-1", waiting_for_kernel=True)
    apply(doc, memory, first, started("call_0", cell_id="cw-1"), first)
    assert [c["id"] for c in doc.get()["cells"]] == ["u0", "cw-1"]
    apply(doc, memory, {"type": "cell_finished", "id": "call_0", "thread_id": "t1", "execution_count": 3})
    assert doc.get()["cells"][1]["execution_count"] == 3

    with doc.ydoc.transaction():  # the user deletes the agent's cell
        del doc.ycells[1]
    apply(doc, memory, started("call_0", cell_id="cw-1"), output("call_0", "late\n"))
    assert [c["id"] for c in doc.get()["cells"]] == ["u0"]  # not brought back, its output dropped


def test_numbered_calls_of_two_threads_get_a_cell_each_and_user_cells_stay_first() -> None:
    doc, memory = notebook("a = 1", "b = 2"), Memory()
    apply(doc, memory, started("call_0", "t1"), output("call_0", "one\n", "t1"))
    apply(doc, memory, started("call_0", "t2"), output("call_0", "two\n", "t2"))
    cells = doc.get()["cells"]
    assert [c["source"] for c in cells] == ["a = 1", "b = 2", "# call_0", "# call_0"]
    assert [c["outputs"][0]["text"] for c in cells[2:]] == ["one\n", "two\n"]


def test_markdown_is_inert_and_undo_of_an_edit_restores_the_source() -> None:
    doc, memory = notebook("x = 1"), Memory()
    apply(
        doc,
        memory,
        {
            "type": "tool_call",
            "id": "md",
            "name": "add_markdown",
            "thread_id": "t1",
            "args": {"content": "![a](http://h/x.png)"},
        },
        {"type": "tool_call", "id": "other", "name": "read_file", "thread_id": "t1", "args": {"content": "not a cell"}},
        started("edit", cell_id="u0", edit=True, code="x = 2"),
    )
    cells = doc.get()["cells"]
    assert [c["source"] for c in cells] == ["x = 2", "[image: a](http://h/x.png) *(not loaded)*"]
    assert cells[0]["metadata"]["cellwright"]["previous_source"] == "x = 1"
    apply(doc, memory, {"type": "step_undone", "id": "edit", "thread_id": "t1"})
    apply(doc, memory, {"type": "step_undone", "id": "edit", "thread_id": "t1"})  # once only
    cells = doc.get()["cells"]
    assert cells[0]["source"] == "x = 1" and cells[0]["metadata"]["cellwright"]["undone"] is True
    assert len(cells) == 2


def test_a_blank_notebook_gives_way_but_a_typed_one_does_not() -> None:
    blank, typed, memory = notebook(""), notebook("# mine"), Memory()
    apply(blank, memory, started("c1", cell_id="cw-a"))
    apply(typed, memory, started("c2", cell_id="cw-b"))
    assert [c["id"] for c in blank.get()["cells"]] == ["cw-a"]
    assert [c["id"] for c in typed.get()["cells"]] == ["u0", "cw-b"]


def test_the_test_environment_itself_has_no_collaboration() -> None:
    """Installed where the suite runs, jupyter-collaboration would put every browser test on a shared
    document: it belongs in devtools/collaboration.py's venv only."""
    import importlib.util

    assert importlib.util.find_spec("jupyter_server_ydoc") is None, (
        "jupyter-collaboration is installed in the test environment (pip uninstall jupyter-collaboration "
        "jupyter-server-ydoc): the RTC tests install it into a venv of their own"
    )
