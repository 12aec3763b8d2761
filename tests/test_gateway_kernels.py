"""Remote kernels (issue 22): a real Jupyter server started with `--gateway-url` runs its notebook
kernels on a real Jupyter Kernel Gateway, and every kernel path of Cellwright works there: approved
cells and edited cells with their outputs, Stop, a cell waiting for the user's, restart_kernel, a
kernel dying mid-cell, @mentions, check_resource, undo, the kernel's history, and a clean shutdown.

One gateway and one server serve the whole module (starting them is most of its time); each test
makes its own thread and names its own variables."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import nbformat
import pytest

from devtools import kernel_websocket
from devtools.fake_llm import FakeLLM, text, tool_call
from devtools.jupyter_process import TOKEN, JupyterProcess, KernelGatewayProcess, kill_9, read_until
from devtools.polling import wait_for
from tests.conftest import of_type
from tests.test_background_restart import PID, finished, ticked_since, waiting_thread

NOTEBOOK = "remote.ipynb"
STOP_SECONDS = 5.0  # a Stop must end a cell on the gateway within this


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLM]:
    with FakeLLM() as fake:
        yield fake


@pytest.fixture(autouse=True)
def fresh_script(llm: FakeLLM) -> None:
    llm.clear()  # a test that failed midway leaves its unconsumed replies: not the next test's


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KernelGatewayProcess]:
    # A kernel that dies is restarted on new ports (as one that dies within its first 10 s always is):
    # the harder case, where the websockets open on the old process no longer reach the new one.
    restart_on_new_ports = ["--KernelRestarter.stable_start_time=3600"]
    started = KernelGatewayProcess(tmp_path_factory.mktemp("gateway"), extra_args=restart_on_new_ports).start()
    yield started
    started.stop()


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, llm: FakeLLM, gateway: KernelGatewayProcess
) -> Iterator[JupyterProcess]:
    env = {"OPENAI_BASE_URL": llm.base_url, "OPENAI_API_KEY": "sk-test", "CELLWRIGHT_MODEL": "fake-model"}
    process = JupyterProcess(tmp_path_factory.mktemp("server"), env, extra_args=[f"--gateway-url={gateway.url}"])
    yield process.start()
    process.stop()


@pytest.fixture(scope="module")
def kernel(server: JupyterProcess, gateway: KernelGatewayProcess) -> str:
    """The notebook's kernel, started as JupyterLab starts it (POST api/sessions): on the gateway."""
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell("print('old')", id="mine")]
    nbformat.write(notebook, str(server.root / NOTEBOOK))
    kernel_id = server.open_notebook(NOTEBOOK)
    assert kernel_id in [k["id"] for k in gateway.kernels()], "the session's kernel is not the gateway's"
    return kernel_id


def new_thread(server: JupyterProcess) -> str:
    response = server.request("POST", "cellwright/api/threads", {"notebook_path": NOTEBOOK})
    assert response.status_code == 201, response.text
    return str(response.json()["thread_id"])


def run(server: JupyterProcess, thread: str, message: str, after: int = 0) -> list[dict[str, Any]]:
    """Start a run; its events up to its run_finished (a pause for approval included)."""
    response = server.request("POST", f"cellwright/api/threads/{thread}/runs", {"message": message})
    assert response.status_code == 202, response.text
    return server.events(thread, after)


def approve(server: JupyterProcess, thread: str, events: list[dict[str, Any]], call_id: str) -> list[dict[str, Any]]:
    """Approve the pending call `call_id` (the card the events end with); the events that follow."""
    assert events[-1]["type"] == "run_finished" and events[-1]["status"] == "awaiting_approval", events[-3:]
    assert of_type(events, "approval_required")[-1]["id"] == call_id
    response = server.request("POST", f"cellwright/api/threads/{thread}/approvals/{call_id}", {"decision": "approve"})
    assert response.status_code == 202, response.text
    return server.events(thread, events[-1]["seq"])


def tool_message(llm: FakeLLM, call_id: str) -> str:
    """What the model was told of call `call_id`, in the newest request that carries it."""
    for request in reversed(llm.requests):
        for message in request["messages"]:
            if message["role"] == "tool" and message.get("tool_call_id") == call_id:
                return str(message["content"])
    raise AssertionError(f"no request told the model the result of {call_id}")


def texts(events: list[dict[str, Any]], call_id: str) -> str:
    return "".join(e["output"].get("text", "") for e in of_type(events, "cell_output") if e["id"] == call_id)


def gateway_state(gateway: KernelGatewayProcess, kernel_id: str) -> str:
    return str(next(k for k in gateway.kernels() if k["id"] == kernel_id)["execution_state"])


def test_approved_and_edited_cells_run_on_the_gateway_kernel_and_the_model_sees_their_outputs(
    server: JupyterProcess, kernel: str, llm: FakeLLM
) -> None:
    llm.script(
        tool_call("run_cell", {"code": "print(6*7)"}, id="gw_print"),
        tool_call("edit_cell", {"cell_id": "mine", "source": "for i in range(3):\n    print('line', i)"}, id="gw_edit"),
        tool_call("read_notebook", {}, id="gw_read"),
        text("done"),
    )
    thread = new_thread(server)
    first = run(server, thread, "what is six times seven?")
    second = approve(server, thread, first, "gw_print")
    started = of_type(second, "cell_started")[-1]
    assert started["kernel_id"] == kernel and not started["waiting_for_kernel"]
    assert texts(second, "gw_print") == "42\n"
    assert of_type(second, "cell_finished")[0]["status"] == "ok"
    assert "42" in tool_message(llm, "gw_print")

    third = approve(server, thread, second, "gw_edit")
    edited = of_type(third, "cell_started")[-1]
    assert edited["cell_id"] == "mine" and edited["edit"] is True
    assert texts(third, "gw_edit") == "line 0\nline 1\nline 2\n"
    assert "line 2" in tool_message(llm, "gw_edit")
    # read_notebook adds the kernel's input history: the gateway kernel's own record of what ran.
    history = tool_message(llm, "gw_read")
    assert "The kernel's last" in history and "print(6*7)" in history, history
    assert third[-1]["status"] == "completed" and of_type(third, "final")[0]["answer"] == "done"

    detail = server.get(f"cellwright/api/threads/{thread}").json()
    assert any("42" in str(m.get("content")) for m in detail["messages"] if m["role"] == "tool"), detail["messages"]


def test_stop_interrupts_a_long_cell_on_the_gateway_kernel(
    server: JupyterProcess, gateway: KernelGatewayProcess, kernel: str, llm: FakeLLM
) -> None:
    llm.script(
        tool_call("run_cell", {"code": "import time\nprint('sleeping', flush=True)\ntime.sleep(60)"}, id="gw_nap")
    )
    thread = new_thread(server)
    first = run(server, thread, "sleep a minute")
    response = server.request("POST", f"cellwright/api/threads/{thread}/approvals/gw_nap", {"decision": "approve"})
    assert response.status_code == 202, response.text
    seen: list[dict[str, Any]] = []
    # The cell's first output streams while it runs: then it is surely sleeping in the kernel.
    read_until(server, thread, first[-1]["seq"], lambda events: bool(of_type(events, "cell_output")), seen)
    assert texts(seen, "gw_nap") == "sleeping\n"
    assert gateway_state(gateway, kernel) == "busy"

    stopped = time.monotonic()
    assert server.request("POST", f"cellwright/api/threads/{thread}/cancel", {}).status_code == 202
    after = server.events(thread, first[-1]["seq"])
    assert time.monotonic() - stopped < STOP_SECONDS
    assert of_type(after, "cell_finished")[-1]["status"] == "aborted"
    assert after[-1]["type"] == "run_finished" and after[-1]["status"] == "cancelled"
    assert not of_type(after, "error"), "the interrupt reached the kernel: no 'kernel unresponsive'"
    wait_for(lambda: gateway_state(gateway, kernel) == "idle", "the gateway kernel to be idle", STOP_SECONDS)


def test_a_cell_approved_while_the_user_runs_one_waits_for_it(
    server: JupyterProcess, gateway: KernelGatewayProcess, kernel: str, llm: FakeLLM
) -> None:
    llm.script(tool_call("run_cell", {"code": "print(user_cell)"}, id="gw_after_user"), text("done"))
    thread = new_thread(server)
    first = run(server, thread, "print what my cell made")
    # The user's cell, sent as JupyterLab sends it: over the server's kernel websocket, proxied to the gateway.
    user = kernel_websocket.connect(server.url, kernel, TOKEN)
    try:
        kernel_websocket.send_execute(user, "import time\ntime.sleep(3)\nuser_cell = 'made by the user'")
        wait_for(lambda: gateway_state(gateway, kernel) == "busy", "the user's cell to run", 10)
        second = approve(server, thread, first, "gw_after_user")
    finally:
        user.close()
    waiting, running = of_type(second, "cell_started")
    assert waiting["waiting_for_kernel"] is True and running["waiting_for_kernel"] is False
    assert texts(second, "gw_after_user") == "made by the user\n"
    assert second[-1]["status"] == "completed"


def kernel_requests_until(ws: Any, marker: str) -> list[str]:
    """What the kernel worked on, read from `ws` (iopub: every client's) before the watcher's own
    marker request `marker` began: each request's msg_type (its "busy"), and each cell's code (its
    execute_input; a silent evaluation has none)."""
    seen = []
    while True:
        frame = json.loads(ws.recv())
        kind, content = frame["header"]["msg_type"], frame["content"]
        parent = frame.get("parent_header") or {}
        if kind == "execute_input":
            seen.append(f"cell: {content['code']}")
        elif kind == "status" and content["execution_state"] == "busy":
            if parent.get("msg_id") == marker:
                return seen
            seen.append(str(parent.get("msg_type")))


def test_an_approved_cell_on_an_idle_gateway_kernel_costs_one_request(
    server: JupyterProcess, gateway: KernelGatewayProcess, kernel: str, llm: FakeLLM
) -> None:
    """Issue 41: before each approved cell, a kernel_info round trip on the cells' websocket, and a
    websocket of its own with two more to ask whether the kernel was busy (for the undo snapshot),
    were ~50 ms through the gateway; after it, the stale check's history request opened a websocket
    too. Once this server's connections were proven, a cell on a kernel their own iopub shows idle
    goes at once (after its undo snapshot, a silent evaluation), and no kernel_info is asked at all."""
    llm.script(
        tool_call("run_cell", {"code": "gw_one = 1"}, id="gw_one"),
        tool_call("run_cell", {"code": "gw_two = 2"}, id="gw_two"),
        text("done"),
    )
    thread = new_thread(server)
    events = run(server, thread, "set two variables")
    events += approve(server, thread, events, "gw_one")  # the connection proven (or already, by earlier tests)
    watcher = kernel_websocket.connect(gateway.url, kernel)  # every request's "busy" reaches every client
    try:
        kernel_websocket.until_done(watcher, kernel_websocket.send_execute(watcher, "pass"))  # what came before
        events += approve(server, thread, events, "gw_two")
        requests = kernel_requests_until(watcher, kernel_websocket.send_execute(watcher, "pass"))
    finally:
        watcher.close()
    assert of_type(events, "run_finished")[-1]["status"] == "completed"
    cell = requests.index("cell: gw_two = 2")
    assert requests[: cell + 1] == ["execute_request", "execute_request", "cell: gw_two = 2"], requests
    assert "kernel_info_request" not in requests and "history_request" in requests, requests


def test_restart_kernel_restarts_the_gateway_kernel_and_cells_run_after_it(
    server: JupyterProcess, gateway: KernelGatewayProcess, kernel: str, llm: FakeLLM
) -> None:
    llm.script(
        tool_call("run_cell", {"code": "before_restart = 1"}, id="gw_set"),
        tool_call("restart_kernel", {}, id="gw_restart"),
        tool_call("run_cell", {"code": "print('before_restart' in globals())"}, id="gw_check"),
        text("done"),
    )
    thread = new_thread(server)
    events = run(server, thread, "restart the kernel")
    for call_id in ("gw_set", "gw_restart", "gw_check"):
        events += approve(server, thread, events, call_id)
    restarted = next(r for r in of_type(events, "tool_result") if r["id"] == "gw_restart")
    assert restarted["status"] == "ok" and "restarted" in tool_message(llm, "gw_restart"), restarted
    assert texts(events, "gw_check") == "False\n"  # the variables went with the old process
    assert kernel in [k["id"] for k in gateway.kernels()]  # the same kernel, restarted on the gateway


def test_a_mentioned_dataframe_and_check_resource_read_the_gateway_kernel(
    server: JupyterProcess, kernel: str, llm: FakeLLM
) -> None:
    llm.script(
        tool_call("run_cell", {"code": "import pandas as pd\nsales = pd.DataFrame({'units': [3, 5, 8]})"}, id="gw_df"),
        text("made"),
        tool_call("check_resource", {"dataframes": ["sales"]}, id="gw_res"),
        text("seen"),
    )
    thread = new_thread(server)
    events = approve(server, thread, run(server, thread, "make a frame"), "gw_df")
    mentioned = run(server, thread, "how much memory does @sales take?", events[-1]["seq"])
    assert of_type(mentioned, "run_started")[0]["mentions"] == [{"name": "sales", "kind": "variable", "ok": True}]
    # The last context of the thread is this run's: the first run's (a snapshot, when an earlier test left a
    # variable in the kernel) comes first.
    context = next(
        m["content"]
        for m in reversed(llm.requests[-2]["messages"])
        if m["role"] == "user" and "[Context" in m["content"]
    )
    assert "sales" in context and "pandas.DataFrame" in context and "units" in context, context
    report = tool_message(llm, "gw_res")
    assert "sales" in report and "3 rows" in report, report
    # The kernel runs elsewhere: its usage is named unknown, not read from some local process.
    assert "the kernel's process is not local (a remote or gateway kernel)" in report, report
    usage = server.request("POST", "cellwright/api/resources", {"kernel_id": kernel}).json()
    assert "not local" in usage["kernel"]["error"], usage


def test_explore_looks_at_the_gateway_kernels_variables_in_a_sandboxed_fork_unasked(
    server: JupyterProcess, kernel: str, llm: FakeLLM
) -> None:
    """Issue 37 on a remote kernel: the fork is made inside the kernel's own process, wherever it runs."""
    look = "looked['seen'] = True\nprint(int(looked['units'].sum()), sorted(looked.columns))"
    llm.script(
        tool_call("run_cell", {"code": "import pandas as pd\nlooked = pd.DataFrame({'units': [3, 5, 8]})"}, id="gw_l"),
        text("made"),
        tool_call("explore", {"code": look}, id="gw_look"),
        text("16 units"),
    )
    thread = new_thread(server)
    events = approve(server, thread, run(server, thread, "make a frame"), "gw_l")
    explored = run(server, thread, "how many units?", events[-1]["seq"])
    assert not of_type(explored, "approval_required"), "a sandboxed look asks nothing"
    result = next(e for e in of_type(explored, "tool_result") if e["id"] == "gw_look")
    assert result["status"] == "ok" and result["sandboxed"] is True, result
    assert "16 ['seen', 'units']" in tool_message(llm, "gw_look")
    assert explored[-1]["status"] == "completed"

    # What the look assigned stayed in the fork: the kernel's frame has its one column.
    # A gateway's kernel can still read as busy a moment after the run (its execution_state lags, see
    # kernel_executor): the listing then says so in a note instead of listing. Wait for a full one.
    def full_listing() -> dict[str, Any] | None:
        answer: dict[str, Any] = server.request("POST", "cellwright/api/variables", {"kernel_id": kernel}).json()
        return None if "note" in answer else answer

    listed = wait_for(full_listing, "a full listing of the kernel's variables", 10)["variables"]
    assert {v["name"]: v for v in listed}.get("looked", {}).get("shape") == [3, 1], listed


def test_undo_restores_the_gateway_kernels_variables(server: JupyterProcess, kernel: str, llm: FakeLLM) -> None:
    llm.script(
        tool_call("run_cell", {"code": "import pandas as pd\nstock = pd.DataFrame({'n': [1, 2, 3]})"}, id="gw_stock"),
        text("made"),
        tool_call("run_cell", {"code": "stock['double'] = stock['n'] * 2\nscratch = 5"}, id="gw_change"),
        text("changed"),
    )
    thread = new_thread(server)
    events = approve(server, thread, run(server, thread, "make stock"), "gw_stock")
    changing = run(server, thread, "add a column", events[-1]["seq"])
    assert of_type(changing, "approval_required")[-1]["impact"]["undoable"] is True
    approve(server, thread, changing, "gw_change")

    response = server.request("POST", f"cellwright/api/threads/{thread}/undo/gw_change", {})
    assert response.status_code == 200, response.text
    assert "stock" in response.json()["restored"] and response.json()["removed"] == ["scratch"]
    listed = server.request("POST", "cellwright/api/variables", {"kernel_id": kernel}).json()["variables"]
    names = {v["name"]: v for v in listed}
    assert names["stock"]["shape"] == [3, 1] and "scratch" not in names


def test_a_kernel_that_dies_mid_cell_ends_the_cell_and_the_next_cell_runs(
    server: JupyterProcess, kernel: str, llm: FakeLLM
) -> None:
    llm.script(
        tool_call("run_cell", {"code": "import os\nprint('bye', flush=True)\nos._exit(1)"}, id="gw_exit"),
        tool_call("run_cell", {"code": "print('back')"}, id="gw_back"),
        text("done"),
    )
    thread = new_thread(server)
    events = approve(server, thread, run(server, thread, "exit the kernel"), "gw_exit")
    assert of_type(events, "cell_finished")[-1]["status"] == "error"
    assert "died" in tool_message(llm, "gw_exit") and "restarted" in tool_message(llm, "gw_exit")
    # The gateway restarted the kernel under its id: the next cell runs in the new process.
    assert texts(approve(server, thread, events, "gw_back"), "gw_back") == "back\n"


@pytest.mark.runs_long
def test_a_server_killed_mid_background_cell_finds_the_gateway_kernel_again_and_registers_it(
    tmp_path: Path, gateway: KernelGatewayProcess, llm: FakeLLM, servers: list
) -> None:
    """Issue 38: kill -9 while an approved cell runs in the background on the gateway. The next
    server asks the gateway for the kernel, follows the cell (a tick printed after the kill reaches
    the log), resumes the run with the cell's real output when it ends, and registers the kernel:
    it is in the server's kernel list, the notebook's session is on it, and a notebook's websocket
    through the new server runs code that reads the long cell's variables."""
    release = tmp_path / "release"
    code = (
        f"{PID}steps = 0\nwhile not pathlib.Path({str(release)!r}).exists():\n    steps += 1\n"
        "    print('tick', time.time(), flush=True)\n    time.sleep(0.3)\nprint('trained: loss 0.1')\n"
    )
    llm.script(tool_call("run_cell", {"code": code}, id="gw_long"), text("Noted."))
    env = {"OPENAI_BASE_URL": llm.base_url, "OPENAI_API_KEY": "sk-test", "CELLWRIGHT_MODEL": "fake-model"}
    args = [f"--gateway-url={gateway.url}", "--Cellwright.background_after=1"]
    first = JupyterProcess(tmp_path, env, extra_args=args).start()
    servers.append(first)
    kernel = first.open_notebook("long.ipynb")
    try:
        thread, before, _ = waiting_thread(first, "long.ipynb", kernel, code)
        kill_9(first)
        killed_at = time.time()

        second = JupyterProcess(tmp_path, env, extra_args=args).start()
        servers.append(second)
        ticked_since(second, thread, before, killed_at)
        assert kernel in [k["id"] for k in second.get("api/kernels").json()], "not in the server's kernel list"
        sessions = [s for s in second.get("api/sessions").json() if s["path"] == "long.ipynb"]
        assert [s["kernel"]["id"] for s in sessions] == [kernel], sessions
        release.write_text("")
        ended = of_type(finished(second, thread), "cell_finished")[-1]
        assert ended["id"] == "gw_long" and ended["status"] == "ok", ended
        outcome = tool_message(llm, "gw_long")
        assert "trained: loss 0.1" in outcome and "followed it again" in outcome, outcome
        assert f"execution_count {ended['execution_count']}" in outcome, outcome

        ws = kernel_websocket.connect(second.url, kernel, TOKEN)  # as the notebook's tab connects
        try:
            reply = kernel_websocket.until_done(ws, kernel_websocket.send_execute(ws, "assert steps > 0"))
        finally:
            ws.close()
        assert reply["content"]["status"] == "ok", reply["content"]
    finally:
        if kernel in [k["id"] for k in gateway.kernels()]:  # whatever happened: the next test counts them
            httpx.delete(f"{gateway.url}/api/kernels/{kernel}", timeout=30)


def test_the_server_shuts_down_cleanly(
    server: JupyterProcess, gateway: KernelGatewayProcess, kernel: str, llm: FakeLLM
) -> None:
    """Last in the module: with a kept client on the gateway kernel (this test's own cell, so it
    holds alone too), the shutdown answers 200, the process exits (no client's thread keeps it
    alive), nothing in its log is a traceback or a 500, and the gateway's kernels are shut down."""
    llm.script(tool_call("run_cell", {"code": "print('last')"}, id="gw_last"), text("done"))
    thread = new_thread(server)
    approve(server, thread, run(server, thread, "one more"), "gw_last")  # its output is the first test's subject
    assert server.proc is not None
    response = server.request("POST", "api/shutdown")
    assert response.status_code == 200, response.text
    assert server.proc.wait(30) == 0
    log = server.log_path.read_text()
    assert "Traceback" not in log and not re.search(r"\b5\d\d (GET|POST|PUT|DELETE)", log), log[-5000:]
    assert "never awaited" not in log, log[-5000:]
    assert gateway.kernels() == []
    assert "Traceback" not in Path(gateway.log_path).read_text(), Path(gateway.log_path).read_text()[-5000:]
