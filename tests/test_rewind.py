"""Issue 25 through the real routes, a real kernel and the scripted model: going back to a step undoes
every later one (kernel variables, cells, files) and the conversation continues from there; the
preview names what cannot go back; the earlier branch stays readable; a rewind can be undone; "try
again" forks a new thread; a server restart between the steps and the rewind."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from devtools.fake_llm import FakeLLM, text, tool_call
from devtools.jupyter_process import JupyterProcess
from tests.conftest import NOTEBOOK, Api, execute_reply, of_type
from tests.test_undo_routes import _kernel, _run_approved, notebook_with_my_cell

FIVE_STEPS = (
    tool_call("run_cell", {"code": "df['a'] = df['a'] * 10"}, id="s1"),
    tool_call("run_cell", {"code": "df['b'] = df['b'] * 2\ntotal = int(df['a'].sum())"}, id="s2"),
    tool_call("write_file", {"path": "out.txt", "content": "written by the agent\n"}, id="s3"),
    tool_call("edit_file", {"path": "notes.txt", "edits": [{"old": "draft", "new": "final"}]}, id="s4"),
    tool_call("add_markdown", {"content": "# Done"}, id="s5"),
    text("All five done."),
)
AFTER_STEP_1 = [[10, 20, 30], [4, 5, 6], False]
KERNEL_NOW = "[df['a'].tolist(), df['b'].tolist(), 'total' in globals()]"


async def _five_steps(api: Api, fake_llm: FakeLLM, kernel: str, server: Any, root: Path) -> str:
    await execute_reply(server, kernel, "import pandas as pd\ndf = pd.DataFrame({'a': [1, 2, 3], 'b': [4, 5, 6]})")
    (root / "notes.txt").write_text("a draft\n")
    fake_llm.script(*FIVE_STEPS)
    thread = await api.new_thread()
    await _run_approved(api, thread, "do the five things", ["s1", "s2", "s3", "s4"])
    assert await _kernel(server, kernel, KERNEL_NOW) == [[10, 20, 30], [8, 10, 12], True]
    return thread


def _calls_sent(request: dict[str, Any]) -> list[str]:
    return [c["id"] for m in request["messages"] for c in m.get("tool_calls") or []]


async def _next_request(api: Api, fake_llm: FakeLLM, thread: str) -> dict[str, Any]:
    fake_llm.script(text("Continuing from there."))
    after = max((e["seq"] for e in await api.events(thread)), default=0)
    await api.run(thread, "what now?")
    await api.until_finished(thread, after)
    return fake_llm.requests[-1]


@pytest.mark.also_postgres  # checkpoint metadata and history as the PostgreSQL saver keeps them
async def test_rewind_with_revert_restores_kernel_files_cells_and_conversation(
    api: Api, fake_llm: FakeLLM, notebook_kernel: str, jp_serverapp: Any, jp_root_dir: Path
) -> None:
    thread = await _five_steps(api, fake_llm, notebook_kernel, jp_serverapp, jp_root_dir)
    _, preview = await api.call("POST", f"threads/{thread}/rewind", {"to": "s2", "dry_run": True}, expect=200)
    assert [s["tool_call_id"] for s in preview["steps"]] == ["s5", "s4", "s3", "s2"]
    assert preview["not_reversible"] == [] and preview["branch"] == ""
    diffs = {d["path"]: d["diff"] for d in preview["file_diffs"]}
    assert "-a final\n+a draft\n" in diffs["notes.txt"] and "-written by the agent\n" in diffs["out.txt"], diffs
    assert await _kernel(jp_serverapp, notebook_kernel, KERNEL_NOW) == [[10, 20, 30], [8, 10, 12], True]  # unchanged
    assert (jp_root_dir / "out.txt").exists()

    _, done = await api.call("POST", f"threads/{thread}/rewind", {"to": "s2"}, expect=200)
    assert await _kernel(jp_serverapp, notebook_kernel, KERNEL_NOW) == AFTER_STEP_1
    assert not (jp_root_dir / "out.txt").exists() and (jp_root_dir / "notes.txt").read_text() == "a draft\n"
    # The agent's cells after step 1: step 2's code cell and step 5's Markdown (steps 3-4 are files).
    assert done["cells_removed"] == ["s5", "s2"] and done["files_reverted"] == ["notes.txt", "out.txt"]
    assert done["kernel_undone"] == ["s2"]  # the only kernel step gone back over (s1 stays)
    assert "total" in done["removed"] and "df" in done["restored"] and done["not_reversible"] == []
    rewound = of_type(await api.events(thread), "rewound")[-1]
    assert rewound["cells_removed"] == ["s5", "s2"] and rewound["branch"] == done["branch"]

    # The earlier attempt stays readable, as another branch.
    _, listed = await api.call("GET", f"threads/{thread}/branches", expect=200)
    current, earlier = listed["branches"]
    assert current["current"] and current["branch"] == done["branch"] and current["steps"] == 1
    assert earlier["branch"] == done["previous_branch"] and earlier["from_tool_call_id"] == "s2"
    assert earlier["steps"] == 5
    _, old = await api.call("GET", f"threads/{thread}/branches/{earlier['branch']}", expect=200)
    assert [c["id"] for m in old["messages"] for c in m.get("tool_calls") or []] == ["s1", "s2", "s3", "s4", "s5"]
    _, detail = await api.call("GET", f"threads/{thread}", expect=200)
    assert [c["id"] for m in detail["messages"] for c in m.get("tool_calls") or []] == ["s1"]

    request = await _next_request(api, fake_llm, thread)
    assert _calls_sent(request) == ["s1"]
    users = [m["content"] for m in request["messages"] if m["role"] == "user"]
    assert "do the five things" in users and "what now?" in users
    assert not any("s2" in str(m.get("content")) or "preimage" in m for m in request["messages"])
    # Something ran after the rewind: it cannot be undone any more.
    code, refused = await api.call("POST", f"threads/{thread}/rewind/undo", {}, expect=409)
    assert "not a rewind" in refused["message"]
    # Back to before the user's second message: that exchange goes, the steps before it stay.
    _, back = await api.call("POST", f"threads/{thread}/rewind", {"user_message": 1}, expect=200)
    assert back["steps"] == [] and back["not_reversible"] == []
    _, detail = await api.call("GET", f"threads/{thread}", expect=200)
    assert [m["content"] for m in detail["messages"] if m["role"] == "user"] == ["do the five things"]


async def test_rewind_with_keep_takes_back_only_kernel_and_conversation(
    api: Api, fake_llm: FakeLLM, notebook_kernel: str, jp_serverapp: Any, jp_root_dir: Path
) -> None:
    thread = await _five_steps(api, fake_llm, notebook_kernel, jp_serverapp, jp_root_dir)
    body = {"to": "s2", "notebook": "keep", "files": "keep"}
    _, done = await api.call("POST", f"threads/{thread}/rewind", body, expect=200)
    assert await _kernel(jp_serverapp, notebook_kernel, KERNEL_NOW) == AFTER_STEP_1
    assert (jp_root_dir / "out.txt").exists() and (jp_root_dir / "notes.txt").read_text() == "a final\n"
    assert done["cells_removed"] == [] and done["files_reverted"] == []
    request = await _next_request(api, fake_llm, thread)
    assert _calls_sent(request) == ["s1"]
    # The model is told what stayed although the conversation went back: the kept files.
    assert any("its file changes were kept" in str(m.get("content")) for m in request["messages"])


async def test_a_shell_step_is_named_not_reversible_and_a_rewind_can_be_undone(
    api: Api, fake_llm: FakeLLM, notebook_kernel: str, jp_serverapp: Any, jp_root_dir: Path
) -> None:
    fake_llm.script(
        tool_call("run_cell", {"code": "x = 1"}, id="c1"),
        tool_call("execute_command", {"command": "echo hi > shell.txt"}, id="sh1"),
        tool_call("write_file", {"path": "w.txt", "content": "new\n"}, id="w1"),
        text("ok"),
    )
    thread = await api.new_thread()
    await _run_approved(api, thread, "go", ["c1", "sh1", "w1"])
    _, preview = await api.call("POST", f"threads/{thread}/rewind", {"to": "c1", "dry_run": True}, expect=200)
    shell = [n for n in preview["not_reversible"] if n["tool_call_id"] == "sh1"]
    assert shell and "shell command" in shell[0]["why"], preview
    assert [n["tool_call_id"] for n in preview["not_reversible"]] == ["sh1"]

    _, done = await api.call("POST", f"threads/{thread}/rewind", {"to": "c1"}, expect=200)
    assert not (jp_root_dir / "w.txt").exists() and (jp_root_dir / "shell.txt").exists()
    assert await _kernel(jp_serverapp, notebook_kernel, "'x' in globals()") is False
    _, undone = await api.call("POST", f"threads/{thread}/rewind/undo", {}, expect=200)
    assert undone["files_restored"] == ["w.txt"] and (jp_root_dir / "w.txt").read_text() == "new\n"
    assert any("not redone" in line for line in undone["not_restored"])
    _, detail = await api.call("GET", f"threads/{thread}", expect=200)
    assert [c["id"] for m in detail["messages"] for c in m.get("tool_calls") or []] == ["c1", "sh1", "w1"]
    assert of_type(await api.events(thread), "rewind_undone")[-1]["branch"] == undone["branch"]
    await api.call("POST", f"threads/{thread}/rewind/undo", {}, expect=409)  # once


async def test_a_file_you_changed_since_the_step_is_left_as_you_made_it(
    api: Api, fake_llm: FakeLLM, notebook_kernel: str, jp_root_dir: Path
) -> None:
    fake_llm.script(tool_call("write_file", {"path": "mine.txt", "content": "agent\n"}, id="x1"), text("ok"))
    thread = await api.new_thread()
    await _run_approved(api, thread, "write", ["x1"])
    (jp_root_dir / "mine.txt").write_text("agent\nand my own line\n")
    _, done = await api.call("POST", f"threads/{thread}/rewind", {"to": "x1"}, expect=200)
    assert done["files_reverted"] == [] and "changed since the step" in done["not_reversible"][0]["why"], done
    assert (jp_root_dir / "mine.txt").read_text() == "agent\nand my own line\n"


async def test_try_again_forks_a_new_thread_and_leaves_the_original(
    api: Api, fake_llm: FakeLLM, notebook_kernel: str
) -> None:
    fake_llm.script(
        tool_call("run_cell", {"code": "y = 1"}, id="f1"),
        tool_call("run_cell", {"code": "y = 2"}, id="f2"),
        text("ok"),
    )
    thread = await api.new_thread()
    await _run_approved(api, thread, "go", ["f1", "f2"])
    _, before = await api.call("GET", f"threads/{thread}", expect=200)
    _, forked = await api.call("POST", f"threads/{thread}/fork", {"from": "f2"}, expect=201)
    assert forked["forked_from"] == f"{thread}:f2" and forked["thread_id"] != thread
    _, again = await api.call("GET", f"threads/{forked['thread_id']}", expect=200)
    assert [c["id"] for m in again["messages"] for c in m.get("tool_calls") or []] == ["f1"]
    assert again["forked_from"] == f"{thread}:f2" and before.get("forked_from") is None
    assert (await api.call("GET", f"threads/{thread}", expect=200))[1]["messages"] == before["messages"]
    # Its log is the original's up to just before f2 (the panel draws the thread from it), then `forked`.
    copied = await api.events(forked["thread_id"])
    assert [e["seq"] for e in copied] == list(range(1, len(copied) + 1))
    assert {e.get("id") for e in copied if e.get("id")} == {"f1"} and of_type(copied, "cell_finished")
    assert copied[0]["type"] == "run_started" and copied[0]["message"] == "go"
    assert copied[-1] == {
        **copied[-1],
        "type": "forked",
        "forked_from": thread,
        "from_tool_call_id": "f2",
        "thread_id": forked["thread_id"],
    }
    # The copied cells are the original thread's: a notebook reconcile lists each once.
    _, cells = await api.call("POST", "agent_cells", {"notebook_path": NOTEBOOK}, expect=200)
    assert [(c["tool_call_id"], c["thread_id"]) for c in cells["cells"]] == [("f1", thread), ("f2", thread)]
    request = await _next_request(api, fake_llm, forked["thread_id"])
    assert _calls_sent(request) == ["f1"]

    # Back to before the thread's first message: an empty conversation, and nothing re-driven.
    _, back = await api.call("POST", f"threads/{thread}/rewind", {"user_message": 0}, expect=200)
    assert [s["tool_call_id"] for s in back["steps"]] == ["f2", "f1"]
    _, empty = await api.call("GET", f"threads/{thread}", expect=200)
    assert empty["messages"] == [] and empty["status"] != "running"
    request = await _next_request(api, fake_llm, thread)
    assert [m["content"] for m in request["messages"] if m["role"] == "user" and m["content"] == "go"] == []


async def test_rewind_refuses_what_it_cannot_do(api: Api, fake_llm: FakeLLM, notebook_kernel: str) -> None:
    fake_llm.script(tool_call("run_cell", {"code": "z = 1"}, id="p1"), text("ok"))
    thread = await api.new_thread()
    await api.run(thread, "go")
    await api.until_finished(thread)  # awaiting approval of p1
    code, pending = await api.call("POST", f"threads/{thread}/rewind", {"user_message": 0}, expect=409)
    assert pending["error"] == "approval_pending"
    _, preview = await api.call("POST", f"threads/{thread}/rewind", {"user_message": 0, "dry_run": True}, expect=200)
    assert preview["steps"][0]["tool_call_id"] == "p1" and preview["not_reversible"] == []  # p1 has not run
    for body, kind in [
        ({"to": "nope"}, "step_not_found"),
        ({"user_message": 5}, "step_not_found"),
        ({}, "bad_request"),
        ({"to": "p1", "user_message": 0}, "bad_request"),
        ({"to": "x" * 201}, "bad_request"),
        ({"to": "p1", "files": "maybe"}, "bad_request"),
    ]:
        code, answer = await api.call("POST", f"threads/{thread}/rewind", {**body, "dry_run": True})
        assert answer["error"] == kind and 400 <= code < 500, (body, code, answer)
    await api.call("GET", f"threads/{thread}/branches/{'b' * 64}", expect=404)
    await api.call("GET", "threads/nosuchthread/branches", expect=404)


@pytest.fixture
def server_env(fake_llm: FakeLLM) -> dict[str, str]:
    return {"OPENAI_BASE_URL": fake_llm.base_url, "OPENAI_API_KEY": "sk-secret", "CELLWRIGHT_MODEL": "fake-model"}


def test_after_a_server_restart_files_and_conversation_go_back_and_the_kernel_is_named(
    tmp_path: Path, fake_llm: FakeLLM, server_env: dict[str, str], servers: list[Any]
) -> None:
    fake_llm.script(
        tool_call("run_cell", {"code": "k = 1"}, id="r1"),
        tool_call("write_file", {"path": "r.txt", "content": "agent\n"}, id="r2"),
        text("ok"),
    )
    first = JupyterProcess(tmp_path, server_env).start()
    servers.append(first)
    first.open_notebook(NOTEBOOK)
    thread = first.request("POST", "cellwright/api/threads", {"notebook_path": NOTEBOOK}).json()["thread_id"]
    first.request("POST", f"cellwright/api/threads/{thread}/runs", {"message": "go"})
    for call in ("r1", "r2"):
        assert first.events(thread)[-1]["status"] == "awaiting_approval"
        first.request("POST", f"cellwright/api/threads/{thread}/approvals/{call}", {"decision": "approve"})
    assert of_type(first.events(thread), "final")
    first.stop()

    second = JupyterProcess(tmp_path, server_env).start()
    servers.append(second)
    second.open_notebook(NOTEBOOK)
    answer = second.request("POST", f"cellwright/api/threads/{thread}/rewind", {"to": "r1"})
    assert answer.status_code == 200, answer.text
    done = answer.json()
    assert done["files_reverted"] == ["r.txt"] and not (tmp_path / "root" / "r.txt").exists()
    kernel = [n["why"] for n in done["not_reversible"] if n["tool_call_id"] == "r1"]
    assert kernel and "kernel restarted" in kernel[0], done
    detail = second.get(f"cellwright/api/threads/{thread}").json()
    assert [c["id"] for m in detail["messages"] for c in m.get("tool_calls") or []] == []


async def test_rewind_over_an_edit_of_your_cell_gives_its_source_back(
    api: Api, fake_llm: FakeLLM, notebook_kernel: str, jp_serverapp: Any, jp_root_dir: Path
) -> None:
    await notebook_with_my_cell(jp_serverapp, notebook_kernel, jp_root_dir)
    fake_llm.script(
        tool_call("run_cell", {"code": "x = 1"}, id="e1"),
        tool_call("edit_cell", {"cell_id": "mine", "source": "y = 3"}, id="e2"),
        text("ok"),
    )
    thread = await api.new_thread()
    await _run_approved(api, thread, "go", ["e1", "e2"])
    assert await _kernel(jp_serverapp, notebook_kernel, "[x, y]") == [1, 3]
    _, preview = await api.call("POST", f"threads/{thread}/rewind", {"to": "e1", "dry_run": True}, expect=200)
    assert [s["tool_call_id"] for s in preview["steps"]] == ["e2", "e1"] and preview["not_reversible"] == []
    _, done = await api.call("POST", f"threads/{thread}/rewind", {"to": "e1"}, expect=200)
    assert await _kernel(jp_serverapp, notebook_kernel, "[y, 'x' in globals()]") == [2, False]
    # The panel gives the edited cell its source from before (the edit's cell_started carries it) and
    # removes the agent's own cell: both are named, newest first.
    assert done["cells_removed"] == ["e2", "e1"] and done["kernel_undone"] == ["e2", "e1"], done
    edit = next(e for e in of_type(await api.events(thread), "cell_started") if e["id"] == "e2")
    assert edit["edit"] and edit["previous_source"] == "y = 2"
    # Undone, the thread is back on the branch with both steps (their kernel state is not redone).
    _, undone = await api.call("POST", f"threads/{thread}/rewind/undo", {}, expect=200)
    assert undone["undid"] == done["branch"]
    _, detail = await api.call("GET", f"threads/{thread}", expect=200)
    assert [c["id"] for m in detail["messages"] for c in m.get("tool_calls") or []] == ["e1", "e2"]
