"""`jupyter cellwright mcp`: Cellwright's MCP endpoint for clients that only start stdio servers.

It finds the running Jupyter server (the newest in Jupyter's runtime directory, or `--url` with
the token in JUPYTER_TOKEN), and relays: the stdio client's tools/list and tools/call go to
`cellwright/mcp` over Streamable HTTP, with the client's own name (so its thread is named for it),
and the server's progress comes back while the user decides."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from typing import TYPE_CHECKING, Any, cast

import mcp_types as types
from jupyter_server.serverapp import list_running_servers
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared._httpx_utils import create_mcp_http_client

from . import __version__

if TYPE_CHECKING:
    from mcp.shared.dispatcher import ProgressFnT

USAGE = "jupyter cellwright mcp [--url http://127.0.0.1:8888/] (token: JUPYTER_TOKEN, or the running server's)"


def running_server() -> tuple[str, str]:
    """The newest running Jupyter server of this user: its URL and token."""
    servers = sorted(list_running_servers(), key=lambda info: info.get("pid", 0))
    if not servers:
        raise SystemExit(
            "No running Jupyter server found: start JupyterLab first, or pass --url and set JUPYTER_TOKEN."
        )
    info = servers[-1]
    return str(info["url"]), str(info.get("token", ""))


class Relay:
    """One upstream session to the Jupyter server, opened with the stdio client's name on its
    first request, in a task of its own (the SDK's transports must close in the task that opened them)."""

    def __init__(self, endpoint: str, token: str) -> None:
        self.endpoint, self.token = endpoint, token
        self._session: asyncio.Future[ClientSession] | None = None
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def session(self, client: types.Implementation | None) -> ClientSession:
        if self._session is None:
            self._session = asyncio.get_running_loop().create_future()
            self._task = asyncio.create_task(self._hold(client))
        return await asyncio.shield(self._session)

    async def _hold(self, client: types.Implementation | None) -> None:
        assert self._session is not None
        name = client.name if client is not None else "An MCP client"
        info = types.Implementation(name=name, version=client.version if client is not None else __version__)
        try:
            headers = {"Authorization": f"token {self.token}"} if self.token else {}
            async with create_mcp_http_client(headers=headers) as http:
                async with streamable_http_client(self.endpoint, http_client=http) as (read, write):
                    async with ClientSession(read, write, client_info=info) as session:
                        await session.initialize()
                        self._session.set_result(session)
                        await self._stop.wait()
        except Exception as exc:  # the server is gone, or refused the token: every request says so
            if not self._session.done():
                self._session.set_exception(exc)

    async def close(self) -> None:
        self._stop.set()
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)


def bridge_server(relay: Relay) -> Server[Any]:
    def client_of(ctx: Any) -> types.Implementation | None:
        params = ctx.session.client_params
        return params.client_info if params is not None else None

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return await (await relay.session(client_of(ctx))).list_tools(params=params)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        session = await relay.session(client_of(ctx))

        async def progress(value: float, total: float | None, message: str | None) -> None:
            await ctx.session.report_progress(value, total, message)

        forward = cast("ProgressFnT", progress)  # the Protocol's shape; mypy does not match a local async def to it
        result = await session.call_tool(params.name, params.arguments, progress_callback=forward)
        assert isinstance(result, types.CallToolResult)
        return result

    return Server("cellwright", version=__version__, on_list_tools=list_tools, on_call_tool=call_tool)


async def serve(url: str, token: str) -> None:
    relay = Relay(url.rstrip("/") + "/cellwright/mcp", token)
    server = bridge_server(relay)
    try:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
    finally:
        await relay.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="jupyter cellwright", usage=USAGE)
    parser.add_argument("command", choices=["mcp"], help="mcp: serve Cellwright's MCP endpoint over stdio")
    parser.add_argument("--url", help="The Jupyter server's URL (with its base URL), e.g. http://127.0.0.1:8888/")
    args = parser.parse_args(argv)
    if args.url:
        url, token = args.url, os.environ.get("JUPYTER_TOKEN", "")
    else:
        url, token = running_server()
    print(f"Cellwright MCP bridge: relaying to {url}", file=sys.stderr)
    asyncio.run(serve(url, token))


if __name__ == "__main__":
    main()
