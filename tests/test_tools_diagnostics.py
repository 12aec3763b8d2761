"""diagnostics without a kernel: cells vs files, IPython syntax, no style nits, pylsp crash and hang.
The kernel-names filter runs against a real kernel in test_tools_routes."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from agent_core.tools import TOOLS, ToolInputError
from agent_core.tools import diagnostics as diag
from tests.tools_env import Ctx

SPEC = TOOLS["diagnostics"]


def brief(result: diag.DiagnosticsResult) -> list[tuple[int, int, str, str]]:
    return [(d["line"], d["column"], d["severity"], d["code"]) for d in result.diagnostics]


async def test_cell_diagnostics_are_one_based_and_free_of_style_nits(tmp_path: Path) -> None:
    code = "import os\nx = [1,2 ,3]   \nvery_long = '" + "a" * 150 + "'\nprint(undefined_y)\npattern = '\\d+'\n"
    result = await diag.lint_code(code, tmp_path)
    assert brief(result) == [(1, 1, "warning", "F401"), (4, 7, "error", "F821"), (5, 12, "warning", "W605")]
    first = result.diagnostics[0]
    assert set(first) == {"line", "column", "severity", "code", "message", "source"}
    assert first["message"] == "'os' imported but unused" and first["source"] == "pyflakes"
    assert (
        result.diagnostics[2]["message"].startswith("invalid escape sequence")
        and result.diagnostics[2]["source"] == "pycodestyle"
    )
    assert "kernel could not be asked" in result.note  # no kernel here: plain diagnostics


async def test_syntax_errors_and_ipython_syntax(tmp_path: Path) -> None:
    assert brief(await diag.lint_code("def f(:\n    pass\n", tmp_path)) == [(1, 7, "error", "E999")]
    cell = "%matplotlib inline\nfiles = !ls\ndf?\n\nprint(files)\nawait something_async()\nprint(later)\n"
    result = await diag.lint_code(cell, tmp_path)
    # Top-level await is fine in IPython (pyflakes does not look inside it there).
    assert [(d["line"], d["message"]) for d in result.diagnostics] == [(7, "undefined name 'later'")]
    assert (await diag.lint_code("%%bash\nls $HOME | wc -l\n", tmp_path)).diagnostics == []
    assert brief(await diag.lint_code("%%time\nimport json\ntotal = sum(rows)\n", tmp_path)) == [
        (2, 1, "warning", "F401"),
        (3, 13, "error", "F821"),
    ]
    display_ok = await diag.lint_code("display(get_ipython())\n", tmp_path)
    assert display_ok.diagnostics == [] and display_ok.note == ""


async def test_the_tool_checks_code_or_a_file(tmp_path: Path) -> None:
    (tmp_path / "mod.py").write_text("import sys\n\ndef f():\n    return undefined_z\n")
    (tmp_path / "nb.ipynb").write_text("{}")
    (tmp_path / "blob.py").write_bytes(b"\x00\x01")
    ctx = Ctx(tmp_path)()
    assert SPEC.read_only and not SPEC.needs_approval
    out = await SPEC.run({"path": "mod.py"}, ctx)
    assert out.content.splitlines() == [
        "2 problems in mod.py (lines and columns from 1):",
        "line 1, column 1: warning F401 'sys' imported but unused (pyflakes)",
        "line 4, column 12: error F821 undefined name 'undefined_z' (pyflakes)",
    ]
    out = await SPEC.run({"code": "x = 1\nprint(x)\n"}, ctx)
    assert out.content == "No problems found in the code."
    for args, needle in [
        ({}, "either `code`"),
        ({"code": "1", "path": "mod.py"}, "either `code`"),
        ({"path": "missing.py"}, "no file"),
        ({"path": "nb.ipynb"}, "is a notebook"),
        ({"path": "blob.py"}, "binary"),
        ({"path": "."}, "is a directory"),
        ({"code": "x = 1\n" * 300_000}, "larger than"),
    ]:
        with pytest.raises(ToolInputError, match=needle):
            await SPEC.run(args, ctx)


async def test_run_cell_card_gets_diagnostics(tmp_path: Path) -> None:
    preview = TOOLS["run_cell"].preview
    assert preview is not None
    card = await preview({"code": "print(not_defined)"}, Ctx(tmp_path)())
    assert [d["code"] for d in card["diagnostics"]] == ["F821"]
    assert await preview({"code": "  "}, Ctx(tmp_path)()) == {"diagnostics": []}


async def test_pylsp_crash_is_reported_then_restarted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    await diag.lint_code("x = 1\n", tmp_path)
    original = diag.LintEngine.lint
    calls: list[int] = []

    def crash_once(self: Any, source: str, path: Path) -> Any:
        calls.append(id(self))
        if len(calls) == 1:
            raise RuntimeError("pylsp blew up")
        return original(self, source, path)

    monkeypatch.setattr(diag.LintEngine, "lint", crash_once)
    with pytest.raises(diag.DiagnosticsUnavailable, match="pylsp blew up.*restarted, try again"):
        await diag.lint_code("x = 1\n", tmp_path)
    result = await diag.lint_code("import os\n", tmp_path)
    assert brief(result) == [(1, 1, "warning", "F401")]
    assert calls[0] != calls[1]  # a new engine


async def test_pylsp_hang_times_out_and_recovers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    original = diag.LintEngine.lint

    def hang_once(self: Any, source: str, path: Path) -> Any:
        if source.startswith("# hang"):
            time.sleep(2)
        return original(self, source, path)

    monkeypatch.setattr(diag.LintEngine, "lint", hang_once)
    started = time.monotonic()
    with pytest.raises(diag.DiagnosticsUnavailable, match="took more than 0.3 s"):
        await diag.LINTER.lint(tmp_path, "# hang\n", tmp_path / "cell.py", timeout=0.3)
    assert time.monotonic() - started < 1.5
    raw = await diag.LINTER.lint(tmp_path, "import os\n", tmp_path / "cell.py")
    assert raw[0]["code"] == "F401"
    assert time.monotonic() - started < 1.8  # the new thread did not wait for the stuck one
