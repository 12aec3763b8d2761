"""Long cells (issue 38) through the real routes, a real kernel and the scripted model: a cell that
outlives background_after ends its run as waiting_for_cell, the server follows it (progress from a
tqdm-style bar) and drives the run on by itself when it ends; Stop, continue without waiting, a
message sent meanwhile, and an outside agent's call over MCP."""

from __future__ import annotations

import os
import re
import signal
from collections.abc import Callable
from typing import Any

import pytest

from devtools.fake_llm import FakeLLM, text, tool_call
from devtools.sse import parse_sse
from jupyter_ext.kernel_clients import process_of
from tests.conftest import NOTEBOOK, Api, of_type
from tests.test_mcp_endpoint import connected, text_of

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


async def waiting_run(api: Api, jp_fetch: Any, fake_llm: FakeLLM, code: str, answer: str) -> tuple[str, Events]:
    """A new thread whose run (the scripted model runs `code`, then answers `answer`) waits for its
    cell in the background: the thread and its events up to that run_finished."""
    fake_llm.script(tool_call("run_cell", {"code": code}, id="c1"), text(answer))
    thread = await api.new_thread()
    await api.run(thread, "train it")
    return thread, await until(jp_fetch, thread, run_finished("waiting_for_cell"))


# A training loop with a real tqdm bar (its \r-redrawn text on stderr), 20 steps over about 2 s, then a last line.
TRAIN = (
    "import time\n"
    "from tqdm import tqdm\n"
    "for i in tqdm(range(20), mininterval=0):\n"
    "    time.sleep(0.1)\n"
    "print('trained: loss 0.1')\n"
)


@pytest.fixture
def cellwright_config(cellwright_config: dict[str, Any]) -> dict[str, Any]:
    return {**cellwright_config, "background_after": 0.7, "auto_approve": ["run_cell"]}


async def test_a_long_cell_waits_in_the_background_and_the_run_resumes_when_it_ends(
    api: Api, jp_fetch: Any, fake_llm: FakeLLM, notebook_kernel: str
) -> None:
    thread, first = await waiting_run(api, jp_fetch, fake_llm, TRAIN, "The loss is 0.1.")
    assert not of_type(first, "cell_finished"), "the cell still runs"
    _, detail = await api.call("GET", f"threads/{thread}", expect=200)
    assert detail["status"] == "waiting_for_cell" and detail["pending_approval"] is None
    assert len(fake_llm.requests) == 1
    # A message sent meanwhile is kept and reaches the model with the cell's outcome.
    code, answer = await api.call(
        "POST", f"threads/{thread}/runs", {"message": "and plot the loss", "notebook_path": NOTEBOOK}
    )
    assert code == 202 and answer["queued"] is True, answer

    rest = await api.until_finished(thread, after=first[-1]["seq"])
    requests = len(fake_llm.requests)
    finished = of_type(rest, "cell_finished")
    assert [f["status"] for f in finished] == ["ok"], rest
    types = [e["type"] for e in rest]
    assert types.index("cell_finished") < types.index("run_started"), "the cell ended, then the run went on"
    assert rest[-1]["status"] == "completed" and of_type(rest, "final")[0]["answer"] == "The loss is 0.1."
    assert requests == 2, "no model request while the cell ran"
    tool_message = [m for m in fake_llm.requests[-1]["messages"] if m["role"] == "tool"][-1]
    assert "trained: loss 0.1" in tool_message["content"] and "and plot the loss" in tool_message["content"]
    assert of_type(rest, "run_started")[0]["message"] == "and plot the loss"
    progress = of_type([*first, *rest], "cell_progress")
    percents = [p["percent"] for p in progress if p.get("percent") is not None]
    assert len(percents) >= 2 and percents == sorted(percents) and percents[-1] > percents[0], progress
    assert all("/20 [" in p["text"] for p in progress), "tqdm's bar, with its counts"


# A cell that runs until it is stopped (or its kernel goes), printing a first line at once.
LONG = "import time\nprint('epoch 1 done', flush=True)\nfor _ in range(1200):\n    time.sleep(0.05)\n"


async def test_stop_interrupts_the_background_cell_and_ends_the_run(
    api: Api, jp_fetch: Any, fake_llm: FakeLLM, notebook_kernel: str
) -> None:
    thread, first = await waiting_run(api, jp_fetch, fake_llm, LONG, "never asked")
    await api.call("POST", f"threads/{thread}/cancel", {}, expect=202)
    rest = await api.until_finished(thread, after=first[-1]["seq"])
    assert [f["status"] for f in of_type(rest, "cell_finished")] == ["aborted"], rest
    result = of_type(rest, "tool_result")[0]
    assert result["id"] == "c1" and result["stopped"] is True
    assert rest[-1]["type"] == "run_finished" and rest[-1]["status"] == "cancelled"
    _, detail = await api.call("GET", f"threads/{thread}", expect=200)
    assert detail["status"] == "cancelled"
    assert len(fake_llm.requests) == 1, "a stopped run asks the model nothing more"
    code, _ = await api.call("POST", f"threads/{thread}/continue", {})
    assert code == 409, "nothing waits any more"


async def test_continue_without_waiting_gives_the_model_the_output_so_far(
    api: Api, jp_fetch: Any, fake_llm: FakeLLM, notebook_kernel: str
) -> None:
    thread, first = await waiting_run(api, jp_fetch, fake_llm, LONG, "It is still training.")
    printed = lambda events: any("epoch 1" in str(e["output"]) for e in of_type(events, "cell_output"))  # noqa: E731
    if not printed(first):  # a loaded kernel may print its first line after the run went to the background
        first += await until(jp_fetch, thread, printed, after=first[-1]["seq"])
    code, answer = await api.call("POST", f"threads/{thread}/continue", {})
    assert code == 202 and answer["run_id"]
    rest = await until(jp_fetch, thread, run_finished("completed"), after=first[-1]["seq"])
    assert not of_type(rest, "cell_finished"), "the cell goes on in the kernel"
    tool_message = [m for m in fake_llm.requests[-1]["messages"] if m["role"] == "tool"][-1]
    assert "still running" in tool_message["content"] and "epoch 1 done" in tool_message["content"]
    assert of_type(rest, "final")[0]["answer"] == "It is still training."
    # Stop still reaches the cell the run went on without.
    await api.call("POST", f"threads/{thread}/cancel", {}, expect=202)
    after = await api.events(thread, after=rest[-1]["seq"])
    assert [f["status"] for f in of_type(after, "cell_finished")] == ["aborted"], after


# About 1 MB of \r-redrawn progress a second for 2 s: a hostile (or merely chatty) bar.
FLOOD = (
    "import sys, time\n"
    "for i in range(200):\n"
    "    sys.stdout.write(''.join(f'\\r{\"x\" * 90} {i}/200 [00:01<00:01]' for _ in range(50)))\n"
    "    time.sleep(0.01)\n"
    "print('flood over')\n"
)


async def test_a_flood_of_redraws_stays_bounded_in_store_and_stream(
    api: Api, jp_fetch: Any, fake_llm: FakeLLM, notebook_kernel: str
) -> None:
    fake_llm.script(tool_call("run_cell", {"code": FLOOD}, id="c1"), text("Done."))
    thread = await api.new_thread()
    await api.run(thread, "flood")
    streamed = await until(jp_fetch, thread, run_finished("completed"))
    stored = await api.events(thread)  # the thread is idle: what its log stored
    size = sum(len(str(e)) for e in stored)
    assert size < 60_000, f"{size} bytes stored for ~2 MB of redraws"
    assert sum(len(str(e)) for e in streamed) < 60_000
    progress = of_type(stored, "cell_progress")
    assert 1 <= len(progress) <= 12, len(progress)
    assert all(len(p["text"]) <= 1500 for p in progress)
    outputs = "".join(e["output"].get("text", "") for e in of_type(stored, "cell_output"))
    assert "flood over" in outputs and outputs.count("\r") == 0


async def test_an_outside_agent_is_told_still_running_then_gets_the_outcome(
    api: Api, jp_serverapp: Any, jp_http_port: int, jp_base_url: str, fake_llm: FakeLLM, notebook_kernel: str
) -> None:
    # (api: its jp_fetch is what makes the test server listen)
    url = f"http://localhost:{jp_http_port}{jp_base_url}cellwright/mcp"
    async with connected(url, str(jp_serverapp.identity_provider.token)) as session:
        first = await session.call_tool("run_cell", {"code": TRAIN, "notebook_path": NOTEBOOK})
        said = text_of(first)
        assert not first.is_error and "Still running in the background" in said, said
        found = re.search(r"tool_call_id (\S+)\)", said)
        assert found, said
        outcome = await session.call_tool("wait_for_decision", {"tool_call_id": found[1]})
        assert not outcome.is_error and "trained: loss 0.1" in text_of(outcome), text_of(outcome)
    assert not fake_llm.requests, "an outside agent's call asks Cellwright's model nothing"


async def test_a_kernel_killed_while_the_cell_runs_in_the_background_resumes_the_run_saying_so(
    api: Api, jp_fetch: Any, jp_serverapp: Any, fake_llm: FakeLLM, notebook_kernel: str
) -> None:
    thread, first = await waiting_run(api, jp_fetch, fake_llm, LONG, "The kernel died; I will run it again.")
    process = process_of(jp_serverapp.kernel_manager.get_kernel(notebook_kernel))
    os.kill(process.pid, signal.SIGKILL)
    rest = await api.until_finished(thread, after=first[-1]["seq"])
    assert rest[-1]["status"] == "completed", rest
    assert [f["status"] for f in of_type(rest, "cell_finished")] == ["error"]
    tool_message = [m for m in fake_llm.requests[-1]["messages"] if m["role"] == "tool"][-1]
    assert "kernel died while running this cell" in tool_message["content"], tool_message
    assert len(fake_llm.requests) == 2


async def test_a_run_may_ask_for_its_own_background_after_within_bounds(
    api: Api, fake_llm: FakeLLM, notebook_kernel: str
) -> None:
    thread = await api.new_thread()
    for bad in ("5", -1, 100_000, True):  # a string, below 0, beyond a day, not a number
        body = {"message": "train it", "notebook_path": NOTEBOOK, "background_after": bad}
        code, answer = await api.call("POST", f"threads/{thread}/runs", body)
        assert code == 400 and "background_after" in answer["message"], (bad, answer)
    assert not fake_llm.requests, "a refused run asks nothing"
    # 0: never to the background, though the server's threshold (0.7 s) is shorter than the cell.
    fake_llm.script(tool_call("run_cell", {"code": TRAIN}, id="c1"), text("Trained in one go."))
    await api.run(thread, "train it", background_after=0)
    events = await api.until_finished(thread)
    assert [e["status"] for e in of_type(events, "run_finished")] == ["completed"], events
    assert [f["status"] for f in of_type(events, "cell_finished")] == ["ok"]
