"""Multi-agent mode through the real routes: the planner delegates, sub-agents run on fresh
contexts, their approvals reach the panel and survive a restart."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from devtools.fake_llm import FakeLLM, reading, text, tool_call
from devtools.jupyter_process import JupyterProcess
from tests.conftest import Api, of_type

CSV, REPORTED, TASKED = r"(\w+\.csv)", r"The file is (\S+) with", r"Load (\S+) and"
PRINTED, TOTAL = r"^(\d+)$", r"Total amount is (\d+)"


def total_cell(path: str) -> str:
    return f"import csv\nprint(sum(int(r['amount']) for r in csv.DictReader(open({path!r}))))"


def delegate(agent: str, description: str, id: str) -> Any:
    return tool_call("task", {"agent": agent, "description": description}, id=id)


async def test_planner_delegates_to_both_subagents(
    api: Api, fake_llm: FakeLLM, notebook_kernel: str, jp_root_dir: Any
) -> None:
    (jp_root_dir / "sales.csv").write_text("region,amount\nnorth,10\nsouth,32\n")
    # Each agent knows only what it was shown: the file's name from list_files, passed on in the
    # researcher's report, the planner's task and the developer's cell; the total from the cell's output.
    fake_llm.script(
        delegate("researcher", "Find the sales data file and report its columns.", "p1"),
        tool_call("list_files", {"path": "."}, id="r1"),
        reading(lambda seen: text(f"The file is {seen.find(CSV, tool='list_files')} with columns region, amount.")),
        reading(
            lambda seen: delegate(
                "python_developer", f"Load {seen.find(REPORTED, tool='task')} and print the total amount.", "p2"
            )
        ),
        reading(lambda seen: tool_call("run_cell", {"code": total_cell(seen.find_in_prompt(TASKED))}, id="d1")),
        reading(lambda seen: text(f"Total amount is {seen.find(PRINTED, tool='run_cell', flags=re.M)}.")),
        reading(
            lambda seen: tool_call(
                "final_answer",
                {
                    "answer": f"Total sales: **{seen.find(TOTAL, tool='task')}**.",
                    "next_items": [{"title": "By region", "prompt": "split by region"}],
                },
            )
        ),
    )
    thread = await api.new_thread()
    await api.run(thread, "What are total sales?", mode="multi")
    first = await api.until_finished(thread)
    assert first[0]["type"] == "run_started" and first[0]["mode"] == "multi"
    switches = [(e["from"], e["to"]) for e in of_type(first, "agent_switch")]
    assert switches == [("planner", "researcher"), ("researcher", "planner"), ("planner", "python_developer")]
    assert {e["agent"] for e in of_type(first, "tool_call")} == {"planner", "researcher", "python_developer"}
    assert any(e["agent"] == "researcher" for e in of_type(first, "token"))
    approval = of_type(first, "approval_required")[0]
    assert approval["id"] == "d1" and approval["agent"] == "python_developer"
    assert first[-1]["status"] == "awaiting_approval"
    _, detail = await api.call("GET", f"threads/{thread}")
    assert detail["pending_approval"]["id"] == "d1" and detail["pending_approval"]["agent"] == "python_developer"

    # Each sub-agent started from its task description alone.
    researcher_request = fake_llm.requests[1]["messages"]
    assert [m["role"] for m in researcher_request] == ["system", "user"]
    assert researcher_request[1]["content"] == "Find the sales data file and report its columns."
    assert "researcher" in researcher_request[0]["content"] and "read-only" in researcher_request[0]["content"]
    assert {t["function"]["name"] for t in fake_llm.requests[1]["tools"]} == {
        "search_knowledge",
        "read_file",
        "read_notebook",
        "list_files",
        "search_workspace",
        "search_notebooks",
        "diagnostics",
        "execute_command",
    }
    planner_tools = {t["function"]["name"] for t in fake_llm.requests[0]["tools"]}
    assert planner_tools == {"write_todos", "check_resource", "load_skill", "task", "final_answer"}
    requests_before = len(fake_llm.requests)

    code, _ = await api.approve(thread, "d1")
    assert code == 202
    second = await api.until_finished(thread, first[-1]["seq"])
    # Resuming continued the developer at its approved cell: its model was not asked again first.
    assert len(fake_llm.requests) == requests_before + 2
    assert of_type(second, "cell_output")[0]["output"]["text"] == "42\n"
    assert of_type(second, "cell_output")[0]["agent"] == "python_developer"
    assert [(e["from"], e["to"]) for e in of_type(second, "agent_switch")][-1] == ("python_developer", "planner")
    final = of_type(second, "final")[0]
    assert final["answer"] == "Total sales: **42**." and final["agent"] == "planner"
    planner_last = fake_llm.requests[-1]["messages"]
    assert planner_last[-1]["role"] == "tool" and "Total amount is 42." in planner_last[-1]["content"]
    assert "sum(int(r['amount'])" not in str(planner_last), "only the report goes back to the planner"


async def test_subagent_may_not_call_another_agent(api: Api, fake_llm: FakeLLM) -> None:
    fake_llm.script(
        delegate("python_developer", "Do it.", "p1"),
        delegate("researcher", "Help me.", "nested"),
        text("I could not delegate, so I stopped."),
        tool_call("final_answer", {"answer": "done"}),
    )
    thread = await api.new_thread()
    await api.run(thread, "go", mode="multi")
    events = await api.until_finished(thread)
    nested = [e for e in of_type(events, "tool_result") if e["id"] == "nested"][0]
    assert nested["status"] == "error" and nested["agent"] == "python_developer"
    assert "may not delegate" in [m for m in fake_llm.requests[2]["messages"] if m["role"] == "tool"][0]["content"]
    assert events[-1]["status"] == "completed"


async def test_planner_may_not_call_an_unknown_agent(api: Api, fake_llm: FakeLLM) -> None:
    fake_llm.script(delegate("data_engineer", "x", "p1"), tool_call("final_answer", {"answer": "ok"}))
    thread = await api.new_thread()
    await api.run(thread, "go", mode="multi")
    events = await api.until_finished(thread)
    result = of_type(events, "tool_result")[0]
    assert result["status"] == "error" and "python_developer, researcher" in result["summary"]


def test_restart_while_a_subagent_waits(tmp_path: Path, fake_llm: FakeLLM, servers: list) -> None:
    env = {"OPENAI_BASE_URL": fake_llm.base_url, "OPENAI_API_KEY": "k", "CELLWRIGHT_MODEL": "fake-model"}
    fake_llm.script(
        delegate("python_developer", "Print hello.", "p1"),
        tool_call("run_cell", {"code": "print('hello after restart')"}, id="d1"),
        text("Printed it."),
        tool_call("final_answer", {"answer": "Said hello."}),
    )
    first = JupyterProcess(tmp_path, env).start()
    servers.append(first)
    thread = first.request("POST", "cellwright/api/threads", {"notebook_path": "m.ipynb"}).json()["thread_id"]
    first.request("POST", f"cellwright/api/threads/{thread}/runs", {"message": "say hello", "mode": "multi"})
    before = first.events(thread)
    assert before[-1]["status"] == "awaiting_approval"
    first.stop()

    second = JupyterProcess(tmp_path, env).start()
    servers.append(second)
    second.open_notebook("m.ipynb")
    pending = second.get(f"cellwright/api/threads/{thread}").json()["pending_approval"]
    assert pending["id"] == "d1" and pending["agent"] == "python_developer"
    assert (
        second.request("POST", f"cellwright/api/threads/{thread}/approvals/d1", {"decision": "approve"}).status_code
        == 202
    )
    after = second.events(thread, before[-1]["seq"])
    assert of_type(after, "cell_output"), [(e["type"], e.get("status"), e.get("summary")) for e in after]
    assert of_type(after, "cell_output")[0]["output"]["text"] == "hello after restart\n"
    assert of_type(after, "final")[0]["answer"] == "Said hello."
    assert len(fake_llm.requests) == 4
