"""Long cells (issue 38) through the real routes, a real kernel and the scripted model: a cell that
outlives background_after ends its run as waiting_for_cell, the server follows it (progress from a
tqdm-style bar) and drives the run on by itself when it ends; Stop, continue without waiting and a
message sent meanwhile."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from devtools.fake_llm import FakeLLM, text, tool_call
from devtools.sse import parse_sse
from tests.conftest import Api, of_type

Events = list[dict[str, Any]]


class _Enough(Exception):
    """Raised in the stream's callback to stop reading (tornado then closes the connection)."""


async def until(jp_fetch: Any, thread: str, reached: Callable[[Events], bool], after: int = 0) -> Events:
    """The thread's events after `after`, read from its stream as they come, up to the first point
    where `reached(events)` holds (the stream stays open while the run waits for its cell)."""
    events: Events = []
    buffer = ""

    def chunk(data: bytes) -> None:
        nonlocal buffer
        buffer += data.decode()
        while "\n\n" in buffer:
            block, buffer = buffer.split("\n\n", 1)
            events.extend(e for e in parse_sse(block + "\n\n") if e.get("type") != "caught_up")
        if reached(events):
            raise _Enough

    try:
        await jp_fetch(
            "cellwright",
            "api",
            "threads",
            thread,
            "events",
            params={"after": after},
            streaming_callback=chunk,
            request_timeout=60,
            raise_error=False,
        )
    except Exception:  # the connection our callback closed
        pass
    assert reached(events), f"the stream ended first: {[e['type'] for e in events]}"
    return events


def run_finished(status: str) -> Callable[[Events], bool]:
    return lambda events: any(e["type"] == "run_finished" and e["status"] == status for e in events)


# A bar in tqdm's text format (what tqdm writes to stderr), 20 steps over about 2 s, then a last line.
BAR = (
    "import sys, time\n"
    "for i in range(21):\n"
    "    sys.stderr.write(f'\\r{i * 5:3d}%|{\"#\" * i:<20}| {i}/20 [00:0{i // 10}<00:0{(20 - i) // 10}, 10.0it/s]')\n"
    "    sys.stderr.flush()\n"
    "    time.sleep(0.1)\n"
    "print('trained: loss 0.1')\n"
)


@pytest.fixture
def cellwright_config(cellwright_config: dict[str, Any]) -> dict[str, Any]:
    return {**cellwright_config, "background_after": 0.7, "auto_approve": ["run_cell"]}


async def test_a_long_cell_waits_in_the_background_and_the_run_resumes_when_it_ends(
    api: Api, jp_fetch: Any, fake_llm: FakeLLM, notebook_kernel: str
) -> None:
    fake_llm.script(tool_call("run_cell", {"code": BAR}, id="c1"), text("The loss is 0.1."))
    thread = await api.new_thread()
    await api.run(thread, "train it")
    first = await until(jp_fetch, thread, run_finished("waiting_for_cell"))
    assert not of_type(first, "cell_finished"), "the cell still runs"
    _, detail = await api.call("GET", f"threads/{thread}", expect=200)
    assert detail["status"] == "waiting_for_cell"
    assert len(fake_llm.requests) == 1

    rest = await api.until_finished(thread, after=first[-1]["seq"])
    requests = len(fake_llm.requests)
    finished = of_type(rest, "cell_finished")
    assert [f["status"] for f in finished] == ["ok"], rest
    types = [e["type"] for e in rest]
    assert types.index("cell_finished") < types.index("run_started"), "the cell ended, then the run went on"
    assert rest[-1]["status"] == "completed" and of_type(rest, "final")[0]["answer"] == "The loss is 0.1."
    assert requests == 2, "no model request while the cell ran"
    tool_message = [m for m in fake_llm.requests[-1]["messages"] if m["role"] == "tool"][-1]
    assert "trained: loss 0.1" in tool_message["content"]
    progress = of_type(rest, "cell_progress")
    percents = [p["percent"] for p in progress if p.get("percent") is not None]
    assert len(percents) >= 2 and percents == sorted(percents) and percents[-1] > percents[0], progress
