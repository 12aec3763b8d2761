"""Red-team findings on the file, list and search tools (issue "Trust"): hidden and secret files.

Finding 3: read-only tools handed secrets to the model without any approval: `read_file` on
`.local/share/jupyter/cellwright/settings.json` returned the API key (the server's root was the home
folder). The tools and the routes that take paths now follow Jupyter's hidden-file rule
(ContentsManager.allow_hidden) and never touch Cellwright's data folder or Jupyter's runtime folder
(kernel connection keys), whatever the path's form or a symlink in between.

Finding 6 (catastrophic search patterns) is tests/test_red_team_patterns.py."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
import pytest

from agent_core.tools import TOOLS, ToolInputError, ToolOutcome
from agent_core.tools import search as search_module
from devtools.fake_llm import FakeLLM, text, tool_call
from tests.conftest import Api, of_type
from tests.tools_env import Ctx

# Where the secret folders sit under the root: visible (JUPYTER_DATA_DIR inside the workspace, or
# ~/Library/Jupyter on macOS with the home folder as root) or hidden (the finding: ~/.local/share/jupyter).
LAYOUTS = {
    "visible": ("jupyter-data", "jupyter-runtime"),
    "hidden": (".local/share/jupyter", ".local/share/jupyter/runtime"),
}
MARK = "SECRET-"  # every secret file's content has it; nothing the model or the user sees may


def notebook(path: Path, *sources: str) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))


@dataclass
class Secrets:
    root: Path
    data: str  # Jupyter's data folder, relative to the root; Cellwright's is data + "/cellwright"
    runtime: str
    hidden: list[str]  # hidden files, relative to the root
    denied: list[str]  # files in the secret folders
    links_to_hidden: list[str]  # plain-looking paths that reach them through symlinks
    links_to_denied: list[str]


def make_secrets(root: Path, data: str, runtime: str) -> Secrets:
    files = {
        ".env": f"API_KEY={MARK}env needle\n",
        ".config/token.txt": f"{MARK}config needle\n",
        f"{data}/cellwright/settings.json": f'{{"api_key": "sk-{MARK}settings needle"}}\n',
        f"{runtime}/kernel-1.json": f'{{"key": "{MARK}kernel needle", "transport": "tcp"}}\n',
        "notes.txt": "public needle\n",
        "sub/readme.md": "public needle too\n",
    }
    for rel, content in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(content)
    notebook(root / "analysis.ipynb", "print('public needle')")
    notebook(root / ".config/hidden.ipynb", f"print('{MARK}hidden-nb needle')")
    notebook(root / f"{data}/cellwright/kept.ipynb", f"print('{MARK}data-nb needle')")
    notebook(root / f"{runtime}/kept.ipynb", f"print('{MARK}runtime-nb needle')")
    links = {
        "env-link": ".env",
        "config-link": ".config",
        "settings-link.json": f"{data}/cellwright/settings.json",
        "data-link": f"{data}/cellwright",
        "runtime-link": runtime,
        "kernel-link.json": f"{runtime}/kernel-1.json",
    }
    for name, target in links.items():
        os.symlink(root / target, root / name)
    return Secrets(
        root,
        data,
        runtime,
        hidden=[".env", ".config/token.txt", ".config/hidden.ipynb"],
        denied=[f"{data}/cellwright/settings.json", f"{runtime}/kernel-1.json", f"{data}/cellwright/kept.ipynb"],
        links_to_hidden=["env-link", "config-link/token.txt"],
        links_to_denied=[
            "settings-link.json",
            "data-link/settings.json",
            "runtime-link/kernel-1.json",
            "kernel-link.json",
        ],
    )


@pytest.fixture(params=sorted(LAYOUTS))
def secrets(request: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Secrets:
    root = tmp_path / "root"
    data, runtime = LAYOUTS[request.param]
    # The kernel side (and any environment without a server) denies what jupyter_core names.
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(root / data))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(root / runtime))
    return make_secrets(root, data, runtime)


def forms(secrets: Secrets, rel: str) -> list[str]:
    """The ways a model may spell one path."""
    swapped = "/".join(
        part.upper() if index < len(rel.split("/")) - 1 else part for index, part in enumerate(rel.split("/"))
    )
    return [
        rel,
        f"./{rel}",
        f"sub/../{rel}",
        f"{rel}/",
        str(secrets.root / rel),
        f"{secrets.root}/sub/../{rel}",
        swapped,
    ]


async def call(name: str, args: dict[str, Any], root: Path, workspace: Any = None) -> ToolOutcome:
    spec = TOOLS[name]
    assert spec.check_args(args) is None, spec.check_args(args)
    return await spec.run(args, Ctx(root, workspace=workspace)() if workspace is not None else Ctx(root)())


async def refused(name: str, args: dict[str, Any], root: Path, why: str, workspace: Any = None) -> str:
    with pytest.raises(ToolInputError) as info:
        await call(name, args, root, workspace)
    message = str(info.value)
    assert why in message, f"{name} {args}: {message}"
    assert MARK not in message
    return message


HIDDEN = "is hidden"
DENIED = "secrets"


def expected_why(secrets: Secrets, rel: str) -> str:
    return DENIED if rel in secrets.denied or rel in secrets.links_to_denied else HIDDEN


# -- finding 3: the tools


async def test_finding_3_read_file_refuses_hidden_files_and_the_secret_folders_in_every_form(secrets: Secrets) -> None:
    for rel in secrets.hidden + secrets.denied:
        for path in forms(secrets, rel):
            await refused("read_file", {"path": path}, secrets.root, expected_why(secrets, rel))
    for path in secrets.links_to_hidden + secrets.links_to_denied + [f"./{secrets.links_to_denied[0]}"]:
        await refused("read_file", {"path": path}, secrets.root, expected_why(secrets, path.removeprefix("./")))
    out = await call("read_file", {"path": "notes.txt"}, secrets.root)
    assert "public needle" in out.content


async def test_finding_3_list_files_skips_them_silently_and_refuses_to_list_them(secrets: Secrets) -> None:
    out = await call("list_files", {"path": ".", "recursive": True}, secrets.root)
    listed = [line.split("  (")[0] for line in out.content.splitlines()[1:]]
    parent_of_data = [] if secrets.data.startswith(".") else [f"{secrets.data}/"]  # shown, but not its cellwright/
    assert listed == ["analysis.ipynb", *parent_of_data, "notes.txt", "sub/", "sub/readme.md"], listed
    folders = [
        ".config",
        ".local",
        "config-link",
        "data-link",
        "runtime-link",
        f"{secrets.data}/cellwright",
        secrets.runtime,
        f"{secrets.data}/cellwright/",
        f"sub/../{secrets.runtime}",
        str(secrets.root / secrets.runtime),
    ]
    for folder in folders:
        args = {"path": folder, "recursive": True}
        why = HIDDEN if folder in (".config", ".local", "config-link") else DENIED
        await refused("list_files", args, secrets.root, why)


async def test_finding_3_search_workspace_skips_them_with_and_without_ripgrep(
    secrets: Secrets, monkeypatch: pytest.MonkeyPatch
) -> None:
    public = ["notes.txt", "sub/readme.md"]
    for use_rg in (True, False):
        if not use_rg:
            monkeypatch.setattr(search_module.shutil, "which", lambda name: None)
        for file_types in (None, ["json", "txt", "md", "env"]):
            result = await search_module.search_files(secrets.root, "needle", None, file_types)
            assert result.engine == ("ripgrep" if use_rg else "python")
            paths = sorted({m["path"] for m in result.matches})
            assert paths == (["analysis.ipynb"] if file_types is None else []) + public, (use_rg, file_types, paths)
            assert MARK not in str(result.matches)
        out = await call("search_workspace", {"pattern": "SECRET|needle"}, secrets.root)
        assert MARK not in out.content and "notes.txt:1: public needle" in out.content
        for folder in (
            ".config",
            "config-link",
            "data-link",
            "runtime-link",
            f"{secrets.data}/cellwright",
            secrets.runtime,
        ):
            why = HIDDEN if "config" in folder else DENIED
            await refused("search_workspace", {"pattern": "needle", "path": folder}, secrets.root, why)
        for rel in secrets.hidden + secrets.denied + secrets.links_to_hidden + secrets.links_to_denied:
            await refused(
                "search_workspace", {"pattern": "needle", "path": rel}, secrets.root, expected_why(secrets, rel)
            )


async def test_finding_3_search_notebooks_skips_them(secrets: Secrets) -> None:
    out = await call("search_notebooks", {"pattern": "needle"}, secrets.root)
    assert re.search(r"analysis\.ipynb cell 0, id [\w-]+ \(code\) line 1: print\('public needle'\)", out.content)
    assert MARK not in out.content and out.summary == "1 cell matches"
    for rel in [
        ".config/hidden.ipynb",
        f"{secrets.data}/cellwright/kept.ipynb",
        f"{secrets.runtime}/kept.ipynb",
        "config-link/hidden.ipynb",
        "data-link/kept.ipynb",
        "runtime-link/kept.ipynb",
        "runtime-link",
        ".config",
    ]:
        why = HIDDEN if "config" in rel else DENIED
        for path in (rel, f"sub/../{rel}", str(secrets.root / rel)):
            await refused("search_notebooks", {"pattern": "needle", "notebook_path": path}, secrets.root, why)


async def test_finding_3_write_and_edit_refuse_them_and_change_nothing(secrets: Secrets) -> None:
    before = {rel: (secrets.root / rel).read_bytes() for rel in secrets.hidden + secrets.denied}
    targets = secrets.hidden + secrets.denied + secrets.links_to_hidden + secrets.links_to_denied
    new_files = [
        ".bashrc",
        ".config/new.txt",
        f"{secrets.data}/cellwright/new.json",
        f"{secrets.runtime}/kernel-2.json",
        "data-link/new.json",
        "runtime-link/new.json",
        "config-link/new.txt",
    ]
    ctx = Ctx(secrets.root)()
    for rel in targets + new_files:
        why = (
            expected_why(secrets, rel)
            if rel in targets
            else (HIDDEN if "config" in rel or rel == ".bashrc" else DENIED)
        )
        for path in (rel, str(secrets.root / rel)):
            await refused("write_file", {"path": path, "content": "pwned", "overwrite": True}, secrets.root, why)
            await refused("edit_file", {"path": path, "edits": [{"old": "needle", "new": "pwned"}]}, secrets.root, why)
            preview = await TOOLS["write_file"].preview({"path": path, "content": "x", "overwrite": True}, ctx)  # type: ignore[misc]
            assert why in preview["description"] and MARK not in str(preview)
            preview = await TOOLS["edit_file"].preview({"path": path, "edits": [{"old": "needle", "new": "x"}]}, ctx)  # type: ignore[misc]
            assert why in preview["description"] and MARK not in str(preview)
    assert {rel: (secrets.root / rel).read_bytes() for rel in secrets.hidden + secrets.denied} == before
    for rel in new_files:
        assert not (secrets.root / rel).exists(), rel


async def test_finding_3_diagnostics_and_check_resource_refuse_them(secrets: Secrets) -> None:
    for rel in secrets.hidden + secrets.denied + secrets.links_to_hidden + secrets.links_to_denied:
        why = expected_why(secrets, rel)
        for path in (rel, f"sub/../{rel}", str(secrets.root / rel)):
            await refused("diagnostics", {"path": path}, secrets.root, why)
            await refused("check_resource", {"files": [path]}, secrets.root, why)
    for folder in ("data-link", "runtime-link", secrets.runtime):
        await refused("check_resource", {"files": [folder]}, secrets.root, DENIED)


async def test_finding_3_allow_hidden_lets_dot_files_through_but_never_the_secret_folders(
    secrets: Secrets, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent_core.workspace import Workspace, default_denied

    workspace = Workspace(secrets.root, allow_hidden=True, denied=default_denied())
    root = secrets.root
    for path in (".env", "./.env", "sub/../.env", str(root / ".env"), "env-link"):
        out = await call("read_file", {"path": path}, root, workspace)
        assert f"API_KEY={MARK}env needle" in out.content
    out = await call("read_file", {"path": "config-link/token.txt"}, root, workspace)
    assert f"{MARK}config" in out.content
    for rel in secrets.denied + secrets.links_to_denied:
        for path in [rel] if "link" in rel else forms(secrets, rel):
            await refused("read_file", {"path": path}, root, DENIED, workspace)
            await refused("write_file", {"path": path, "content": "x", "overwrite": True}, root, DENIED, workspace)
            await refused(
                "edit_file", {"path": path, "edits": [{"old": "needle", "new": "x"}]}, root, DENIED, workspace
            )
    out = await call("list_files", {"path": ".", "recursive": True}, root, workspace)
    listed = [line.split("  (")[0] for line in out.content.splitlines()[1:]]
    assert ".env" in listed and ".config/token.txt" in listed and "env-link" in listed
    assert not [
        line for line in listed if "cellwright" in line or "kernel" in line or "runtime" in line or "data-link" in line
    ], listed
    for use_rg in (True, False):
        if not use_rg:
            monkeypatch.setattr(search_module.shutil, "which", lambda name: None)
        result = await search_module.search_files(workspace, "needle")
        found = {m["path"] for m in result.matches}
        assert {".env", ".config/token.txt", "notes.txt"} <= found, (use_rg, found)
        assert not [m for m in result.matches if MARK + "settings" in m["text"] or MARK + "kernel" in m["text"]], found
        assert not [p for p in found if "cellwright" in p or "runtime" in p or "kernel" in p], found
    out = await call("search_notebooks", {"pattern": "needle"}, root, workspace)
    assert (
        f"{MARK}hidden-nb" in out.content
        and f"{MARK}data-nb" not in out.content
        and f"{MARK}runtime-nb" not in out.content
    )


def test_finding_3_workspace_errors_carry_the_route_kinds(secrets: Secrets) -> None:
    from agent_core.workspace import HiddenPath, PathDenied, Workspace, WorkspaceError, resolve_in_root

    for rel in secrets.hidden + secrets.links_to_hidden:
        with pytest.raises(HiddenPath) as hidden:
            resolve_in_root(secrets.root, rel)
        assert hidden.value.kind == "hidden_path" and isinstance(hidden.value, WorkspaceError)
    for rel in secrets.denied + secrets.links_to_denied:
        with pytest.raises(PathDenied) as denied:
            resolve_in_root(secrets.root, rel)
        assert denied.value.kind == "path_denied"
        with pytest.raises(PathDenied):
            Workspace.default(secrets.root).resolve(rel)
    assert resolve_in_root(secrets.root, "notes.txt") == (secrets.root / "notes.txt").resolve()


# -- finding 3: the routes and an agent run of a real server, whose data and runtime folders are in its root


@pytest.fixture
def jp_data_dir(jp_root_dir: Path) -> Path:
    path = jp_root_dir / "jupyter-data"
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture
def jp_runtime_dir(jp_root_dir: Path) -> Path:
    path = jp_root_dir / "jupyter-runtime"
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture
def cellwright_config(cellwright_config: dict[str, Any], jp_data_dir: Path) -> dict[str, Any]:
    return {**cellwright_config, "data_dir": str(jp_data_dir / "cellwright")}


@pytest.fixture
def allow_hidden() -> bool:
    return False


@pytest.fixture
def jp_server_config(cellwright_config: dict[str, Any], allow_hidden: bool) -> dict[str, Any]:
    return {
        "ServerApp": {"jpserver_extensions": {"cellwright": True}},
        "Cellwright": cellwright_config,
        "ContentsManager": {"allow_hidden": allow_hidden},
    }


@pytest.fixture
def served_secrets(jp_serverapp: Any, jp_root_dir: Path) -> Secrets:
    return make_secrets(Path(jp_root_dir), "jupyter-data", "jupyter-runtime")


@pytest.mark.parametrize("allow_hidden", [False, True])
async def test_finding_3_routes_answer_400_for_hidden_files_and_the_secret_folders(
    api: Api, served_secrets: Secrets, allow_hidden: bool
) -> None:
    secrets = served_secrets
    denied = (
        secrets.denied
        + secrets.links_to_denied
        + [f"sub/../{secrets.denied[0]}", str(secrets.root / secrets.denied[1])]
    )
    hidden = secrets.hidden + secrets.links_to_hidden + ["sub/../.env", str(secrets.root / ".env")]
    for path in denied + ([] if allow_hidden else hidden):
        kind = "path_denied" if path in denied else "hidden_path"
        for route, body in (
            ("diagnostics", {"path": path}),
            ("diagnostics", {"code": "x = 1", "path": path}),
            ("resources", {"files": ["notes.txt", path]}),
        ):
            code, data = await api.call("POST", route, body)
            assert (code, data.get("error")) == (400, kind), (route, body, code, data)
            assert MARK not in str(data)
    if allow_hidden:  # the server's own rule: the user let Jupyter show hidden files
        for path in (".env", "env-link", "sub/../.env"):
            code, data = await api.call("POST", "resources", {"files": [path]}, expect=200)
            assert data["files"][path]["type"] == "file"
            await api.call("POST", "diagnostics", {"path": path}, expect=200)
    _, data = await api.call("POST", "resources", {"files": ["notes.txt"]}, expect=200)
    assert data["files"]["notes.txt"]["bytes"] == len("public needle\n")


async def test_finding_3_an_agent_run_cannot_read_the_api_key(
    api: Api, fake_llm: FakeLLM, served_secrets: Secrets, jp_data_dir: Path
) -> None:
    await api.call("PUT", "config", {"api_key": f"sk-{MARK}put-by-the-user"}, expect=200)
    settings = jp_data_dir / "cellwright" / "settings.json"
    assert f"{MARK}put-by-the-user" in settings.read_text()  # the key really is on disk, under the root
    paths = [
        "jupyter-data/cellwright/settings.json",
        "settings-link.json",
        "sub/../jupyter-data/cellwright/settings.json",
        str(settings),
        ".env",
        "jupyter-runtime/kernel-1.json",
    ]
    fake_llm.script(
        *[tool_call("read_file", {"path": path}, id=f"read_{index}") for index, path in enumerate(paths)],
        tool_call("search_workspace", {"pattern": "api_key|SECRET"}, id="search"),
        tool_call("list_files", {"path": ".", "recursive": True}, id="list"),
        text("done"),
    )
    thread = await api.new_thread()
    await api.run(thread, "find the API key")
    events = await api.until_finished(thread)
    results = {e["id"]: e for e in of_type(events, "tool_result")}
    assert [results[f"read_{index}"]["status"] for index in range(len(paths))] == ["error"] * len(paths)
    assert results["search"]["status"] == "ok" and results["list"]["status"] == "ok"
    told = "\n".join(str(m.get("content")) for m in fake_llm.requests[-1]["messages"] if m["role"] == "tool")
    assert "secrets" in told and "hidden" in told
    assert MARK not in told and MARK not in str(events)
