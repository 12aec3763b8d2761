"""File tools and path confinement, called as the graph calls them (arguments checked, then run)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import nbformat
import pytest

from agent_core.tools import TOOLS, ToolInputError, ToolOutcome
from agent_core.tools import files as files_module
from agent_core.tools import search as search_module
from agent_core.workspace import PathOutsideRoot, resolve_in_root
from tests.tools_env import Ctx


async def call(name: str, args: dict[str, Any], root: Path) -> ToolOutcome:
    # run checks the arguments against the tool's model first: a bad one is a ToolInputError
    return await TOOLS[name].run(args, Ctx(root)())


async def fails(name: str, args: dict[str, Any], root: Path, *needles: str) -> str:
    with pytest.raises(ToolInputError) as info:
        await call(name, args, root)
    message = str(info.value)
    for needle in needles:
        assert needle in message, message
    return message


@pytest.fixture
def root(tmp_path: Path) -> Path:
    base = tmp_path / "root"
    (base / "src").mkdir(parents=True)
    (base / "src" / "app.py").write_text("import os\n\ndef main():\n    return 1\n")
    (base / "notes.txt").write_text("alpha\nbeta\ngamma\n")
    (tmp_path / "secret.txt").write_text("top secret\n")
    return base


def test_confinement_resolves_before_checking(root: Path, tmp_path: Path) -> None:
    os.symlink(tmp_path / "secret.txt", root / "escape.txt")
    os.symlink(root / "notes.txt", root / "inside.txt")
    for bad in ["../secret.txt", "src/../../secret.txt", str(tmp_path / "secret.txt"), "escape.txt", "/etc/passwd"]:
        with pytest.raises(PathOutsideRoot) as info:
            resolve_in_root(root, bad)
        assert info.value.kind == "path_outside_root"
    assert resolve_in_root(root, "inside.txt") == (root / "notes.txt").resolve()
    assert resolve_in_root(root, str(root / "src")) == (root / "src").resolve()
    assert resolve_in_root(root, "new/folder/file.py") == (root / "new/folder/file.py").resolve()


async def test_every_file_tool_refuses_paths_outside_the_root(root: Path) -> None:
    outside = "../secret.txt"
    for name, args in [
        ("read_file", {"path": outside}),
        ("list_files", {"path": ".."}),
        ("write_file", {"path": outside, "content": "x", "overwrite": True}),
        ("edit_file", {"path": outside, "edits": [{"old": "top", "new": "no"}]}),
        ("search_workspace", {"pattern": "secret", "path": ".."}),
        ("search_notebooks", {"pattern": "secret", "notebook_path": ".."}),
        ("check_resource", {"files": [outside]}),
        ("diagnostics", {"path": outside}),
        ("execute_command", {"command": "ls", "cwd": ".."}),
    ]:
        await fails(name, args, root, "outside the workspace root")
    assert (root.parent / "secret.txt").read_text() == "top secret\n"


async def test_read_file_numbers_lines_and_reads_ranges(root: Path) -> None:
    out = await call("read_file", {"path": "notes.txt"}, root)
    assert out.content.splitlines() == ["notes.txt (lines 1-3 of 3)", "     1\talpha", "     2\tbeta", "     3\tgamma"]
    out = await call("read_file", {"path": "notes.txt", "start_line": 2, "end_line": 2}, root)
    assert "(lines 2-2 of 3)" in out.content and "\tbeta" in out.content and "alpha" not in out.content
    await fails("read_file", {"path": "notes.txt", "start_line": 9}, root, "has only 3 lines")
    await fails("read_file", {"path": "notes.txt", "start_line": 3, "end_line": 1}, root, "before start_line")
    await fails("read_file", {"path": "missing.txt"}, root, "no file 'missing.txt'", "list_files")
    await fails("read_file", {"path": "src"}, root, "is a directory")


async def test_read_file_refuses_binary_and_flags_non_utf8(root: Path) -> None:
    (root / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(100))
    await fails("read_file", {"path": "image.png"}, root, "binary file", "read_file reads text only")
    (root / "latin.txt").write_bytes("caf\xe9 cr\xe8me\n".encode("latin-1"))
    out = await call("read_file", {"path": "latin.txt"}, root)
    assert "not valid UTF-8" in out.content and "caf\ufffd" in out.content


async def test_read_file_bounds_big_files(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    big = root / "big.log"
    big.write_text("".join(f"line {i}\n" for i in range(1, 5001)))
    out = await call("read_file", {"path": "big.log"}, root)
    assert "(lines 1-2000 of 5000)" in out.content and "start_line=2001" in out.content
    monkeypatch.setattr(files_module, "MAX_READ_BYTES", 1000)  # as if the file were huge
    await fails("read_file", {"path": "big.log"}, root, "too big to read whole", "start_line")
    out = await call("read_file", {"path": "big.log", "start_line": 4000, "end_line": 4002}, root)
    assert [line.split("\t")[1] for line in out.content.splitlines()[1:]] == ["line 4000", "line 4001", "line 4002"]
    (root / "wide.txt").write_text("x" * 50_000 + "\n")
    monkeypatch.undo()
    out = await call("read_file", {"path": "wide.txt"}, root)
    assert "more characters on this line" in out.content and len(out.content) < 5000


async def test_list_files_skips_noise_and_caps(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for noise in (".git", "node_modules", ".ipynb_checkpoints", "src/__pycache__"):
        (root / noise).mkdir(parents=True)
        (root / noise / "junk").write_text("x")
    out = await call("list_files", {}, root)
    assert out.content.splitlines()[1:] == ["notes.txt  (17 B)", "src/"]
    out = await call("list_files", {"path": ".", "recursive": True}, root)
    assert out.content.splitlines()[1:] == ["notes.txt  (17 B)", "src/", "src/app.py  (36 B)"]
    for i in range(12):
        (root / "src" / f"m{i:02}.py").write_text("")
    monkeypatch.setattr(files_module, "MAX_LIST_ENTRIES", 5)
    out = await call("list_files", {"path": "src"}, root)
    assert out.content.splitlines()[1:] == [
        "src/app.py  (36 B)",
        "src/m00.py  (0 B)",
        "src/m01.py  (0 B)",
        "src/m02.py  (0 B)",
        "src/m03.py  (0 B)",
        "... 8 more (list a subfolder, or search with search_workspace)",
    ]
    await fails("list_files", {"path": "notes.txt"}, root, "is a file", "read_file")
    await fails("list_files", {"path": "nope"}, root, "no directory 'nope'")


async def test_write_file_creates_refuses_to_clobber_and_previews_a_diff(root: Path) -> None:
    ctx = Ctx(root)()
    preview = await TOOLS["write_file"].preview({"path": "out/new.py", "content": "x = 1\n"}, ctx)  # type: ignore[misc]
    assert preview["diff"].startswith("--- /dev/null\n+++ b/out/new.py") and "+x = 1" in preview["diff"]
    out = await call("write_file", {"path": "out/new.py", "content": "x = 1\n"}, root)
    assert out.content == "Created out/new.py (1 lines, 6 B)." and (root / "out/new.py").read_text() == "x = 1\n"
    await fails("write_file", {"path": "out/new.py", "content": "y"}, root, "already exists", "overwrite=true")
    preview = await TOOLS["write_file"].preview(
        {"path": "notes.txt", "content": "alpha\nBETA\n", "overwrite": True}, ctx
    )  # type: ignore[misc]
    assert preview["diff"].endswith("@@ -1,3 +1,2 @@\n alpha\n-beta\n-gamma\n+BETA\n")
    bad = await TOOLS["write_file"].preview({"path": "notes.txt", "content": "x"}, ctx)  # type: ignore[misc]
    assert "write_file will fail" in bad["description"]
    await call("write_file", {"path": "notes.txt", "content": "alpha\nBETA\n", "overwrite": True}, root)
    assert (root / "notes.txt").read_text() == "alpha\nBETA\n"
    await fails("write_file", {"path": "src", "content": "x", "overwrite": True}, root, "is a directory")
    await fails("write_file", {"path": "notes.txt/inner.py", "content": "x"}, root, "is a file")
    assert not [p for p in root.rglob("*.tmp")]


async def test_edit_file_applies_all_or_nothing(root: Path) -> None:
    app = root / "src" / "app.py"
    before = app.read_text()
    edits = [
        {"old": "import os\n", "new": "import os\nimport sys\n"},
        {"old": "return 1", "new": "return len(sys.argv)"},
    ]
    preview = await TOOLS["edit_file"].preview({"path": "src/app.py", "edits": edits}, Ctx(root)())  # type: ignore[misc]
    assert (
        "+import sys" in preview["diff"]
        and "-    return 1" in preview["diff"]
        and preview["diff"].startswith("--- a/src/app.py")
    )
    assert app.read_text() == before  # a preview writes nothing
    out = await call("edit_file", {"path": "src/app.py", "edits": edits}, root)
    assert "2 replacements applied" in out.content and "+import sys" in out.content
    assert app.read_text() == "import os\nimport sys\n\ndef main():\n    return len(sys.argv)\n"
    after_first = app.read_text()
    missing = [{"old": "import sys", "new": "import json"}, {"old": "return len(sys.args)", "new": "return 3"}]
    message = await fails(
        "edit_file", {"path": "src/app.py", "edits": missing}, root, "edit 2", "not found", "nothing was written"
    )
    assert "closest line is 5" in message
    ambiguous = [{"old": "import", "new": "from x import"}]
    await fails(
        "edit_file",
        {"path": "src/app.py", "edits": ambiguous},
        root,
        "appears 2 times",
        "lines 1, 2",
        "nothing was written",
    )
    assert app.read_text() == after_first
    await fails("edit_file", {"path": "src/app.py", "edits": [{"old": "", "new": "x"}]}, root, "'old' is empty")
    await fails(
        "edit_file", {"path": "src/app.py", "edits": [{"old": "os", "new": "os", "extra": 1}]}, root, "unknown keys"
    )
    await fails("edit_file", {"path": "src/app.py", "edits": []}, root, "non-empty list")
    await fails("edit_file", {"path": "missing.py", "edits": [{"old": "a", "new": "b"}]}, root, "no file")
    preview = await TOOLS["edit_file"].preview({"path": "src/app.py", "edits": missing}, Ctx(root)())  # type: ignore[misc]
    assert "edit_file will fail" in preview["description"]


async def test_edit_file_keeps_crlf_and_refuses_non_utf8(root: Path) -> None:
    (root / "win.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    await call("edit_file", {"path": "win.txt", "edits": [{"old": "two\nthree", "new": "2\n3"}]}, root)
    assert (root / "win.txt").read_bytes() == b"one\r\n2\r\n3\r\n"
    (root / "latin.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    await fails("edit_file", {"path": "latin.txt", "edits": [{"old": "caf", "new": "tea"}]}, root, "not valid UTF-8")


@pytest.fixture
def search_root(root: Path) -> Path:
    (root / "data").mkdir()
    (root / "data" / "sales.csv").write_text("region,amount\nnorth,10\nsouth,20\n")
    (root / "src" / "model.py").write_text("def train(df):\n    return df['amount'].sum()\n")
    (root / "node_modules" / "pkg").mkdir(parents=True)
    (root / "node_modules" / "pkg" / "x.py").write_text("amount = 1\n")
    (root / ".hidden.py").write_text("amount = 2\n")
    (root / "blob.bin").write_bytes(b"amount\x00\x01")
    return root


async def test_search_workspace_same_results_with_and_without_ripgrep(
    search_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = [
        {"path": "data/sales.csv", "line": 1, "text": "region,amount"},
        {"path": "src/model.py", "line": 2, "text": "return df['amount'].sum()"},
    ]
    only_py = [expected[1]]
    with_rg = await search_module.search_files(search_root, "amount")
    assert with_rg.engine == "ripgrep" and with_rg.matches == expected
    typed = await search_module.search_files(search_root, "AMOUNT|amount", None, ["py"])
    assert typed.matches == only_py
    monkeypatch.setattr(search_module.shutil, "which", lambda name: None)
    fallback = await search_module.search_files(search_root, "amount")
    assert fallback.engine == "python" and fallback.matches == expected
    assert (await search_module.search_files(search_root, "amount", "src", [".py"])).matches == only_py
    out = await call("search_workspace", {"pattern": "amount", "file_types": ["csv"]}, search_root)
    assert out.content == "data/sales.csv:1: region,amount"


async def test_search_workspace_bad_patterns_and_caps(search_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    await fails("search_workspace", {"pattern": "amount("}, search_root, "not a valid regular expression")
    await fails("search_workspace", {"pattern": "x", "file_types": ["p y"]}, search_root, "not an extension")
    await fails("search_workspace", {"pattern": "x", "path": "nowhere"}, search_root, "no 'nowhere'")
    lookaround = await search_module.search_files(search_root, r"amount(?='\])")  # ripgrep cannot, Python can
    assert lookaround.engine == "python" and lookaround.matches[0]["path"] == "src/model.py"
    (search_root / "many.txt").write_text("hit\n" * 500)
    for use_rg in (True, False):
        if not use_rg:
            monkeypatch.setattr(search_module.shutil, "which", lambda name: None)
        result = await search_module.search_files(search_root, "hit", "many.txt")
        assert len(result.matches) == search_module.MAX_SEARCH_RESULTS and result.truncated
    out = await call("search_workspace", {"pattern": "hit"}, search_root)
    assert "... more matches not shown" in out.content
    out = await call("search_workspace", {"pattern": "zzz_nothing"}, search_root)
    assert out.content.startswith("No matches")


async def test_search_notebooks_reads_cells(root: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Sales analysis"),
        nbformat.v4.new_code_cell("import pandas as pd\ndf = pd.read_csv('data/sales.csv')"),
        nbformat.v4.new_code_cell("df.groupby('region').amount.sum()"),
    ]
    nbformat.write(nb, str(root / "analysis.ipynb"))
    (root / "sub").mkdir()
    nbformat.write(nb, str(root / "sub" / "copy.ipynb"))
    (root / "broken.ipynb").write_text("{not json")
    (root / ".ipynb_checkpoints").mkdir()
    nbformat.write(nb, str(root / ".ipynb_checkpoints" / "analysis-checkpoint.ipynb"))
    result = search_module.search_notebook_cells(root, "read_csv|sales")
    assert [(m["notebook"], m["cell_index"], m["cell_type"], m["line"]) for m in result.matches] == [
        ("analysis.ipynb", 0, "markdown", 1),
        ("analysis.ipynb", 1, "code", 2),
        ("sub/copy.ipynb", 0, "markdown", 1),
        ("sub/copy.ipynb", 1, "code", 2),
    ]
    assert result.matches[1]["excerpt"] == "df = pd.read_csv('data/sales.csv')"
    assert "broken.ipynb (unreadable)" in result.note
    out = await call("search_notebooks", {"pattern": "groupby", "notebook_path": "sub/copy.ipynb"}, root)
    # The id is shown, as edit_cell takes it: the one the file holds.
    assert f"sub/copy.ipynb cell 2, id {nb.cells[2].id} (code) line 1: df.groupby('region').amount.sum()" in out.content
    await fails("search_notebooks", {"pattern": "x", "notebook_path": "notes.txt"}, root, "not a notebook")
    await fails(
        "search_notebooks", {"pattern": "(", "notebook_path": "analysis.ipynb"}, root, "not a valid regular expression"
    )
