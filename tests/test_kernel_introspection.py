"""Namespace snapshot and variable summaries in a real kernel: right answers, no trace, no user code run."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from agent_core.kernel_probes.introspection import BUSY_NOTE, format_summary, namespace_snapshot, variable_summaries
from tests.test_tools_routes import COUNT, kernel_env, run_in_kernel

EVERYTHING = "__import__('json').dumps(sorted(globals()))"
SETUP = """
import pandas as pd, numpy as np
sales_df = pd.DataFrame({"month": ["2024-01", "2024-02", None], "revenue": [1.5, None, 3.0]})
weights = np.arange(12.0).reshape(3, 4)
class Trap:
    touched = []
    @property
    def slow(self):
        Trap.touched.append("slow"); import time; time.sleep(30)
    @property
    def broken(self):
        Trap.touched.append("broken"); raise RuntimeError("boom")
    def __repr__(self):
        Trap.touched.append("repr"); import time; time.sleep(30); return "trap"
    def __sizeof__(self):
        Trap.touched.append("sizeof"); return 1
trap = Trap()
things = [1, "two", trap]
def helper(): pass
"""


async def test_summaries_and_snapshot_leave_no_trace(jp_serverapp: Any, notebook_kernel: str) -> None:
    await run_in_kernel(jp_serverapp, SETUP)
    env = kernel_env(jp_serverapp)
    names_before, count_before = await env.evaluate_json(EVERYTHING), await env.evaluate_json(COUNT)
    started = time.monotonic()
    summaries = await variable_summaries(env, ["sales_df", "weights", "trap", "things", "missing", "os.path"])
    snapshot = await namespace_snapshot(env)
    assert time.monotonic() - started < 5, "a property or repr that sleeps was called"
    frame = format_summary("sales_df", summaries["sales_df"])
    assert "shape 3 x 2" in frame and "'revenue': float64, 1 null" in frame and "2024-02" in frame
    assert summaries["weights"]["min"] == 0.0 and summaries["weights"]["max"] == 11.0
    assert "its own __repr__ is not called" in summaries["trap"]["repr"]
    assert summaries["things"]["repr"].startswith("[1, 'two', <")
    assert "no variable named missing" in summaries["missing"]["error"]
    assert summaries["os.path"] == {"error": "not a variable name"}
    listed = {v["name"]: v for v in snapshot.variables}
    assert {"sales_df", "weights", "trap", "things"} <= set(listed)
    assert not {"pd", "np", "Trap", "helper", "In", "Out"} & set(listed)
    assert listed["weights"]["shape"] == [3, 4]
    # Nothing added to the namespace, no execution count used, no user code run.
    assert await env.evaluate_json(EVERYTHING) == names_before and await env.evaluate_json(COUNT) == count_before
    assert await env.evaluate_json("__import__('json').dumps(Trap.touched)") == []


async def test_no_import_of_libraries_the_user_did_not_import(jp_serverapp: Any, notebook_kernel: str) -> None:
    await run_in_kernel(jp_serverapp, "x = [1, 2]")
    env = kernel_env(jp_serverapp)
    await variable_summaries(env, ["x"])
    await namespace_snapshot(env)
    loaded = await env.evaluate_json(
        "__import__('json').dumps([m for m in ('pandas', 'numpy', 'polars') if m in __import__('sys').modules])"
    )
    assert loaded == []


async def test_busy_kernel_gives_no_snapshot_at_once(jp_serverapp: Any, notebook_kernel: str) -> None:
    env = kernel_env(jp_serverapp)
    running = asyncio.create_task(env.run_cell("busy", "import time; time.sleep(4)", lambda event: None))
    try:
        deadline = time.monotonic() + 30  # the cell may start late on a loaded machine: wait for it, then check
        while not await env.kernel_busy():
            assert time.monotonic() < deadline and not running.done(), "the cell never made the kernel busy"
            await asyncio.sleep(0.05)
        started = time.monotonic()
        snapshot = await namespace_snapshot(env)
        assert snapshot.note == BUSY_NOTE and time.monotonic() - started < 0.5
    finally:
        await running


PROBE_MODULES = (
    "__import__('json').dumps(sorted(m for m in __import__('sys').modules if m.startswith('_cellwright_probe_')))"
)


async def test_a_probe_is_compiled_once_and_sees_libraries_imported_later(
    jp_serverapp: Any, notebook_kernel: str
) -> None:
    """The probe stays loaded in the kernel (compiling it took longer than running it), yet a
    library the user imports after the first probe is known to the next."""
    env = kernel_env(jp_serverapp)
    await run_in_kernel(jp_serverapp, "seen_first = 1.5")  # a plain value: the probe learns the plain types
    assert not await env.evaluate_json("__import__('json').dumps('pandas' in __import__('sys').modules)")
    await namespace_snapshot(env)
    await run_in_kernel(
        jp_serverapp,
        "import pandas as pd\nwhen_df = pd.DataFrame({'when': pd.Series([pd.Timestamp('2024-03-01')], dtype=object)})",
    )
    await namespace_snapshot(env)
    assert len(await env.evaluate_json(PROBE_MODULES)) == 1
    summary = (await variable_summaries(env, ["when_df"]))["when_df"]
    assert "2024-03-01" in str(summary.get("head")), summary
