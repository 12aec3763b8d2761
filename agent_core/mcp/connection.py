"""One MCP server's connection: started on first use, held open by a task of its own (the SDK's
transports are context managers that must close in the task that opened them), restarted on the
next use after it died, stopped with the Jupyter server. Start and call are bounded in time; every
failure is a McpUnavailable whose message the model and the panel can read."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from agent_core.config.mcp_servers import ServerConfig
from agent_core.json_types import JsonObject
from agent_core.redaction import redact_text

if sys.version_info < (3, 11):  # a builtin from 3.11; anyio (under the MCP SDK) brings the backport before
    from exceptiongroup import BaseExceptionGroup

log = logging.getLogger(__name__)
MAX_TOOLS = 100  # a server's tools offered at most; more are left out with a note


class StderrTail:
    """A stdio server's stderr, read as it comes and only its last characters kept: for the reason of
    a failed start, without a file that a chatty server would grow for as long as it runs."""

    KEPT = 2000

    def __init__(self) -> None:
        read_fd, write_fd = os.pipe()
        os.set_blocking(read_fd, False)
        self._read_fd = read_fd
        self.writer = os.fdopen(write_fd, "w")  # given to the server process as its stderr
        self.text = ""
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(read_fd, self._read)

    def _read(self) -> None:
        try:
            data = os.read(self._read_fd, 65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self._loop.remove_reader(self._read_fd)
            return
        self.text = (self.text + data.decode("utf-8", "replace"))[-self.KEPT :]

    def close(self) -> None:
        self._loop.remove_reader(self._read_fd)
        self.writer.close()
        os.close(self._read_fd)


class McpUnavailable(Exception):
    """The server cannot be reached or did not answer: a tool error, never a failed run."""


def _reason(exc: BaseException) -> str:
    """The first real error inside the SDK's exception groups, in one line."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip() or type(exc).__name__
    if isinstance(exc, FileNotFoundError):
        text = f"the command was not found ({exc.filename or text})"
    return text[:500]


class ServerConnection:
    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.status = "not_started"  # not_started | starting | connected | failed | stopped
        self.error = ""
        self.tools: list[Any] = []  # the server's mcp_types.Tool list
        self.session: Any = None
        self._task: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._lock = asyncio.Lock()
        self._stderr: Any = None

    @property
    def alive(self) -> bool:
        return self.session is not None and self._task is not None and not self._task.done()

    def public(self) -> JsonObject:
        return {
            "name": self.config.name,
            "status": self.status,
            "error": self.error or None,
            **self.config.public(),
            "tools": [_public_tool(t) for t in self.tools[:MAX_TOOLS]],
        }

    async def ensure(self) -> None:
        """Connected, or McpUnavailable saying why not. Starts (or restarts) the server if needed."""
        async with self._lock:
            if self.alive:
                return
            await self._close()
            await self._start()

    async def _start(self) -> None:
        self.status, self.error = "starting", ""
        ready: asyncio.Future[list[Any]] = asyncio.get_running_loop().create_future()
        self._stop = asyncio.Event()
        self._task = asyncio.create_task(self._hold(ready, self._stop), name=f"mcp-{self.config.name}")
        try:
            self.tools = await asyncio.wait_for(asyncio.shield(ready), self.config.start_timeout)
            self.status = "connected"
        except TimeoutError:
            await self._close()
            self._fail(f"did not start within {self.config.start_timeout:g} s")
        except Exception as exc:
            await asyncio.sleep(0.1)  # the last of its stderr, read by the event loop
            tail = self._stderr_tail()
            await self._close()
            self._fail(_reason(exc) + tail)

    def scrub(self, text: str) -> str:
        """`text` without this server's env and header values (a server may print its token) and
        without credentials in URLs: what the model, the panel and the log may see."""
        for secret in (*self.config.env.values(), *self.config.headers.values()):
            if len(secret) >= 4:
                text = text.replace(secret, "***")
        return redact_text(text)

    def _fail(self, reason: str) -> None:
        reason = self.scrub(reason)
        self.status, self.error, self.tools = "failed", reason, []
        raise McpUnavailable(f"The MCP server {self.config.name!r} is not available: {reason}")

    async def _hold(self, ready: asyncio.Future[list[Any]], stop: asyncio.Event) -> None:
        # the mcp SDK loads on a run's first use of an MCP server: the server starts without it
        # (bench/server_start.py)
        from mcp import ClientSession

        try:
            async with self._transport() as streams:
                async with ClientSession(streams[0], streams[1]) as session:
                    await session.initialize()
                    tools = await _all_tools(session)
                    self.session = session
                    ready.set_result(tools)
                    await stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else McpUnavailable("start cancelled"))
            elif not stop.is_set():
                log.info("MCP server %s stopped: %s", self.config.name, self.scrub(_reason(exc)))
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            self.session = None
            if self.status == "connected" and not stop.is_set():
                self.status, self.error = "failed", "the server stopped; it restarts on the next call"

    @asynccontextmanager
    async def _transport(self) -> AsyncIterator[Any]:
        if self.config.url:
            from mcp.client.streamable_http import streamable_http_client
            from mcp.shared._httpx_utils import create_mcp_http_client

            async with create_mcp_http_client(headers=dict(self.config.headers)) as client:
                async with streamable_http_client(self.config.url, http_client=client) as streams:
                    yield streams
        else:
            from mcp.client.stdio import StdioServerParameters, stdio_client

            # Only what is configured, over the SDK's minimal default (PATH, HOME, USER, SHELL, TERM,
            # LOGNAME): the Jupyter server's own secrets (OPENAI_API_KEY...) stay out of the server.
            params = StdioServerParameters(
                command=self.config.command, args=list(self.config.args), env=dict(self.config.env)
            )
            self._stderr = StderrTail()
            async with stdio_client(params, errlog=self._stderr.writer) as streams:
                yield streams

    def _stderr_tail(self) -> str:
        tail = " ".join(self._stderr.text.split()) if self._stderr is not None else ""
        return f" (its last output: {tail[-300:]})" if tail else ""

    async def call(self, tool: str, args: JsonObject) -> Any:
        """The server's CallToolResult. McpUnavailable when it cannot start, died or timed out."""
        from mcp.shared.exceptions import MCPError

        await self.ensure()
        session = self.session
        try:
            return await asyncio.wait_for(session.call_tool(tool, args), self.config.call_timeout)
        except TimeoutError:
            # Stopped rather than left working (or still streaming a huge answer): the next call starts it again.
            async with self._lock:
                await self._close()
                self.status, self.error = (
                    "failed",
                    f"a call timed out after {self.config.call_timeout:g} s; it restarts on the next call",
                )
            raise McpUnavailable(
                f"The MCP server {self.config.name!r} did not answer {tool!r} within {self.config.call_timeout:g} s; "
                "it was stopped and restarts on the next call"
            ) from None
        except (MCPError, OSError, BaseExceptionGroup) as exc:
            if self.alive and isinstance(exc, MCPError) and "closed" not in str(exc).lower():
                raise McpUnavailable(
                    f"The MCP server {self.config.name!r} answered with an error: {self.scrub(_reason(exc))}"
                ) from None
            reason = self.scrub(_reason(exc))
            async with self._lock:
                await self._close()
                self.status, self.error = "failed", f"the connection broke ({reason}); it restarts on the next call"
            raise McpUnavailable(
                f"The MCP server {self.config.name!r} stopped during the call ({reason}). "
                "It will be restarted on the next call; the call may or may not have had its effect."
            ) from None

    async def _close(self) -> None:
        task, stop = self._task, self._stop
        self._task = None
        if task is not None and stop is not None:
            stop.set()
            try:
                await asyncio.wait_for(asyncio.shield(task), 5)
            except BaseException:
                task.cancel()
                await asyncio.wait([task], timeout=5)
        self.session = None
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    async def stop(self) -> None:
        async with self._lock:
            await self._close()
            self.status = "stopped" if self.status != "failed" else self.status


async def _all_tools(session: Any) -> list[Any]:
    tools: list[Any] = []
    cursor = None
    for _ in range(10):  # pages, bounded
        result = await session.list_tools(params=_page(cursor))
        tools += result.tools
        cursor = getattr(result, "next_cursor", None)
        if not cursor or len(tools) >= MAX_TOOLS:
            break
    return tools[:MAX_TOOLS]


def _page(cursor: str | None) -> Any:
    if cursor is None:
        return None
    from mcp_types import PaginatedRequestParams

    return PaginatedRequestParams(cursor=cursor)


def read_only_hint(tool: object) -> bool | None:
    annotations = getattr(tool, "annotations", None)
    return getattr(annotations, "read_only_hint", None) if annotations is not None else None


def _public_tool(tool: Any) -> JsonObject:
    description = " ".join(str(tool.description or "").split())
    return {"name": str(tool.name)[:200], "description": description[:300], "read_only_hint": read_only_hint(tool)}
