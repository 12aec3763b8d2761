"""Cellwright's MCP endpoint for outside agents (cellwright/mcp), measured against our own agent on
the same server, same run:

1. `tools/call read_notebook` through the MCP endpoint (the official SDK's client over Streamable
   HTTP), versus the same tool in our own agent's tools node (a scripted model calls it: from its
   `tool_call` event to its `tool_result` event, as a client of the event stream reads them).
2. An MCP `run_cell` call -> its approval card (`approval_required`) on the panel's event stream.

    python bench/mcp_calls.py [rounds]
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
import mcp_types as types
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from devtools.fake_llm import FakeLLM, tool_call  # noqa: E402
from devtools.jupyter_process import TOKEN, JupyterProcess  # noqa: E402

NOTEBOOK = "b.ipynb"


async def stream_until(http: httpx.AsyncClient, thread: str, after: int, wanted: str) -> tuple[float, int]:
    """Read the thread's event stream after `after` until an event of type `wanted`: when it came, and
    its seq. A stream ends when no run is active: the next run may not have started yet, so read again."""
    seq = after
    for _ in range(10_000):
        async with http.stream("GET", f"cellwright/api/threads/{thread}/events", params={"after": seq}) as response:
            kind = ""
            async for line in response.aiter_lines():
                if line.startswith("event: "):
                    kind = line[7:]
                elif line.startswith("data: "):
                    seq = json.loads(line[6:]).get("seq", seq)
                    if kind == wanted:
                        return time.perf_counter(), seq
        await asyncio.sleep(0.002)
    raise RuntimeError(f"no {wanted} event")


async def last_seq(http: httpx.AsyncClient, thread: str) -> int:
    """The thread's last seq: its stream replays the backlog and ends (no run is active)."""
    seq = 0
    async with http.stream("GET", f"cellwright/api/threads/{thread}/events") as response:
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                seq = json.loads(line[6:]).get("seq", seq)
    return seq


async def agent_tool_node(llm: FakeLLM, http: httpx.AsyncClient, n: int) -> float:
    """Our own agent's read_notebook: from its tool_call event to its tool_result event."""
    llm.script(tool_call("read_notebook", {}, id=f"r{n}"), tool_call("final_answer", {"answer": "ok"}))
    thread = (await http.post("cellwright/api/threads", json={"notebook_path": NOTEBOOK})).json()["thread_id"]
    await http.post(f"cellwright/api/threads/{thread}/runs", json={"message": "read it", "notebook_path": NOTEBOOK})
    called, seq = await stream_until(http, thread, 0, "tool_call")
    answered, seq = await stream_until(http, thread, seq, "tool_result")
    await stream_until(http, thread, seq, "run_finished")  # its last model turn is not the next round's load
    return answered - called


async def mcp_read(session: ClientSession) -> float:
    started = time.perf_counter()
    result = await session.call_tool("read_notebook", {"notebook_path": NOTEBOOK})
    assert not result.is_error, result
    return time.perf_counter() - started


async def mcp_card(session: ClientSession, http: httpx.AsyncClient, thread: str) -> float:
    """An MCP run_cell call until its approval card reaches the panel's stream; then rejected, to end it."""
    after = await last_seq(http, thread)
    started = time.perf_counter()
    call = asyncio.create_task(session.call_tool("run_cell", {"code": "pass", "notebook_path": NOTEBOOK}))
    arrived, _ = await stream_until(http, thread, after, "approval_required")
    detail = (await http.get(f"cellwright/api/threads/{thread}")).json()
    await http.post(
        f"cellwright/api/threads/{thread}/approvals/{detail['pending_approval']['id']}",
        json={"decision": "reject", "reason": "bench"},
    )
    await call
    return arrived - started


async def measure(server_url: str, llm: FakeLLM, rounds: int) -> dict[str, list[float]]:
    headers = {"Authorization": f"token {TOKEN}"}
    figures: dict[str, list[float]] = {"agent": [], "mcp": [], "card": []}
    async with httpx.AsyncClient(base_url=server_url, headers=headers, timeout=120) as http:
        async with create_mcp_http_client(headers=headers) as mcp_http:
            async with streamable_http_client(f"{server_url}/cellwright/mcp", http_client=mcp_http) as (read, write):
                info = types.Implementation(name="Bench", version="1")
                async with ClientSession(read, write, client_info=info) as session:
                    await session.initialize()
                    await mcp_read(session)  # warm: the first call opens the checkpointer
                    await agent_tool_node(llm, http, 0)
                    threads = (await http.get("cellwright/api/threads")).json()["threads"]
                    thread = next(t["thread_id"] for t in threads if t["title"] == "Bench via MCP")
                    for n in range(1, rounds + 1):  # interleaved: both see the same load
                        figures["mcp"].append(await mcp_read(session))
                        figures["agent"].append(await agent_tool_node(llm, http, n))
                        figures["card"].append(await mcp_card(session, http, thread))
    return figures


def main(rounds: int) -> None:
    with FakeLLM() as llm, tempfile.TemporaryDirectory() as tmp:
        env = {"OPENAI_BASE_URL": llm.base_url, "OPENAI_API_KEY": "k", "CELLWRIGHT_MODEL": "fake-model"}
        server = JupyterProcess(Path(tmp), env).start()
        try:
            server.open_notebook(NOTEBOOK)
            figures = asyncio.run(measure(server.url, llm, rounds))
        finally:
            server.stop()
    ms = 1000
    agent, mcp, card = (statistics.median(figures[k]) * ms for k in ("agent", "mcp", "card"))
    print(f"rounds: {rounds}")
    print(f"read_notebook in our agent's tools node (tool_call -> tool_result):  median {agent:7.1f} ms")
    print(f"read_notebook through the MCP endpoint (tools/call round trip):     median {mcp:7.1f} ms")
    print(f"ratio MCP / tools node: {mcp / agent:.1f}x")
    print(f"MCP run_cell -> its approval card on the panel's stream:            median {card:7.1f} ms")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10)
