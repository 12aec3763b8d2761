"""The MCP path of bench/paths.py: tools/call read_notebook through the MCP endpoint vs the same
tool in our own agent's tools node, interleaved (bench/mcp_calls.py's two measures)."""

from __future__ import annotations

import asyncio
import time

import httpx
import mcp_types as types
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from bench.mcp_calls import agent_tool_node, mcp_read
from bench.path_stages import Clock, Stages
from devtools.fake_llm import FakeLLM
from devtools.jupyter_process import TOKEN


async def refused(session: ClientSession) -> float:
    """A call the endpoint answers at once, with no run (a tool it does not offer): the MCP SDK's own
    round trip over Streamable HTTP, the floor any MCP call pays."""
    started = time.perf_counter()
    result = await session.call_tool("no_such_tool", {})
    assert result.is_error, result
    return time.perf_counter() - started


async def _rounds(url: str, llm: FakeLLM, rounds: int, mcp: Stages, node: Stages) -> None:
    headers = {"Authorization": f"token {TOKEN}"}
    async with (
        httpx.AsyncClient(base_url=url, headers=headers, timeout=120) as http,
        create_mcp_http_client(headers=headers) as mcp_http,
        streamable_http_client(f"{url}/cellwright/mcp", http_client=mcp_http) as (read, write),
        ClientSession(read, write, client_info=types.Implementation(name="Bench", version="1")) as session,
    ):
        await session.initialize()
        await mcp_read(session)  # warm
        await agent_tool_node(llm, http, 0)
        for n in range(1, rounds + 1):  # interleaved: both see the same load
            floor = await refused(session)
            clock = Clock()
            clock.mark("answered", clock.start + await mcp_read(session))
            clock.mark("(a refused call's round trip: the SDK's floor)", clock.start + floor)
            mcp.add(clock)
            clock = Clock()
            clock.mark("answered", clock.start + await agent_tool_node(llm, http, n))
            node.add(clock)


def mcp_rounds(url: str, llm: FakeLLM, rounds: int) -> tuple[Stages, Stages]:
    """(the MCP call's rounds, the tools node's)."""
    mcp, node = Stages("MCP tools/call read_notebook"), Stages("our tools node: tool_call -> tool_result")
    asyncio.run(_rounds(url, llm, rounds, mcp, node))
    return mcp, node
