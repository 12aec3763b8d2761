"""The `%agent` magic in a real ipykernel (through jupyter-client), against the scripted fake LLM:
approvals answered on the stdin channel, cells run in the kernel's own namespace, threads in the
same store the server uses, bad input, and an interrupt in the middle of a run."""

from __future__ import annotations

import asyncio
import json
import os
import queue
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from jupyter_client import BlockingKernelClient
from jupyter_client.manager import KernelManager

from agent_core.config.storage_settings import os_user
from agent_core.kernel_side.session import notebook_path, workspace_root
from agent_core.storage.thread_store import ThreadStore
from devtools.fake_llm import FakeLLM, text, tool_call
from devtools.jupyter_process import JupyterProcess

REPO = str(Path(__file__).resolve().parent.parent)
NOTEBOOK = "analysis.ipynb"


@dataclass
class Executed:
    stdout: str = ""
    stderr: str = ""
    displays: list[dict[str, Any]] = field(default_factory=list)  # the data of each display_data
    results: list[dict[str, Any]] = field(default_factory=list)  # the data of each execute_result (the agent's cells')
    prompts: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    status: str = ""

    @property
    def text(self) -> str:
        return self.stdout + self.stderr

    @property
    def answers(self) -> list[str]:
        """The final answers shown apart from the streamed text: plain text only, as the model wrote them
        (none of these tests' answers holds a character the display marks)."""
        assert all(set(data) == {"text/plain"} for data in self.displays), self.displays  # never Markdown or HTML
        return [data["text/plain"] for data in self.displays]


class Kernel:
    """A real ipykernel, as a notebook's: cells executed with allow_stdin, input requests answered."""

    def __init__(self, client: Any, manager: Any = None) -> None:
        self.client = client
        self.manager = manager
        self.client.start_channels()
        self.client.wait_for_ready(timeout=60)

    @classmethod
    def connect(cls, connection_file: Path, timeout: float = 60) -> Kernel:
        """A kernel someone else started; until its first heartbeat a client without its manager
        takes it for dead, so a busy machine needs a few tries."""
        deadline = time.monotonic() + timeout
        while True:
            client = BlockingKernelClient(connection_file=str(connection_file))
            client.load_connection_file()
            try:
                return cls(client)
            except RuntimeError:
                client.stop_channels()
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)

    @classmethod
    def start(cls, env: dict[str, str], cwd: Path) -> Kernel:
        manager = KernelManager(kernel_name="python3")
        manager.start_kernel(env=env, cwd=str(cwd))
        return cls(manager.client(), manager)

    def stop(self) -> None:
        self.client.stop_channels()
        if self.manager is not None:
            self.manager.shutdown_kernel(now=True)

    def run(
        self,
        code: str,
        answers: tuple[str, ...] = (),
        interrupt_when: Callable[[Executed], bool] | None = None,
        timeout: float = 90,  # a deadline, not a wait: the first %agent imports the whole agent in the kernel
    ) -> Executed:
        out = Executed()
        answers_left = list(answers)
        msg_id = self.client.execute(code, allow_stdin=True)
        deadline = time.monotonic() + timeout
        interrupted_at: float | None = None
        idle = False
        while not idle:
            assert time.monotonic() < deadline, f"no end of {code!r} in {timeout} s; so far: {out}"
            while self.client.stdin_channel.msg_ready():
                request = self.client.get_stdin_msg(timeout=1)
                out.prompts.append(request["content"]["prompt"])
                if interrupt_when is not None and interrupt_when(out):
                    self.manager.interrupt_kernel()
                    interrupt_when, interrupted_at = None, time.monotonic()
                else:
                    assert answers_left, (
                        f"unexpected input request {request['content']['prompt']!r}; output: {out.text}"
                    )
                    self.client.input(answers_left.pop(0))
            try:
                msg = self.client.get_iopub_msg(timeout=0.05)
            except queue.Empty:
                continue
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = msg["header"]["msg_type"], msg["content"]
            if kind == "stream":
                setattr(out, content["name"], getattr(out, content["name"]) + content["text"])
            elif kind in ("display_data", "execute_result"):
                (out.displays if kind == "display_data" else out.results).append(content["data"])
            elif kind == "error":
                out.errors.append(content["ename"])
            elif kind == "status" and content["execution_state"] == "idle":
                idle = True
            if interrupt_when is not None and interrupt_when(out):
                self.manager.interrupt_kernel()
                interrupt_when, interrupted_at = None, time.monotonic()
            elif interrupted_at is not None and time.monotonic() - interrupted_at > 5 and "Stopped." not in out.stdout:
                # Seen once under load: the kernel ignored a SIGINT. A user presses Stop again; so do we.
                self.manager.interrupt_kernel()
                interrupted_at = time.monotonic()
        out.status = self.client.get_shell_msg(timeout=10)["content"]["status"]
        assert not answers_left, f"answers not asked for: {answers_left}; output: {out.text}"
        return out


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLM]:
    with FakeLLM() as fake:
        yield fake


@pytest.fixture(scope="module")
def places(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("magic")
    found = {name: root / name for name in ("data", "config", "work", "runtime")}
    for path in found.values():
        path.mkdir()
    # A Cellwright section in the Jupyter config, as the server reads it: the kernel reads it too.
    (found["config"] / "jupyter_server_config.json").write_text(
        json.dumps({"Cellwright": {"max_retries": 0, "request_timeout": 10}})
    )
    return found


def magic_env(llm: FakeLLM, places: dict[str, Path], **extra: str) -> dict[str, str]:
    """A notebook kernel's environment, with the fake LLM and Jupyter folders of the test's own (no
    jpserver file of a server running on this machine can become the magic's root)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("CELLWRIGHT_", "OPENAI_", "JPY_", "JUPYTER_", "JUPYTERHUB_"))
    }
    env.update(
        JUPYTER_DATA_DIR=str(places["data"]),
        JUPYTER_CONFIG_DIR=str(places["config"]),
        JUPYTER_RUNTIME_DIR=str(places["runtime"]),
        OPENAI_BASE_URL=llm.base_url,
        CELLWRIGHT_MODEL="fake-model",
        JPY_SESSION_NAME=NOTEBOOK,
        PYTHONPATH=os.pathsep.join(filter(None, [REPO, os.environ.get("PYTHONPATH")])),
    )
    env.update(extra)
    return env


def magic_kernel(env: dict[str, str], cwd: Path) -> Kernel:
    started = Kernel.start(env, cwd)
    assert started.run("%load_ext agent_core").status == "ok"
    return started


@pytest.fixture(scope="module")
def kernel(llm: FakeLLM, places: dict[str, Path]) -> Iterator[Kernel]:
    started = magic_kernel(magic_env(llm, places), places["work"])
    yield started
    started.stop()


@pytest.fixture
def requests_after(llm: FakeLLM) -> Callable[[], list[dict[str, Any]]]:
    """The model requests made by this test (the fake LLM serves the whole module)."""
    before = len(llm.requests)
    yield lambda: llm.requests[before:]
    assert llm.pending == 0, "scripted replies left over"


def threads_of(data_dir: Path) -> list[Any]:
    async def read() -> tuple[list[Any], dict[str, list[str]]]:
        store = ThreadStore(data_dir / "cellwright" / "threads.sqlite", owner=os_user())  # the kernel's user
        await store.open()
        try:
            records = await store.list()
            events = {
                r.thread_id: [e["type"] for e in await store.events.events_after(r.thread_id, 0)] for r in records
            }
        finally:
            await store.close()
        return records, events

    records, events = asyncio.run(read())
    return [(r, events[r.thread_id]) for r in records]


def tool_messages(request: dict[str, Any]) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


def test_approved_in_the_notebook(
    kernel: Kernel, llm: FakeLLM, requests_after: Callable[[], list[dict[str, Any]]]
) -> None:
    llm.script(
        tool_call("run_cell", {"code": "x = 6 * 7\nprint('x is', x)\nx + 1", "description": "compute x"}),
        tool_call("final_answer", {"answer": "x is **42**", "next_items": [{"title": "Plot", "prompt": "plot x"}]}),
    )
    out = kernel.run("%agent --new compute x", answers=("y",))
    assert out.status == "ok" and not out.errors, out
    assert out.prompts == ["Approve? [y]es / [e]dit / [n]o: "]
    assert re.search(r"run_cell needs approval \(step [\w-]+\): compute x", out.stdout) and "x = 6 * 7" in out.stdout
    assert "x is 42" in out.stdout  # the agent's cell printed into this cell
    assert out.answers == ["x is **42**"] and "%agent plot x" in out.stdout
    told = tool_messages(requests_after()[1])[-1]
    assert "x is 42" in told and "43" in told  # its stdout and its result, as the model was told
    assert kernel.run("print(x)").stdout == "42\n"  # in the user's namespace
    # Nothing of the call is left in the kernel: no worker or database threads, no per-loop LLM client.
    left = kernel.run(
        "import threading, agent_core.llm.sdk_clients as L; print([t.name for t in threading.enumerate()], len(L._clients))"
    )
    assert "cellwright-agent" not in left.stdout and left.stdout.rstrip().endswith("0"), left.stdout


def test_yes_approves_and_threads_continue(
    kernel: Kernel, llm: FakeLLM, places: dict[str, Path], requests_after: Callable[[], list[dict[str, Any]]]
) -> None:
    llm.script(
        tool_call("run_cell", {"code": "y = 'made by the agent'\nprint(y)"}),
        tool_call("final_answer", {"answer": "Made y."}),
    )
    out = kernel.run("%agent --new --yes make y")
    assert out.status == "ok" and out.prompts == [] and "Approved (--yes)." in out.stdout
    assert "made by the agent" in out.stdout and out.answers == ["Made y."]

    ours = [(r, events) for r, events in threads_of(places["data"]) if r.title == "%agent: make y"]
    assert len(ours) == 1
    record, events = ours[0]
    assert record.notebook_path == NOTEBOOK and record.status == "completed"
    for kind in (
        "run_started",
        "approval_required",
        "cell_started",
        "cell_output",
        "cell_finished",
        "tool_result",
        "final",
    ):
        assert kind in events, (kind, events)
    assert events[-1] == "run_finished"

    llm.script(text("It holds a string."))
    out = kernel.run("%agent what is in y?")
    assert out.answers == [] and out.stdout.count("It holds a string.") == 1, out  # streamed as tokens, not repeated
    contents = [m.get("content") or "" for m in requests_after()[-1]["messages"]]
    assert "make y" in contents and "made by the agent" in "".join(contents) and contents[-1] == "what is in y?"

    llm.script(text("Fresh start."))
    kernel.run("%agent --new hello")
    fresh = requests_after()[-1]["messages"]
    # A new thread: only the namespace snapshot (y is in the kernel) and the message.
    assert [m["role"] for m in fresh] == ["system", "user", "user"] and fresh[-1]["content"] == "hello"
    assert fresh[1]["content"].startswith("[Context") and "- y: str" in fresh[1]["content"]
    titles = [r.title for r, _ in threads_of(places["data"]) if r.notebook_path == NOTEBOOK]
    assert titles[:2] == ["%agent: hello", "%agent: make y"]  # newest first; the second call continued


def test_a_long_cell_says_in_its_output_that_the_agent_waits_for_it(
    kernel: Kernel, llm: FakeLLM, places: dict[str, Path], requests_after: Callable[[], list[dict[str, Any]]]
) -> None:
    """Issue 38: a cell of %agent cannot go on in the background (the kernel is busy with the %agent
    cell); past background_after its output says the agent waits for it, and the model is not told that."""
    config = places["config"] / "jupyter_cellwright_config.json"  # read by each %agent call
    config.write_text(json.dumps({"Cellwright": {"background_after": 0.3}}))
    try:
        code = "import time\nprint('epoch 1', flush=True)\ntime.sleep(1.5)\nprint('epoch 2')"
        llm.script(tool_call("run_cell", {"code": code}), text("Trained."))
        out = kernel.run("%agent --new --yes train the model")
    finally:
        config.unlink()
    assert out.status == "ok" and not out.errors, out
    said = out.stdout.index("[Cellwright] This cell has run for 0.3 s; the agent waits for it")
    assert out.stdout.index("\nepoch 1\n") < said < out.stdout.index("\nepoch 2\n"), out.stdout  # as printed
    told = tool_messages(requests_after()[1])[-1]
    assert "epoch 2" in told and "waits for it" not in told, told


def test_auto_approve_from_the_environment(
    llm: FakeLLM, places: dict[str, Path], requests_after: Callable[[], list[dict[str, Any]]]
) -> None:
    """Set when the kernel starts, as the user's own choice; a cell changing it later does nothing
    (tests/test_red_team_kernel.py)."""
    started = magic_kernel(magic_env(llm, places, CELLWRIGHT_MAGIC_AUTO_APPROVE="1"), places["work"])
    try:
        llm.script(tool_call("run_cell", {"code": "u = 1"}), tool_call("final_answer", {"answer": "Done."}))
        started.run("import os; del os.environ['CELLWRIGHT_MAGIC_AUTO_APPROVE']")
        out = started.run("%agent --new set u")
    finally:
        started.stop()
    assert out.prompts == [] and "Approved (--yes)." in out.stdout and out.answers == ["Done."]


def test_rejection_reason_reaches_the_model(
    kernel: Kernel, llm: FakeLLM, requests_after: Callable[[], list[dict[str, Any]]]
) -> None:
    llm.script(
        tool_call("run_cell", {"code": "import os\nz = os.listdir('/')"}),
        tool_call("final_answer", {"answer": "Understood, I left the file system alone."}),
    )
    out = kernel.run("%agent --new look around", answers=("n", "do not touch the file system"))
    assert out.prompts[1].startswith("Reason") and "✗ run_cell: Rejected: do not touch the file system" in out.stdout
    assert "Reason: do not touch the file system" in tool_messages(requests_after()[1])[-1]
    assert out.answers == ["Understood, I left the file system alone."]  # the run went on
    assert kernel.run("print('z' in globals())").stdout == "False\n"


def test_edited_code_runs(kernel: Kernel, llm: FakeLLM, requests_after: Callable[[], list[dict[str, Any]]]) -> None:
    llm.script(tool_call("run_cell", {"code": "w = 'proposed'"}), tool_call("final_answer", {"answer": "Done."}))
    kernel.run("%agent --new set w", answers=("e", "w = 'edited'", "print(w)", "."))
    assert kernel.run("print(w)").stdout == "edited\n"
    assert "edited" in tool_messages(requests_after()[1])[-1]


def test_no_model_configured(llm: FakeLLM, places: dict[str, Path]) -> None:
    # The environment counts as the kernel started with it (a cell changing it later changes nothing).
    started = magic_kernel(magic_env(llm, places, CELLWRIGHT_MODEL=""), places["work"])
    try:
        out = started.run("%agent hello")
    finally:
        started.stop()
    assert out.status == "ok" and out.errors == []
    assert "No model is configured" in out.stderr and "CELLWRIGHT_MODEL" in out.stderr and "Traceback" not in out.text


def test_unreachable_endpoint(llm: FakeLLM, places: dict[str, Path]) -> None:
    started = magic_kernel(magic_env(llm, places, OPENAI_BASE_URL="http://127.0.0.1:9/v1"), places["work"])
    try:
        out = started.run("%agent --new hello")  # max_retries 0 comes from the Jupyter config file
    finally:
        started.stop()
    assert out.status == "ok" and "Cannot reach the LLM endpoint at http://127.0.0.1:9/v1" in out.stderr


def test_interrupt_stops_and_the_thread_goes_on(
    kernel: Kernel, llm: FakeLLM, requests_after: Callable[[], list[dict[str, Any]]]
) -> None:
    llm.script(tool_call("run_cell", {"code": "import time\nprint('sleep' + 'ing', flush=True)\ntime.sleep(30)"}))
    started = time.monotonic()
    out = kernel.run("%agent --new --yes take a nap", interrupt_when=lambda o: "sleeping\n" in o.stdout)
    assert time.monotonic() - started < 15 and out.stdout.rstrip().endswith("Stopped."), out
    assert out.errors == ["KeyboardInterrupt"] and "Stopped by the user" in out.stdout  # in the agent's cell

    llm.script(tool_call("final_answer", {"answer": "Awake again."}))
    assert kernel.run("%agent --yes carry on").answers == ["Awake again."]
    assert "The user stopped the run" in tool_messages(requests_after()[-1])[-1]

    # Interrupted while the model streams its reply.
    llm.script(text(["Thinking", " very", " slowly", " about", " it"], chunk_delay=1.0))
    out = kernel.run("%agent think", interrupt_when=lambda o: "Thinking" in o.stdout)
    assert out.stdout.rstrip().endswith("Stopped.") and "about" not in out.stdout

    # Interrupted while asking for approval: the call never runs, and the thread stays usable.
    llm.script(tool_call("run_cell", {"code": "never = 1"}))
    out = kernel.run("%agent ask me", interrupt_when=lambda o: bool(o.prompts))
    assert out.stdout.rstrip().endswith("Stopped.")
    llm.script(text("Still here."))
    out = kernel.run("%agent still there?")
    assert "Still here." in out.stdout and "left waiting" not in out.stdout
    assert kernel.run("print('never' in globals())").stdout == "False\n"


def test_the_panel_sees_and_continues_a_magic_thread(
    tmp_path: Path, llm: FakeLLM, servers: list[Any], requests_after: Callable[[], list[dict[str, Any]]]
) -> None:
    """A kernel the server started for a notebook (JPY_SESSION_NAME is then the notebook's absolute path)."""
    server = JupyterProcess(tmp_path, {"OPENAI_BASE_URL": llm.base_url, "CELLWRIGHT_MODEL": "fake-model"}).start()
    servers.append(server)
    kernel_id = server.open_notebook("work.ipynb")
    kernel = Kernel.connect(tmp_path / "runtime" / f"kernel-{kernel_id}.json")
    try:
        kernel.run("%load_ext agent_core")
        llm.script(tool_call("run_cell", {"code": "v = 5"}), tool_call("final_answer", {"answer": "v is set."}))
        assert kernel.run("%agent --yes set v").answers == ["v is set."]
    finally:
        kernel.stop()

    threads = server.get("cellwright/api/threads").json()["threads"]
    assert [(t["title"], t["notebook_path"], t["status"]) for t in threads] == [
        ("%agent: set v", "work.ipynb", "completed")
    ]
    thread_id = threads[0]["thread_id"]
    assert threads_of(tmp_path / "data")[0][0].kernel_id == kernel_id  # the panel's cells would run in that kernel
    detail = server.get(f"cellwright/api/threads/{thread_id}").json()
    assert [m["role"] for m in detail["messages"]][:2] == ["user", "assistant"] and detail["pending_approval"] is None

    llm.script(text("It is 5."))
    seen = server.events(thread_id)[-1]["seq"]
    assert (
        server.request("POST", f"cellwright/api/threads/{thread_id}/runs", {"message": "what is v?"}).status_code == 202
    )
    assert server.events(thread_id, after=seen)[-1]["status"] == "completed"
    contents = [m.get("content") or "" for m in requests_after()[-1]["messages"]]
    assert contents[1] == "set v" and contents[-1] == "what is v?"


# -- where the magic works, without a kernel


def test_notebook_path_relative_to_the_server_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path))
    (tmp_path / "jpserver-1.json").write_text(json.dumps({"root_dir": str(tmp_path / "root"), "pid": 1}))
    assert notebook_path({"JPY_SESSION_NAME": str(tmp_path / "root" / "sub" / "a.ipynb")}) == "sub/a.ipynb"
    assert notebook_path({"JPY_SESSION_NAME": "b.ipynb"}) == "b.ipynb"
    assert notebook_path({}) == "magic"


def test_workspace_root_is_the_servers_that_holds_the_notebook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runtime, outer = tmp_path / "runtime", tmp_path / "home"
    inner, notebooks = outer / "projects", outer / "projects" / "a" / "b"
    for folder in (runtime, notebooks):
        folder.mkdir(parents=True)
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(runtime))
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    servers = {"outer": (outer, os.getpid()), "inner": (inner, os.getpid()), "stale": (tmp_path, dead.pid)}
    for name, (root, pid) in servers.items():
        (runtime / f"jpserver-{name}.json").write_text(json.dumps({"root_dir": str(root), "pid": pid}))
    session = {"JPY_SESSION_NAME": str(notebooks / "n.ipynb")}
    assert (
        workspace_root(session, start_dir="/") == inner.resolve()
    )  # the innermost server whose root holds the notebook
    assert notebook_path(session, root=workspace_root(session)) == "a/b/n.ipynb"
    assert workspace_root({}, start_dir=notebooks) == inner.resolve()  # no session name: the starting folder decides
    assert workspace_root({}, start_dir=runtime) == runtime.resolve()  # only a dead server's root holds it


def test_agent_cells_leave_ipython_history_consistent(llm: FakeLLM, places: dict[str, Path]) -> None:
    """After `%agent --yes` ran an approved cell, the user's next cells log their history as usual:
    no "Session/line number was not unique" (the agent's cells ran inside the `%agent` cell)."""
    for _ in range(3):  # the clash showed in about every second fresh kernel
        started = magic_kernel(magic_env(llm, places), places["work"])
        try:
            llm.script(
                tool_call("run_cell", {"code": "z = 5\nprint(z)"}), tool_call("final_answer", {"answer": "Made z."})
            )
            out = started.run("%agent --new --yes make z")
            assert out.status == "ok" and "Made z." in out.answers, out
            after = [started.run(f"w{i} = z + {i}\nw{i}") for i in range(5)]
            assert all(cell.status == "ok" for cell in after)
            told = "".join(cell.text for cell in after)
            assert "not unique" not in told and "History logging moved" not in told, told
            history = started.run("print(len(list(get_ipython().history_manager.get_range(output=False))))")
            assert history.status == "ok" and "ERROR" not in history.text, history
        finally:
            started.stop()


def test_agent_offers_mcp_and_notebook_tools(llm: FakeLLM, tmp_path: Path) -> None:
    """`%agent` runs through the same driver as the panel: its runs get the MCP servers' tools and
    the notebook's @tool functions, and call them after approval."""
    places = {name: tmp_path / name for name in ("data", "config", "work", "runtime")}
    for path in places.values():
        path.mkdir()
    fixture = str(Path(__file__).with_name("mcp_server_fixture.py"))
    config = {
        "Cellwright": {
            "max_retries": 0,
            "request_timeout": 10,
            "mcp_servers": {"local": {"command": sys.executable, "args": [fixture]}},
        }
    }
    (places["config"] / "jupyter_server_config.json").write_text(json.dumps(config))
    started = magic_kernel(magic_env(llm, places), places["work"])
    try:
        defined = started.run(
            "from agent_core import tool\n@tool\ndef double(n: int) -> int:\n    'Twice n.'\n    return 2 * n"
        )
        assert defined.status == "ok", defined
        before = len(llm.requests)
        llm.script(
            tool_call("mcp__local__lookup", {"country": "Peru"}),
            tool_call("double", {"n": 21}),
            tool_call("final_answer", {"answer": "Lima, 42"}),
        )
        out = started.run("%agent --new --yes capital of Peru, and twice 21")
        assert out.status == "ok" and out.answers == ["Lima, 42"], out
        requests = llm.requests[before:]
        offered = {tool["function"]["name"] for tool in requests[0].get("tools", [])}
        assert {"mcp__local__lookup", "double"} <= offered, offered
        told = tool_messages(requests[-1])
        assert any("Lima" in m for m in told) and any("42" in m for m in told), told
    finally:
        started.stop()
