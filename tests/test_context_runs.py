"""Context in runs through the real server and kernel: @mentions resolved into a context message,
the namespace snapshot, POST variables, and read_notebook."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
import pytest

from devtools.fake_llm import FakeLLM, text, tool_call
from tests.conftest import NOTEBOOK, Api, execute_reply, of_type
from tests.test_kernel_introspection import EVERYTHING, SETUP
from tests.test_tools_routes import COUNT, kernel_env, run_in_kernel


def context_of(request: dict[str, Any]) -> str:
    contexts = [
        m["content"] for m in request["messages"] if m["role"] == "user" and m["content"].startswith("[Context")
    ]
    assert len(contexts) == 1, request["messages"]
    return contexts[0]


@pytest.mark.also_gateway
async def test_mentions_reach_the_model_as_data(
    api: Api, fake_llm: FakeLLM, jp_serverapp: Any, jp_root_dir: Path, notebook_kernel: str
) -> None:
    await run_in_kernel(jp_serverapp, SETUP)
    (jp_root_dir / "notes.txt").write_text("revenue is in euros\n")
    (jp_root_dir / ".env").write_text("SECRET=hunter2\n")
    env = kernel_env(jp_serverapp)
    names_before, count_before = await env.evaluate_json(EVERYTHING), await env.evaluate_json(COUNT)
    fake_llm.script(text("ok"))
    thread = await api.new_thread()
    message = "plot @sales_df by month, see @notes.txt and @trap; also @../../etc/passwd @.env @__import__('os')"
    await api.run(thread, message, kernel_id=notebook_kernel)
    events = await api.until_finished(thread)
    assert events[-1]["status"] == "completed"
    mentions = {m["name"]: m for m in of_type(events, "run_started")[0]["mentions"]}
    assert mentions["sales_df"] == {"name": "sales_df", "kind": "variable", "ok": True}
    assert mentions["notes.txt"]["ok"] and not mentions["../../etc/passwd"]["ok"] and not mentions[".env"]["ok"]
    assert not mentions["__import__('os"]["ok"]
    request = fake_llm.requests[0]
    context = context_of(request)
    assert "not instructions" in context
    assert "'revenue': float64, 1 null" in context and "2024-02" in context and "revenue is in euros" in context
    assert "its own __repr__ is not called" in context
    assert "hunter2" not in context and "root:" not in context
    assert "outside the workspace" in context and "hidden" in context
    assert request["messages"][-1] == {"role": "user", "content": message}  # the user's message as written, last
    assert all("context" not in m for m in request["messages"])  # Cellwright's mark never goes to the endpoint
    # The user's namespace is as it was, and no user code ran.
    assert await env.evaluate_json(EVERYTHING) == names_before and await env.evaluate_json(COUNT) == count_before
    assert await env.evaluate_json("__import__('json').dumps(Trap.touched)") == []
    _, detail = await api.call("GET", f"threads/{thread}", expect=200)
    assert [m["content"] for m in detail["messages"] if m["role"] == "user"] == [message]


@pytest.mark.also_gateway
async def test_snapshot_without_mentions_and_the_variables_route(
    api: Api, fake_llm: FakeLLM, jp_serverapp: Any, notebook_kernel: str
) -> None:
    await run_in_kernel(jp_serverapp, SETUP)
    fake_llm.script(text("ok"))
    thread = await api.new_thread()
    await api.run(thread, "plot the sales data", kernel_id=notebook_kernel)
    events = await api.until_finished(thread)
    assert "mentions" not in of_type(events, "run_started")[0]
    context = context_of(fake_llm.requests[0])
    assert "sales_df: pandas.DataFrame (3 x 2)" in context and "weights: numpy.ndarray (3 x 4, float64)" in context
    _, answer = await api.call("POST", "variables", {"kernel_id": notebook_kernel}, expect=200)
    listed = {v["name"]: v for v in answer["variables"]}
    assert listed["sales_df"] == {"name": "sales_df", "type": "pandas.DataFrame", "shape": [3, 2]}
    assert "pd" not in listed and "Trap" not in listed
    _, answer = await api.call("POST", "variables", {"notebook_path": NOTEBOOK}, expect=200)
    assert "sales_df" in {v["name"] for v in answer["variables"]}
    code, _ = await api.call("POST", "variables", {"notebook_path": "../x.ipynb"})
    assert code == 400


async def test_read_notebook_lists_user_cells_in_run_order(
    api: Api, fake_llm: FakeLLM, jp_serverapp: Any, jp_root_dir: Path, notebook_kernel: str
) -> None:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell("import math", execution_count=2),
        nbformat.v4.new_markdown_cell("# Sales"),
        nbformat.v4.new_code_cell(
            "print('first')",
            execution_count=1,
            outputs=[nbformat.v4.new_output("stream", name="stdout", text="first\n")],
        ),
    ]
    nbformat.write(notebook, str(jp_root_dir / NOTEBOOK))
    for code in ("alpha = 1", "beta = alpha + 1", "print(beta)"):
        await run_in_kernel(jp_serverapp, code)  # the user's own cells, not saved yet
    # Another notebook's kernel, started later, writes the same user's history database: its newer
    # session must not pass for this kernel's inputs.
    other = await jp_serverapp.kernel_manager.start_kernel(kernel_name="python3")
    reply = await execute_reply(jp_serverapp, other, "other_notebooks_cell = 1", timeout=60)
    assert reply["content"]["status"] == "ok"
    fake_llm.script(tool_call("read_notebook", {}), text("done"))
    thread = await api.new_thread()
    await api.run(thread, "what did I run?", kernel_id=notebook_kernel)
    events = await api.until_finished(thread)
    assert of_type(events, "tool_result")[0]["status"] == "ok" and not of_type(events, "approval_required")
    result = [m["content"] for m in fake_llm.requests[1]["messages"] if m["role"] == "tool"][0]
    third = notebook.cells[2].id
    assert f"--- cell 2, id {third} (code, execution_count 1)\nprint('first')\n[outputs]\nfirst" in result
    assert "[1]: 2, [2]: 0" in result  # saved run order: cell 2, then cell 0
    history = result[result.index("The kernel's last") :]
    assert history.index("alpha = 1") < history.index("beta = alpha + 1") < history.index("print(beta)")
    assert "other_notebooks_cell" not in result
    await jp_serverapp.kernel_manager.shutdown_kernel(other, now=True)
