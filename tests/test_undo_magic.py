"""Undo through the `%agent` magic's ToolEnvironment (the kernel's own shell): an approved cell is
snapshotted in the same kernel-side store the server uses."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

from agent_core.config.storage_settings import os_user
from agent_core.storage.thread_store import ThreadStore
from devtools.fake_llm import FakeLLM, tool_call
from tests.test_magic import Kernel, kernel, llm, places  # noqa: F401 (the magic's fixtures)


def test_the_magics_cells_are_snapshotted_in_the_kernel(kernel: Kernel, llm: FakeLLM) -> None:  # noqa: F811
    kernel.run("v = [1, 2]")
    llm.script(
        tool_call("run_cell", {"code": "v.append(3)\nnew = 1"}, id="m1"), tool_call("final_answer", {"answer": "Done."})
    )
    out = kernel.run("%agent --new --yes change v")
    assert out.answers == ["Done."], out
    check = "import sys; s = sys.modules['_cellwright_undo'].steps['m1']; print(s['values'], s['absent'])"
    assert kernel.run(check).stdout == "{'v': [1, 2]} ['new']\n"


def _events(data_dir: Path, title: str) -> list[dict[str, Any]]:
    """The stored events of the magic's thread with this title (the newest one)."""

    async def read() -> list[dict[str, Any]]:
        store = ThreadStore(data_dir / "cellwright" / "threads.sqlite", owner=os_user())  # the kernel's user
        await store.open()
        try:
            record = next(r for r in await store.list() if r.title == title)
            return list(await store.events.events_after(record.thread_id, 0))
        finally:
            await store.close()

    return asyncio.run(read())


def test_a_generator_the_magics_cell_advances_is_not_undoable(
    kernel: Kernel,
    llm: FakeLLM,
    places: dict[str, Path],  # noqa: F811
) -> None:
    kernel.run(
        "def _count():\n    yield from range(10)\ngen = _count()\nimport pandas as pd\ndf = pd.DataFrame({'a': [1]})"
    )
    llm.script(
        tool_call("run_cell", {"code": "df.head()"}, id="g0"),
        tool_call("run_cell", {"code": "gen.send(None)"}, id="g1"),
        tool_call("run_cell", {"code": "next(gen)"}, id="g2"),
        tool_call("final_answer", {"answer": "Advanced."}),
    )
    out = kernel.run("%agent --new --yes advance gen")
    assert out.answers == ["Advanced."], out
    events = _events(places["data"], "%agent: advance gen")
    cards = {e["id"]: e["impact"] for e in events if e["type"] == "approval_required"}
    reason = "`gen` is a generator: its state cannot be saved, so undo cannot restore it"
    assert cards["g0"]["undoable"] is True and cards["g0"]["not_undoable_reason"] is None
    for call_id in ("g1", "g2"):
        assert cards[call_id]["undoable"] is False and reason in cards[call_id]["not_undoable_reason"], cards[call_id]
    # The magic runs in this kernel: its step records say why no snapshot was kept, and none claims the generator.
    check = (
        "import sys; from agent_core.kernel_side.magic import _session\n"
        "print({c: r.refused for (t, c), r in _session.undo.steps.items() if c in ('g0', 'g1', 'g2')})\n"
        "print(sorted(k for k in sys.modules['_cellwright_undo'].steps if k in ('g0', 'g1', 'g2')))"
    )
    refused, held = kernel.run(check).stdout.splitlines()
    assert refused == str({"g0": None, "g1": reason, "g2": reason}) and held == "['g0']"


def test_agent_rewind_takes_back_the_kernel_and_the_conversation(kernel: Kernel, llm: FakeLLM) -> None:  # noqa: F811
    kernel.run("v = [1, 2]")
    # No such step yet (or, alone in the module, no %agent conversation at all): refused, nothing runs.
    assert "go back" in kernel.run("%agent --rewind k1").stderr
    llm.script(
        tool_call("run_cell", {"code": "v.append(3)"}),
        tool_call("run_cell", {"code": "w = len(v)"}),
        tool_call("execute_command", {"command": "echo hi > said.txt"}),  # writes: asked, not sandboxed
        tool_call("final_answer", {"answer": "Done."}),
    )
    done = kernel.run("%agent --new --yes change v")
    assert done.answers == ["Done."]
    # The step ids as the user read them in the cell's output: what --rewind takes.
    first, _, shell = re.findall(r"needs approval \(step ([\w-]+)\)", done.stdout)
    out = kernel.run(f"%agent --rewind {first}")
    assert "Went back over 4 step(s)" in out.stdout and "deleted w" in out.stdout, out  # final_answer is one
    assert f"not reversible: {shell}: a shell command" in out.stdout, out
    assert kernel.run("print(v, 'w' in globals())").stdout == "[1, 2] False\n"
    llm.script(tool_call("final_answer", {"answer": "From there."}))
    assert kernel.run("%agent and now?").answers == ["From there."]
    sent = [c["id"] for m in llm.requests[-1]["messages"] for c in m.get("tool_calls") or []]
    assert sent == [], sent  # the conversation went back to before k1
