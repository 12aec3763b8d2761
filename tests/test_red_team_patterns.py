"""Red-team finding 6 on the search tools (issue "Trust"): `search_notebooks {"pattern": "(.*){10}Z"}`
held the GIL for 35 s+ and the whole Jupyter server stopped answering. Patterns now match in linear
time (ripgrep) or under a hard time limit, off the event loop, and a pattern that backtracks
catastrophically gets a clear error."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from agent_core.tools import ToolInputError
from agent_core.tools import search as search_module
from devtools.fake_llm import FakeLLM, text, tool_call
from tests.conftest import Api, of_type
from tests.test_red_team_files import call, notebook, refused


def slow_line(length: int = 38) -> str:
    """`(a|aa)+$` tries every split of the a's before it fails at the b: Python's `re` needs ~14 s
    here (and doubles with every two more a's); any backtracking engine is exponential on it."""
    return "a" * length + "b"


CATASTROPHIC = "(a|aa)+$"
LIMIT = 5.0  # the per-match limit (2 s) plus room; `re` needed ~14 s
# The bound is on the work the match does, so it is measured in this process's CPU time (the regex runs
# in its threads): on a loaded machine (CI: two test workers on two cores) wall time stretches 2-3x.
cpu_seconds = time.process_time


async def test_finding_6_a_catastrophic_pattern_on_a_notebook_returns_a_clear_error_in_time(tmp_path: Path) -> None:
    notebook(tmp_path / "slow.ipynb", "x = 1", f"s = '{slow_line()}'")
    started = cpu_seconds()
    with pytest.raises(ToolInputError) as info:
        await call("search_notebooks", {"pattern": CATASTROPHIC}, tmp_path)
    assert cpu_seconds() - started < LIMIT
    message = str(info.value)
    assert (
        "the pattern took too long" in message and "simplify it" in message.lower() and "slow.ipynb cell 1" in message
    )
    # The reported pattern itself no longer hurts (`re` needs ~10 s per line here).
    notebook(tmp_path / "reported.ipynb", "x" * 24, "y" * 24)
    started = time.monotonic()
    out = await call("search_notebooks", {"pattern": "(.*){10}Z", "notebook_path": "reported.ipynb"}, tmp_path)
    assert out.content.startswith("No notebook cell matches") and time.monotonic() - started < 1.0


async def test_finding_6_a_catastrophic_pattern_on_a_text_file_returns_a_clear_error_in_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "slow.txt").write_text(f"header\n{slow_line()}\n")
    # ripgrep is linear: the same pattern is harmless there.
    started = time.monotonic()
    out = await call("search_workspace", {"pattern": CATASTROPHIC}, tmp_path)
    assert out.content.startswith("No matches") and time.monotonic() - started < 1.0
    # Look-ahead is not ripgrep's: Python takes over, under the time limit.
    for pattern, use_rg in (("(a|aa)+(?=c)", True), (CATASTROPHIC, False)):
        if not use_rg:
            monkeypatch.setattr(search_module.shutil, "which", lambda name: None)
        started = cpu_seconds()
        with pytest.raises(ToolInputError) as info:
            await call("search_workspace", {"pattern": pattern}, tmp_path)
        assert cpu_seconds() - started < LIMIT, pattern
        assert "the pattern took too long" in str(info.value) and "slow.txt" in str(info.value)


async def test_finding_6_patterns_that_would_compile_for_minutes_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a.txt").write_text("a" * 100 + "\n")
    notebook(tmp_path / "a.ipynb", "a" * 100)
    for use_rg in (True, False):
        if not use_rg:
            monkeypatch.setattr(search_module.shutil, "which", lambda name: None)
        started = time.monotonic()
        await refused("search_workspace", {"pattern": "(a{60000}){60000}"}, tmp_path, "too large")
        await refused("search_notebooks", {"pattern": "((a{1000}){1000}){1000}"}, tmp_path, "too large")
        await refused("search_workspace", {"pattern": "a" * 5000}, tmp_path, "longer than")
        assert time.monotonic() - started < 1.0
    out = await call("search_workspace", {"pattern": r"a{3}\d{0,2}"}, tmp_path)  # ordinary counts still work
    assert "a.txt:1:" in out.content


async def test_finding_6_a_pattern_slow_on_every_line_stops_at_the_search_deadline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    notebook(tmp_path / "many.ipynb", *[f"s = '{slow_line(27)}'" for _ in range(40)])
    monkeypatch.setattr(search_module, "SEARCH_SECONDS", 1.5)
    started = time.monotonic()
    out = await call("search_notebooks", {"pattern": CATASTROPHIC}, tmp_path)
    assert time.monotonic() - started < 3.5
    assert "the search stopped after" in out.content and "simplify the pattern" in out.content


async def test_finding_6_the_server_answers_api_status_while_a_catastrophic_search_runs(
    api: Api, fake_llm: FakeLLM, jp_fetch: Any, jp_root_dir: Path
) -> None:
    notebook(jp_root_dir / "slow.ipynb", *[f"s = '{slow_line()}'" for _ in range(3)])
    fake_llm.script(tool_call("search_notebooks", {"pattern": CATASTROPHIC}, id="search"), text("done"))
    thread = await api.new_thread()
    started = time.monotonic()
    await api.run(thread, "search the notebooks")
    finished = asyncio.ensure_future(api.until_finished(thread))
    latencies: list[float] = []
    while not finished.done():
        asked = time.monotonic()
        response = await jp_fetch("api", "status")
        latencies.append(time.monotonic() - asked)
        assert response.code == 200
        await asyncio.sleep(0.05)
    events = finished.result()
    took = time.monotonic() - started
    result = of_type(events, "tool_result")[0]
    assert result["status"] == "error" and "took too long" in result["summary"], result
    assert took >= 1.5, "the search should have been running while the status was asked"
    assert len(latencies) >= 10 and max(latencies) < 1.0, (took, latencies)
