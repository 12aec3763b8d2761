"""check_resource's pure parts: folder sizes (capped), /proc/meminfo, nvidia-smi parsing, and the
in-kernel probe against pandas and a polars stand-in (the real kernel path: test_tools_routes)."""

from __future__ import annotations

import json
import os
import re
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from agent_core.tools import TOOLS, ToolInputError, resources
from tests.tools_env import Ctx


async def test_gpus_from_nvidia_smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert await resources.gpus() == ([], "")  # none on this machine
    fake = tmp_path / "bin" / "nvidia-smi"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho '0, NVIDIA A100-SXM4-40GB, 40960, 1024'\necho '1, Tesla T4, 15360, 0'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    found, problem = await resources.gpus()
    assert problem == "" and found == [
        {"index": 0, "name": "NVIDIA A100-SXM4-40GB", "memory_total": 40960 * 2**20, "memory_used": 1024 * 2**20},
        {"index": 1, "name": "Tesla T4", "memory_total": 15360 * 2**20, "memory_used": 0},
    ]
    fake.write_text("#!/bin/sh\necho 'NVIDIA-SMI has failed' >&2\nexit 9\n")
    data = await resources.check_resources(tmp_path, None)
    assert data["system"]["gpus"] == [] and "NVIDIA-SMI has failed" in data["system"]["gpu_error"]


async def test_sizes_memory_and_the_tool_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(30):
        (tmp_path / "many" / str(i % 3)).mkdir(parents=True, exist_ok=True)
        (tmp_path / "many" / str(i % 3) / f"{i}.txt").write_bytes(bytes(100))
    memory = resources.system_memory()
    assert memory["mem_total"] and memory["mem_total"] % 1024 == 0
    out = await TOOLS["check_resource"].run({"files": ["many", "nope.csv"], "dataframes": ["df"]}, Ctx(tmp_path)())
    lines = out.content.splitlines()
    assert lines[:3] == [
        "Files:",
        "  many: 2.9 KiB (3000 bytes, 30 files)",
        "  nope.csv: error: no such file or directory",
    ]
    assert lines[3:5] == ["DataFrames (in the kernel's memory):", "  df: error: no kernel in this test environment"]
    assert lines[5].startswith("System memory: ") and lines[6] == "GPUs: none"
    monkeypatch.setattr(resources, "MAX_WALK_ENTRIES", 10)
    capped = resources.file_sizes(tmp_path, ["many"])["many"]
    assert capped["partial"] is True and capped["human"].startswith("more than")


def test_probe_measures_pandas_and_polars_without_leaving_names(monkeypatch: pytest.MonkeyPatch) -> None:
    pd = pytest.importorskip("pandas")
    polars = types.ModuleType("polars")

    class DataFrame:
        height, width = 7, 3

        def estimated_size(self) -> int:
            return 4096

    class LazyFrame:
        pass

    polars.DataFrame, polars.LazyFrame = DataFrame, LazyFrame  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "polars", polars)
    namespace = {
        "df": pd.DataFrame({"a": [1, 2, 3]}),
        "pl_df": DataFrame(),
        "lazy": LazyFrame(),
        "s": pd.Series([1.0]),
        "n": 5,
    }
    before = set(namespace)
    answer = json.loads(eval(resources.probe_expression(["df", "pl_df", "lazy", "s", "n", "missing"]), namespace))
    assert answer["df"]["rows"] == 3 and answer["df"]["columns"] == 1 and answer["df"]["deep"] is True
    assert answer["pl_df"] == {"bytes": 4096, "rows": 7, "columns": 3, "library": "polars"}
    assert "LazyFrame" in answer["lazy"]["error"] and "pandas Series, not a DataFrame" in answer["s"]["error"]
    assert answer["n"] == {"error": "n is a builtins.int, not a pandas or polars DataFrame"}
    assert answer["missing"] == {"error": "no variable named 'missing' in the kernel"}
    assert set(namespace) - before <= {"__builtins__"}  # eval's own addition, present in every kernel namespace


async def test_malformed_requests_are_input_errors(tmp_path: Path) -> None:
    """The route and the tool share this check: a caller's mistake is a message, never a crash."""
    for files, dataframes, expected in [
        ("a.csv", None, "files must be a list of strings"),
        (None, 5, 'dataframes must be a list of strings, like ["a"], not a number'),
        ([1], None, "entry 0 is a number"),
        (None, ["df"] * 101, "at most 100 entries"),
        (["x" * 5000], None, "longer than 4096 characters"),
    ]:
        with pytest.raises(ToolInputError, match=re.escape(expected)):
            await resources.check_resources(tmp_path, None, files, dataframes)


def test_probe_reads_plain_names_and_runs_no_user_code() -> None:
    pd = pytest.importorskip("pandas")
    ran: list[str] = []

    class Model:
        @property
        def frame(self) -> Any:
            ran.append("property")
            return pd.DataFrame({"a": [1]})

    class Meta(type):
        def __getattribute__(cls, name: str) -> Any:
            ran.append(f"metaclass {name}")
            return type.__getattribute__(cls, name)

    class Odd(metaclass=Meta):
        pass

    class DataFrame:  # claims to be pandas' through __class__, as isinstance would believe
        shape = (1, 1)

        @property  # type: ignore[misc]
        def __class__(self) -> Any:
            ran.append("__class__")
            return pd.DataFrame

        def memory_usage(self, *args: Any, **kwargs: Any) -> Any:
            ran.append("memory_usage")
            return pd.Series([1])

    class Sized:
        def __sizeof__(self) -> int:
            ran.append("__sizeof__")
            return 1

    namespace: dict[str, Any] = {
        "model": Model(),
        "odd": Odd(),
        "fake": DataFrame(),
        "objects": pd.DataFrame({"o": [Sized(), "s"]}),
        "exec": lambda *args: ran.append("exec"),
        "globals": lambda: ran.append("globals"),  # shadowing builtins
    }
    answer = json.loads(eval(resources.probe_expression(["model", "odd", "fake", "objects"]), namespace))
    assert ran == []
    assert answer["fake"]["error"].endswith("<locals>.DataFrame, not a pandas or polars DataFrame")
    assert answer["model"]["error"].endswith("<locals>.Model, not a pandas or polars DataFrame")
    assert (
        answer["objects"]["rows"] == 2
        and answer["objects"]["deep"] is False
        and "objects not counted" in answer["objects"]["note"]
    )
    for name in ("model.frame", "df[0]", "class", "a b", "", "df'); x('"):
        with pytest.raises(ValueError):
            resources.probe_expression([name])
