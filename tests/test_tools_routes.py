"""The server-side tools through the real server and a real kernel: POST diagnostics, POST
resources, and runs of the agent (scripted fake LLM) that call the tools, with approvals."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from devtools.fake_llm import FakeLLM, text, tool_call
from jupyter_ext.kernel_executor import KernelEnvironment
from tests.conftest import NOTEBOOK, Api, of_type
from tests.test_tools_shell import alive

NAMES = "__import__('json').dumps(sorted(k for k in globals() if not k.startswith('_')))"
COUNT = "__import__('json').dumps(get_ipython().execution_count)"


def kernel_env(jp_serverapp: Any, kernel_id: str | None = None) -> KernelEnvironment:
    return KernelEnvironment(
        jp_serverapp.kernel_manager, jp_serverapp.session_manager, Path(jp_serverapp.root_dir), NOTEBOOK, kernel_id
    )


async def run_in_kernel(jp_serverapp: Any, code: str) -> None:
    cell = await kernel_env(jp_serverapp).run_cell("setup", code, lambda event: None)
    assert cell.status == "ok", cell.outputs


def tool_messages(fake_llm: FakeLLM) -> list[str]:
    return [m["content"] for m in fake_llm.requests[-1]["messages"] if m["role"] == "tool"]


async def test_diagnostics_route_knows_the_kernels_names(api: Api, jp_serverapp: Any, notebook_kernel: str) -> None:
    await run_in_kernel(jp_serverapp, "df_known = 1")
    env = kernel_env(jp_serverapp)
    names_before, count_before = await env.evaluate_json(NAMES), await env.evaluate_json(COUNT)
    for body in (
        {"code": "print(df_known, unknown_x)", "path": NOTEBOOK},
        {"code": "print(df_known, unknown_x)", "kernel_id": notebook_kernel},
    ):
        code, data = await api.call("POST", "diagnostics", body, expect=200)
        assert data == {
            "diagnostics": [
                {
                    "line": 1,
                    "column": 17,
                    "severity": "error",
                    "code": "F821",
                    "message": "undefined name 'unknown_x'",
                    "source": "pyflakes",
                }
            ]
        }
    # The kernel was asked silently: no new names, no execution count.
    assert await env.evaluate_json(NAMES) == names_before and await env.evaluate_json(COUNT) == count_before
    # A user's `sorted` and `set` are names like any other: never called by the question.
    await run_in_kernel(jp_serverapp, "calls = []\ndef sorted(*a, **k):\n    calls.append(1)\nset = sorted")
    _, data = await api.call(
        "POST", "diagnostics", {"code": "print(df_known, set, x_unknown)", "path": NOTEBOOK}, expect=200
    )
    assert [d["message"] for d in data["diagnostics"]] == ["undefined name 'x_unknown'"]
    assert await env.evaluate_json("__import__('json').dumps(len(calls))") == 0
    # Without a kernel: plain diagnostics, and a note saying why.
    _, data = await api.call("POST", "diagnostics", {"code": "print(df_known, unknown_x)"}, expect=200)
    assert [d["message"] for d in data["diagnostics"]] == ["undefined name 'df_known'", "undefined name 'unknown_x'"]
    assert "kernel could not be asked" in data["note"]


async def test_diagnostics_route_errors_and_files(api: Api, jp_root_dir: Path) -> None:
    (jp_root_dir / "mod.py").write_text("import os\n")
    _, data = await api.call("POST", "diagnostics", {"path": "mod.py"}, expect=200)
    assert [(d["line"], d["code"]) for d in data["diagnostics"]] == [(1, "F401")]
    _, data = await api.call("POST", "diagnostics", {"code": "x = undefined_q", "path": "mod.py"}, expect=200)
    assert [d["code"] for d in data["diagnostics"]] == ["F821"]
    for body, status, kind in [
        ({"code": "1", "path": "../outside.ipynb"}, 400, "path_outside_root"),
        ({"path": "/etc/passwd"}, 400, "path_outside_root"),
        ({}, 400, "missing_fields"),
        ({"code": 5}, 400, "bad_request"),
        ({"path": "missing.py"}, 400, "bad_request"),
    ]:
        code, data = await api.call("POST", "diagnostics", body)
        assert (code, data["error"]) == (status, kind), data
        assert data["message"]
    code, data = await api.call("POST", "diagnostics", "{oops")
    assert (code, data["error"]) == (400, "bad_json")


@pytest.mark.also_gateway
async def test_resources_route(api: Api, jp_serverapp: Any, jp_root_dir: Path, notebook_kernel: str) -> None:
    pytest.importorskip("pandas")
    (jp_root_dir / "data.csv").write_text("a,b\n" + "1,x\n" * 1000)
    (jp_root_dir / "folder" / "deep").mkdir(parents=True)
    (jp_root_dir / "folder" / "one.bin").write_bytes(bytes(3000))
    (jp_root_dir / "folder" / "deep" / "two.bin").write_bytes(bytes(5000))
    await run_in_kernel(
        jp_serverapp, "import pandas as pd\ndf = pd.DataFrame({'a': range(1000), 'b': ['x'] * 1000})\nnot_df = [1, 2]"
    )
    env = kernel_env(jp_serverapp)
    names_before = await env.evaluate_json(NAMES)
    body = {
        "files": ["data.csv", "folder", "missing.csv"],
        "dataframes": ["df", "not_df", "nope", "bad name!"],
        "kernel_id": notebook_kernel,
    }
    _, data = await api.call("POST", "resources", body, expect=200)
    assert set(data) == {"files", "dataframes", "system", "kernel"}  # kernel: its process tree's CPU and memory
    assert data["files"]["data.csv"] == {"bytes": 4004, "human": "3.9 KiB", "type": "file"}
    assert data["files"]["folder"]["bytes"] == 8000 and data["files"]["folder"]["files"] == 2
    assert data["files"]["missing.csv"] == {"error": "no such file or directory"}
    frame = data["dataframes"]["df"]
    assert (frame["rows"], frame["columns"], frame["library"]) == (1000, 2, "pandas") and frame["bytes"] > 8000
    assert data["dataframes"]["not_df"] == {"error": "not_df is a builtins.list, not a pandas or polars DataFrame"}
    assert data["dataframes"]["nope"] == {"error": "no variable named 'nope' in the kernel"}
    assert "not a variable name" in data["dataframes"]["bad name!"]["error"]
    system = data["system"]
    assert system["mem_total"] > system["mem_available"] > 0 and system["gpus"] == []
    assert await env.evaluate_json(NAMES) == names_before  # nothing defined in the user's namespace
    # No kernel: per-name errors, the rest answered.
    _, data = await api.call("POST", "resources", {"files": ["data.csv"], "dataframes": ["df"]}, expect=200)
    assert data["files"]["data.csv"]["bytes"] == 4004 and "no kernel" in data["dataframes"]["df"]["error"]
    _, data = await api.call("POST", "resources", {"dataframes": ["df"], "kernel_id": "no-such-kernel"}, expect=200)
    assert "no kernel" in data["dataframes"]["df"]["error"]
    code, data = await api.call("POST", "resources", {"files": ["data.csv", "../../etc/passwd"]})
    assert (code, data["error"]) == (400, "path_outside_root")
    code, data = await api.call("POST", "resources", {"files": "data.csv,x", "dataframes": [1]})
    assert (code, data["error"]) == (400, "bad_request")


async def _until_approval(api: Api, thread: str, after: int = 0) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    events = await api.until_finished(thread, after)
    assert events[-1]["status"] == "awaiting_approval", events
    return of_type(events, "approval_required")[0], events


async def test_run_execute_command_after_approval(api: Api, fake_llm: FakeLLM, jp_root_dir: Path) -> None:
    (jp_root_dir / "sub").mkdir()
    fake_llm.script(
        tool_call("execute_command", {"command": "echo hi; echo warn >&2; pwd", "cwd": "sub"}, id="cmd1"), text("done")
    )
    thread = await api.new_thread()
    await api.run(thread, "run it")
    approval, first = await _until_approval(api, thread)
    assert approval["command"] == "echo hi; echo warn >&2; pwd" and approval["cwd"] == "sub"
    assert approval["description"] == "Run a shell command in sub"
    assert of_type(first, "tool_call")[0]["needs_approval"] is True and not of_type(first, "cell_output")
    await api.approve(thread, "cmd1")
    events = await api.until_finished(thread, first[-1]["seq"])
    outputs = of_type(events, "cell_output")
    assert {o["id"] for o in outputs} == {"cmd1"} and not of_type(events, "cell_started")
    stdout = "".join(o["output"]["text"] for o in outputs if o["output"]["name"] == "stdout")
    assert stdout.startswith("hi\n") and stdout.rstrip().endswith("/sub")
    assert [o["output"]["text"] for o in outputs if o["output"]["name"] == "stderr"] == ["warn\n"]
    result = of_type(events, "tool_result")[0]
    assert (result["status"], result["name"]) == ("ok", "execute_command") and result["summary"].startswith(
        "exit code 0"
    )
    assert "exit code: 0" in tool_messages(fake_llm)[0] and "stderr:\nwarn" in tool_messages(fake_llm)[0]


async def test_stop_during_a_command_kills_it(
    api: Api, fake_llm: FakeLLM, jp_serverapp: Any, jp_root_dir: Path
) -> None:
    fake_llm.script(
        tool_call("execute_command", {"command": "sleep 300 & echo $! > pid.txt; echo started; wait"}, id="slow")
    )
    thread = await api.new_thread()
    await api.run(thread, "sleep")
    _, first = await _until_approval(api, thread)
    await api.approve(thread, "slow")
    store = jp_serverapp.web_app.settings["cellwright"].threads
    for _ in range(100):
        if of_type(await store.events.events_after(thread, first[-1]["seq"]), "cell_output"):
            break
        await asyncio.sleep(0.05)
    pid = int((jp_root_dir / "pid.txt").read_text())
    assert alive(pid)
    await api.call("POST", f"threads/{thread}/cancel", {}, expect=202)
    events = await api.until_finished(thread, first[-1]["seq"])
    assert events[-1]["status"] == "cancelled"
    await asyncio.sleep(0.1)
    assert not alive(pid)


async def test_run_edit_file_shows_the_diff_before_writing(api: Api, fake_llm: FakeLLM, jp_root_dir: Path) -> None:
    target = jp_root_dir / "src" / "app.py"
    target.parent.mkdir()
    target.write_text("import os\n\nVALUE = 1\n")
    edits = [{"old": "VALUE = 1", "new": "VALUE = 2"}, {"old": "import os\n", "new": "import os\nimport sys\n"}]
    fake_llm.script(tool_call("edit_file", {"path": "src/app.py", "edits": edits}, id="e1"), text("edited"))
    thread = await api.new_thread()
    await api.run(thread, "bump the value")
    approval, first = await _until_approval(api, thread)
    assert approval["description"] == "Edit the file src/app.py"
    assert approval["diff"].startswith("--- a/src/app.py\n+++ b/src/app.py\n")
    assert "-VALUE = 1\n+VALUE = 2\n" in approval["diff"] and "+import sys\n" in approval["diff"]
    assert target.read_text() == "import os\n\nVALUE = 1\n"  # nothing written before approval
    await api.approve(thread, "e1")
    events = await api.until_finished(thread, first[-1]["seq"])
    assert of_type(events, "tool_result")[0]["status"] == "ok"
    assert target.read_text() == "import os\nimport sys\n\nVALUE = 2\n"
    assert "2 replacements applied" in tool_messages(fake_llm)[0]


@pytest.mark.also_gateway
async def test_run_check_resource_and_cell_card_use_the_notebooks_kernel(
    api: Api, fake_llm: FakeLLM, jp_serverapp: Any, notebook_kernel: str
) -> None:
    pytest.importorskip("pandas")
    await run_in_kernel(
        jp_serverapp, "import pandas as pd\nsales = pd.DataFrame({'x': range(250), 'y': 1.5})\ndf_known = 1"
    )
    fake_llm.script(
        tool_call("check_resource", {"dataframes": ["sales", "missing_df"]}, id="r1"),
        tool_call("run_cell", {"code": "print(df_known, unknown_x)"}, id="c1"),
        text("checked"),
    )
    thread = await api.new_thread()
    await api.run(thread, "how big is sales?")
    approval, first = await _until_approval(api, thread)
    resource_result = of_type(first, "tool_result")[0]
    assert resource_result["name"] == "check_resource" and resource_result["status"] == "ok"
    report = [m for m in fake_llm.requests[-1]["messages"] if m["role"] == "tool"][0]["content"]
    assert "sales: 250 rows x 2 columns" in report and "missing_df: error: no variable named 'missing_df'" in report
    assert "System memory:" in report and "GPUs: none" in report
    # The run_cell approval card carries diagnostics that know the kernel's names.
    assert approval["id"] == "c1"
    assert [(d["line"], d["column"], d["message"]) for d in approval["diagnostics"]] == [
        (1, 17, "undefined name 'unknown_x'")
    ]
    await api.approve(thread, "c1", "reject", reason="not now")
    events = await api.until_finished(thread, first[-1]["seq"])
    assert events[-1]["status"] == "completed"


async def test_dead_kernel_gives_per_name_errors_not_a_failure(
    api: Api, jp_serverapp: Any, notebook_kernel: str
) -> None:
    import signal

    manager = jp_serverapp.kernel_manager.get_kernel(notebook_kernel)
    manager.stop_restarter()  # the server would restart it; stay dead, as a kernel whose restarts failed
    await manager.signal_kernel(signal.SIGKILL)
    for _ in range(50):
        if not await manager.is_alive():
            break
        await asyncio.sleep(0.05)
    started = asyncio.get_running_loop().time()
    _, data = await api.call("POST", "resources", {"dataframes": ["df"], "kernel_id": notebook_kernel}, expect=200)
    assert "is not running" in data["dataframes"]["df"]["error"] and data["system"]["mem_total"] > 0
    _, data = await api.call("POST", "diagnostics", {"code": "print(gone)", "kernel_id": notebook_kernel}, expect=200)
    assert [d["message"] for d in data["diagnostics"]] == [
        "undefined name 'gone'"
    ] and "kernel could not be asked" in data["note"]
    assert asyncio.get_running_loop().time() - started < 10
