"""Checkpoint storage of a long thread: 200 turns, each running a cell with ~5 KB of output.

Runs the real graph and AsyncSqliteSaver twice, against the scripted fake LLM: once with
Cellwright's delta-channel message state, once with a plain list channel (what LangGraph stores by
default: the whole message list at every step). Prints both SQLite sizes and their ratio.
Target: Cellwright <= 5 MB.

    python bench/checkpoint_size.py [turns]
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent_core.config.agent_settings import AgentSettings  # noqa: E402
from agent_core.loop.graph import build_graph, call_model, call_tools  # noqa: E402
from agent_core.loop.run_context import RunContext  # noqa: E402
from agent_core.loop.state import AgentState, new_run_input  # noqa: E402
from agent_core.storage.checkpoint import open_store  # noqa: E402
from agent_core.tools import CellRun  # noqa: E402
from devtools.fake_llm import FakeLLM, text, tool_call  # noqa: E402

READS = 20
OUTPUT = ("row,value\n" + "".join(f"{i},{i * 0.5}\n" for i in range(600)))[:5000]


class FixedOutputKernel:
    """Stands in for the kernel: storage, not execution, is measured here."""

    root_dir = Path(".")

    async def run_cell(self, call_id: str, code: str, emit: Any) -> CellRun:
        return CellRun("ok", [{"output_type": "stream", "name": "stdout", "text": OUTPUT}], 1)

    async def evaluate_json(self, expression: str) -> Any:
        return None


class PlainListState(AgentState):  # type: ignore[misc]
    messages: Annotated[list[dict[str, Any]], lambda current, write: current + write["append"]]  # type: ignore[misc]


def plain_list_graph(checkpointer: Any) -> Any:
    """The agent's two nodes over a plain list of messages: what LangGraph stores by default."""
    from langgraph.graph import END, START, StateGraph

    graph = StateGraph(PlainListState, context_schema=RunContext)
    graph.add_node("model", call_model, input_schema=PlainListState)
    graph.add_node("tools", call_tools, input_schema=PlainListState)
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", lambda state: END if state.get("done") else "tools", ["tools", END])
    graph.add_conditional_edges("tools", lambda state: END if state.get("done") else "model", ["model", END])
    return graph.compile(checkpointer=checkpointer)


async def measure(make_graph: Callable[[Any], Any], turns: int, llm: FakeLLM, folder: Path) -> tuple[int, float, float]:
    """(the SQLite files' size, the turns' time, the median time of one read of the thread's state at its end)."""
    store = await open_store("", folder / "checkpoints.sqlite")
    graph = make_graph(store.saver)
    settings = AgentSettings(
        model="fake-model",
        base_url=llm.base_url,
        auto_approve=frozenset({"run_cell"}),
        max_retries=0,
        context_token_budget=10**9,
    )
    config = {"configurable": {"thread_id": "bench"}}
    started = time.perf_counter()
    try:
        for turn in range(turns):
            llm.script(tool_call("run_cell", {"code": f"show({turn})"}), text(f"Turn {turn} done."))
            context = RunContext("bench", settings, FixedOutputKernel(), store.ledger, lambda event: None)
            async for _ in graph.astream(new_run_input(f"turn {turn}"), config, context=context, durability="sync"):
                pass
        elapsed = time.perf_counter() - started
        messages = (await graph.aget_state(config)).values["messages"]
        assert len(messages) == 4 * turns, len(messages)
        reads = []
        for _ in range(READS):  # what every run's start and every MCP call pays on this thread
            begun = time.perf_counter()
            await graph.aget_state(config)
            reads.append(time.perf_counter() - begun)
    finally:
        await store.aclose()  # an open aiosqlite connection keeps the process alive
    size = sum(p.stat().st_size for p in folder.glob("checkpoints.sqlite*"))
    return size, elapsed, statistics.median(reads)


async def main(turns: int) -> None:
    with FakeLLM() as llm, tempfile.TemporaryDirectory() as tmp:
        ours_dir, base_dir = Path(tmp, "delta"), Path(tmp, "plain")
        ours_dir.mkdir()
        base_dir.mkdir()
        ours, ours_s, ours_read = await measure(build_graph, turns, llm, ours_dir)
        base, base_s, base_read = await measure(plain_list_graph, turns, llm, base_dir)
    mb = 1024 * 1024
    print(f"turns: {turns}, cell output per turn: {len(OUTPUT)} bytes")
    print(
        f"plain list state (baseline): {base / mb:8.2f} MB  ({base_s:.1f} s)  a read at the end: {base_read * 1000:6.1f} ms"
    )
    print(
        f"cellwright delta state:      {ours / mb:8.2f} MB  ({ours_s:.1f} s)  a read at the end: {ours_read * 1000:6.1f} ms"
    )
    print(f"a read at the end, cellwright / baseline: {ours_read / base_read:5.2f}x")
    print(
        f"ratio baseline / cellwright: {base / ours:8.1f}x   target: cellwright <= 5 MB -> {'OK' if ours <= 5 * mb else 'OVER'}"
    )


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 200))
