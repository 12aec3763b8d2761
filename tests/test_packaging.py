"""Packaging, checked without building: install.json, LICENSE and requires-python against pyproject,
the panel's build step without npm (build_panel.py) and scripts/test.sh's heartbeat."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pytest itself needs tomli before 3.11
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
DIST_NAME = PYPROJECT["project"]["name"]


def build_panel() -> ModuleType:
    spec = importlib.util.spec_from_file_location("build_panel", ROOT / "build_panel.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# -- install.json, LICENSE, Python version


def test_install_json_names_the_pip_distribution() -> None:
    install = json.loads((ROOT / "install.json").read_text(encoding="utf-8"))
    assert install == {
        "packageManager": "python",
        "packageName": DIST_NAME,
        "uninstallInstructions": f"Use your Python package manager (pip, conda, etc.) to uninstall the package {DIST_NAME}",
    }
    # It lands next to the panel's package.json, where `jupyter labextension list` reads it.
    shared = PYPROJECT["tool"]["hatch"]["build"]["targets"]["wheel"]["shared-data"]
    panel_name = json.loads((ROOT / "package.json").read_text(encoding="utf-8"))["name"]
    assert shared["install.json"] == f"{shared['jupyter_ext/labextension']}/install.json"
    assert shared["jupyter_ext/labextension"] == f"share/jupyter/labextensions/{panel_name}"


def test_license_file_matches_the_declared_license() -> None:
    project = PYPROJECT["project"]
    assert project["license"] == "BSD-3-Clause"
    assert project["license-files"] == ["LICENSE"]
    assert json.loads((ROOT / "package.json").read_text(encoding="utf-8"))["license"] == "BSD-3-Clause"
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("BSD 3-Clause License\n")
    assert "Copyright (c) 2026, Cellwright contributors" in text
    assert "3. Neither the name of the copyright holder nor the names of its" in text


def test_readme_states_the_python_version_pyproject_requires() -> None:
    required = re.fullmatch(r">=(3\.\d+)", PYPROJECT["project"]["requires-python"])
    assert required, PYPROJECT["project"]["requires-python"]
    stated = set(re.findall(r"Python (3\.\d+)\+", (ROOT / "README.md").read_text(encoding="utf-8")))
    assert stated == {required.group(1)}


# -- the panel's build step


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project with the panel's sources and no built panel."""
    (tmp_path / "labextension_src").mkdir()
    (tmp_path / "labextension_src" / "index.ts").write_text("export {};\n")
    (tmp_path / "package.json").write_text("{}\n")
    return tmp_path


def built(root: Path, age: float) -> None:
    """A built panel whose files are `age` seconds older (negative: newer) than the sources."""
    sources = (root / "labextension_src" / "index.ts").stat().st_mtime
    for name in ("package.json", "static/style.js"):
        path = root / "jupyter_ext" / "labextension" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}\n")
        os.utime(path, (sources - age, sources - age))


def bin_dir(tmp_path: Path, *tools: str) -> str:
    """A PATH holding only `tools` (empty executables)."""
    path = tmp_path / "bin"
    path.mkdir(exist_ok=True)
    for tool in tools:
        (path / tool).write_text("#!/bin/sh\n")
        (path / tool).chmod(0o755)
    return str(path)


def one_line(exc: pytest.ExceptionInfo[SystemExit]) -> str:
    message = exc.value.code
    assert isinstance(message, str) and "\n" not in message
    return message


def test_without_npm_the_build_stops_with_one_line_naming_what_to_install(project: Path, tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exc:
        build_panel().check(project, {"PATH": bin_dir(tmp_path)})
    message = one_line(exc)
    assert "node and npm are not on PATH" in message
    assert "install Node.js 20+ and npm" in message and "wheel" in message

    with pytest.raises(SystemExit) as exc:
        build_panel().check(project, {"PATH": bin_dir(tmp_path, "node")})
    assert ", and npm is not on PATH" in one_line(exc)


def test_with_npm_the_panel_is_built(project: Path, tmp_path: Path) -> None:
    assert build_panel().check(project, {"PATH": bin_dir(tmp_path, "node", "npm")}) is None
    built(project, age=10)  # older than its sources: built again
    assert build_panel().check(project, {"PATH": bin_dir(tmp_path, "node", "npm")}) is None


def test_a_built_panel_newer_than_its_sources_is_used_without_npm(project: Path, tmp_path: Path) -> None:
    built(project, age=-10)
    assert build_panel().panel_state(project) == "current"
    assert build_panel().check(project, {"PATH": bin_dir(tmp_path)}) == "use"
    assert build_panel().check(project, {"PATH": bin_dir(tmp_path, "node", "npm")}) == "use"


def test_a_stale_built_panel_without_npm_needs_npm_or_the_skip_variable(project: Path, tmp_path: Path) -> None:
    built(project, age=10)
    assert build_panel().panel_state(project) == "stale"
    with pytest.raises(SystemExit) as exc:
        build_panel().check(project, {"PATH": bin_dir(tmp_path)})
    assert "CELLWRIGHT_SKIP_PANEL_BUILD=1" in one_line(exc)
    env = {"PATH": bin_dir(tmp_path), "CELLWRIGHT_SKIP_PANEL_BUILD": "1"}
    assert build_panel().check(project, env) == "use"


def test_the_skip_variable_without_a_built_panel_says_so(project: Path, tmp_path: Path) -> None:
    env = {"PATH": bin_dir(tmp_path, "node", "npm"), "CELLWRIGHT_SKIP_PANEL_BUILD": "1"}
    with pytest.raises(SystemExit) as exc:
        build_panel().check(project, env)
    assert "holds no built panel" in one_line(exc)


# -- scripts/test.sh


def test_the_heartbeat_reports_elapsed_time_and_keeps_the_exit_status(tmp_path: Path) -> None:
    script = (ROOT / "scripts" / "test.sh").read_text(encoding="utf-8")
    function = re.search(r"^step\(\) \{\n.*?^\}\n", script, re.M | re.S)
    assert function and "sleep 30" in function.group(0)
    fast = function.group(0).replace("sleep 30", "sleep 0.2")
    test = (
        "STEPS=()\n"
        + fast
        + (
            'step "ok" sleep 1; echo "ok: $?"\n'
            'step "failing" sh -c "sleep 0.5; exit 3" || echo "failing: $?"\n'
            'STEP_ENV=seen step "env" sh -c \'echo "env: $STEP_ENV"\'\n'
            'printf "recorded: %s\\n" "${STEPS[@]}"\n'
            'step "fatal" false\n'
            'echo "not reached"\n'
        )
    )
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", test], capture_output=True, text=True, timeout=30)
    assert done.returncode == 1  # set -e stops at the failing step, as without the heartbeat
    recorded = [line for line in done.stdout.splitlines() if line.startswith("recorded: ")]
    assert [line for line in done.stdout.splitlines() if not line.startswith("recorded: ")] == [
        "ok: 0",
        "failing: 3",
        "env: seen",
    ]
    # Each step's time is kept for the summary the script prints at its end.
    assert [line.split()[1] for line in recorded] == ["ok", "failing", "env"], recorded
    assert re.search(r"^  \.\.\. ok: \d+ s$", done.stderr, re.M)  # a beat while it ran
    assert re.search(r"^  ok: \d+ s$", done.stderr, re.M)  # and the time it took
    # A quick step ends at once: the heartbeat's 30 s nap does not hold it up.
    started = time.monotonic()
    quick = subprocess.run(["bash", "-c", "STEPS=()\n" + function.group(0) + 'step "quick" sleep 0.5'], timeout=60)
    assert quick.returncode == 0 and time.monotonic() - started < 10
