"""verify_notebook (issue 26): the saved notebook re-run top to bottom in a fresh shadow kernel,
through POST verify and through the agent's tool: hidden state and out-of-order runs flagged, a clean
notebook verified, the user's kernel untouched."""

from __future__ import annotations

from typing import Any

import nbformat
import pytest

from devtools.fake_llm import FakeLLM, text, tool_call
from tests.conftest import NOTEBOOK, Api, execute_reply, of_type


def agent_cell(source: str, call_id: str, count: int, outputs: list[dict[str, Any]] | None = None) -> Any:
    cell = nbformat.v4.new_code_cell(source, execution_count=count)
    cell.metadata["cellwright"] = {"thread_id": "t", "run_id": "r", "tool_call_id": call_id}
    cell.outputs = [nbformat.from_dict(o) for o in outputs or []]
    return cell


def stdout(text_: str) -> dict[str, Any]:
    return {"output_type": "stream", "name": "stdout", "text": text_}


def result(value: str, count: int) -> dict[str, Any]:
    return {"output_type": "execute_result", "data": {"text/plain": value}, "metadata": {}, "execution_count": count}


def save(root: Any, name: str, cells: list[Any]) -> str:
    notebook = nbformat.v4.new_notebook(cells=cells)
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, str(root / name))
    return name


CLEAN = [
    agent_cell("import math\nx = 2", "c1", 1),
    nbformat.v4.new_markdown_cell("# a note"),
    agent_cell("obj = object()\nprint(x * 3, obj)", "c2", 2, [stdout("6 <object object at 0x7f3a2b1c4d50>\n")]),
    nbformat.v4.new_code_cell("y = math.sqrt(x)", execution_count=3),  # the user's cell: run, not compared
    agent_cell("round(y, 3)", "c3", 4, [result("1.414", 4)]),
]


@pytest.mark.also_gateway
async def test_a_clean_notebook_verifies_and_the_users_kernel_is_untouched(
    api: Api, jp_serverapp: Any, jp_root_dir: Any, notebook_kernel: str
) -> None:
    before = await execute_reply(jp_serverapp, notebook_kernel, "x = 41")
    path = save(jp_root_dir, "clean.ipynb", CLEAN)
    kernels = set(jp_serverapp.kernel_manager.list_kernel_ids())
    code, found = await api.call("POST", "verify", {"path": path})
    assert code == 200, found
    assert found["status"] == "verified" and found["hidden_state"] == [] and found["out_of_order"] == []
    assert [(c["number"], c["status"]) for c in found["cells"]] == [(1, "same"), (2, "same"), (3, "ran"), (4, "same")]
    assert found["kernel_name"] == "python3" and found["at_cell"] is None
    # The shadow kernel is gone, and the user's kernel neither ran the notebook nor counted a cell.
    assert set(jp_serverapp.kernel_manager.list_kernel_ids()) == kernels
    after = await execute_reply(jp_serverapp, notebook_kernel, "assert x == 41 and 'obj' not in globals()")
    assert after["content"]["status"] == "ok", after["content"]
    assert after["content"]["execution_count"] == before["content"]["execution_count"] + 1


async def test_a_deleted_cell_is_hidden_state_and_the_rerun_fails_there(api: Api, jp_root_dir: Any) -> None:
    # `x = 1` ran as cell [1] and was deleted: the saved notebook still reads x.
    path = save(
        jp_root_dir,
        "deleted.ipynb",
        [agent_cell("import os", "c1", 2), agent_cell("print(x + 1)", "c2", 3, [stdout("2\n")])],
    )
    code, found = await api.call("POST", "verify", {"path": path})
    assert code == 200, found
    assert found["status"] == "fails" and found["hidden_state"] == ["x"] and found["at_cell"] == 2
    failed = found["cells"][1]
    assert failed["status"] == "fails" and "NameError" in failed["detail"]


async def test_cells_run_out_of_order_are_flagged_and_their_outputs_differ(api: Api, jp_root_dir: Any) -> None:
    # Run as 2, 1, 3: the saved output of the last cell says 1, a run from the top gives 2.
    cells = [
        agent_cell("v = 1", "c1", 2),
        agent_cell("v = 2", "c2", 1),
        agent_cell("print(v)", "c3", 3, [stdout("1\n")]),
    ]
    path = save(jp_root_dir, "order.ipynb", cells)
    code, found = await api.call("POST", "verify", {"path": path})
    assert code == 200, found
    assert found["status"] == "differs" and found["out_of_order"] == [2] and found["hidden_state"] == []
    assert [c["status"] for c in found["cells"]] == ["same", "same", "differs"] and found["at_cell"] == 3
    assert "'stream:stdout: 1'" in found["cells"][2]["detail"] and "'stream:stdout: 2'" in found["cells"][2]["detail"]


async def test_verify_refuses_what_is_not_a_notebook_in_the_root(api: Api, jp_root_dir: Any) -> None:
    (jp_root_dir / "notes.txt").write_text("hi")
    for body, kind in [
        ({"path": "../outside.ipynb"}, "path_outside_root"),
        ({"path": ".hidden/secret.ipynb"}, "hidden_path"),
        ({"path": "notes.txt"}, "bad_request"),
        ({"path": "missing.ipynb"}, "bad_request"),
        ({}, "bad_request"),
    ]:
        code, answer = await api.call("POST", "verify", body)
        assert code == 400 and answer["error"] in (kind, "missing_fields", "invalid_body"), (body, answer)


async def test_the_agent_verifies_its_notebook_after_approval(
    api: Api, fake_llm: FakeLLM, jp_root_dir: Any, notebook_kernel: str
) -> None:
    save(jp_root_dir, NOTEBOOK, [agent_cell("print(undefined_name)", "c1", 1, [stdout("?\n")])])
    fake_llm.script(tool_call("verify_notebook", {}, id="v1"), text("checked"))
    thread = await api.new_thread()
    await api.run(thread, "does it re-run?")
    events = await api.until_finished(thread)
    card = of_type(events, "approval_required")[0]
    assert card["name"] == "verify_notebook" and "fresh kernel" in card["description"]
    await api.approve(thread, "v1")
    events = await api.until_finished(thread, events[-1]["seq"])
    told = [m["content"] for m in fake_llm.requests[-1]["messages"] if m["role"] == "tool"][0]
    assert "analysis.ipynb fails at cell 1" in told and "NameError" in told and "undefined_name" in told
    assert of_type(events, "tool_result")[0]["status"] == "error" and events[-1]["status"] == "completed"


async def test_agent_cells_are_compared_with_what_their_thread_recorded(
    api: Api, fake_llm: FakeLLM, jp_root_dir: Any, notebook_kernel: str
) -> None:
    fake_llm.script(tool_call("run_cell", {"code": "print(6 * 7)"}, id="r1"), text("done"))
    thread = await api.new_thread()
    await api.run(thread, "compute")
    events = await api.until_finished(thread)
    await api.approve(thread, "r1")
    await api.until_finished(thread, events[-1]["seq"])
    _, listed = await api.call("POST", "agent_cells", {"notebook_path": NOTEBOOK}, expect=200)
    stored = listed["cells"][0]
    assert stored["outputs"][0]["text"] == "42\n"
    # The saved notebook's copy of the outputs was changed by hand: the thread's record is what counts.
    cell = agent_cell(stored["source"], stored["tool_call_id"], 1, [stdout("41\n")])
    cell.metadata["cellwright"]["thread_id"] = thread
    save(jp_root_dir, NOTEBOOK, [cell])
    code, found = await api.call("POST", "verify", {"path": NOTEBOOK})
    assert code == 200 and found["status"] == "verified" and found["cells"][0]["status"] == "same", found
    # Another thread's call of the same id is not this cell's record.
    cell.metadata["cellwright"]["thread_id"] = "another-thread"
    save(jp_root_dir, NOTEBOOK, [cell])
    code, found = await api.call("POST", "verify", {"path": NOTEBOOK})
    assert found["status"] == "differs" and "'stream:stdout: 41'" in found["cells"][0]["detail"], found


def test_outputs_compare_as_the_user_reads_them() -> None:
    from agent_core.verify.outputs import difference

    def lines(numbers: range) -> dict[str, Any]:
        return stdout("".join(f"{i}\n" for i in numbers))

    assert difference([stdout("a "), stdout("b\n")], [stdout("a b")]) == ""  # streams merged, trailing space
    assert difference([result("<A at 0x7f00aa11bb22>", 1)], [result("<A at 0x55d0cc33dd44>", 2)]) == ""
    assert difference([stdout("took 1.52 s\n")], [stdout("took 0.98 s\n")]) == ""
    assert "re-run gave" in difference([stdout("1\n")], [stdout("2\n")])
    assert "(nothing)" in difference([stdout("1\n")], [])
    # A long output the server kept as head, omitted-lines note and tail matches the whole re-run output.
    kept = [lines(range(100)), stdout("[... 880 lines omitted ...]\n"), lines(range(980, 1000))]
    assert difference(kept, [lines(range(1000))]) == ""
    assert difference(kept, [lines(range(999))]) != ""


async def test_shadow_kernels_beyond_the_servers_bound_wait_for_a_slot(jp_serverapp: Any) -> None:
    """Checks asked at once never start more shadow kernels than the server allows: the next waits."""
    import asyncio

    app = jp_serverapp.web_app.settings["cellwright"]
    app.shadow_slots = asyncio.Semaphore(1)
    kernels = jp_serverapp.kernel_manager
    entered = asyncio.Event()

    async def second_check() -> int:
        async with app.kernel_environment("", None).shadow_kernel(NOTEBOOK, None):
            entered.set()
            return len(kernels.list_kernel_ids())

    async with app.kernel_environment("", None).shadow_kernel(NOTEBOOK, None):
        waiting = asyncio.ensure_future(second_check())
        # Unbounded, the second kernel would be up within a kernel's start-up (about a second here).
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(entered.wait()), 5)
        assert len(kernels.list_kernel_ids()) == 1
    assert await asyncio.wait_for(waiting, 60) == 1  # the first kernel was shut down before the second started
    assert kernels.list_kernel_ids() == []
