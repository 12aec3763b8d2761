"""Reading a model's streamed reply: the server-sent events of its body's bytes, bounded in size,
with `request_timeout` kept between reads. The openai SDK sends the request; agent_core/llm/client.py
turns these events into tokens and tool calls."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

MAX_EVENT_BYTES = 16 * 1024 * 1024  # one server-sent event (a chunk of a reply is a few hundred bytes)


class IdleDeadline:
    """`request_timeout` between reads (and before the answer's headers), kept by one timer per
    stream that re-arms itself from the last read when it fires: aiohttp's own read time-out
    starts a new timer on every read, a tenth of a busy server's time. Python 3.10 has no
    asyncio.timeout: there the SDK's read time-out stays."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.expired = False
        self._last = 0.0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._scope: Any = None
        self._timer: asyncio.TimerHandle | None = None

    def sdk_timeout(self, connect_timeout: float) -> dict[str, Any]:  # keyword arguments of the SDK's create()
        """The per-request time-out for the SDK: no read time-out when this one keeps it."""
        if not hasattr(asyncio, "timeout"):
            return {}
        # openai loads on first use: the server starts without it (bench/server_start.py)
        import openai

        return {"timeout": openai.Timeout(None, connect=connect_timeout)}

    def touch(self) -> None:
        if self._loop is not None:
            self._last = self._loop.time()

    @asynccontextmanager
    async def scope(self) -> AsyncIterator[None]:
        if not hasattr(asyncio, "timeout"):
            yield
            return
        self._loop = asyncio.get_running_loop()
        self._last = self._loop.time()
        async with asyncio.timeout(None) as self._scope:
            self._timer = self._loop.call_at(self._last + self.seconds, self._check)
            try:
                yield
            finally:
                self._timer.cancel()
                self._loop = None

    def _check(self) -> None:
        assert self._loop is not None
        due = self._last + self.seconds
        if self._loop.time() >= due:
            self.expired = True
            self._scope.reschedule(self._loop.time())  # the scope cancels the read and raises TimeoutError
        else:
            self._timer = self._loop.call_at(due, self._check)


class OversizedEvent(ValueError):
    """An endpoint sent an event (or a line) beyond MAX_EVENT_BYTES: it is not read into memory."""


async def sse_data(chunks: Any, on_read: Callable[[], None] = lambda: None) -> Any:
    """The `data` of each server-sent event in the body's bytes (a multi-line data field joined by
    newlines; lines end at CR, LF or CRLF, as SSE allows). One generator for lines and events,
    split here rather than by the SDK's decoders: each layer costs once per read, for every token
    of every thread. An event beyond MAX_EVENT_BYTES raises OversizedEvent: a broken or hostile
    endpoint streaming one endless line would otherwise grow the server's memory until it stops."""
    pending = b""
    parts: list[bytes] = []
    size = 0
    async for chunk in chunks:
        on_read()
        pending += chunk
        lines = pending.splitlines(keepends=True)
        # A last line without its end, or ending in CR whose LF may be in the next read, waits.
        pending = lines.pop() if lines and not lines[-1].endswith(b"\n") else b""
        for line in lines:
            line = line.rstrip(b"\r\n")
            if line.startswith(b"data:"):
                parts.append(line[6:] if line.startswith(b"data: ") else line[5:])
                size += len(parts[-1])
            elif not line and parts:
                yield b"\n".join(parts).decode("utf-8", "replace")
                parts, size = [], 0
        if size + len(pending) > MAX_EVENT_BYTES:
            raise OversizedEvent(
                f"The endpoint sent an event longer than {MAX_EVENT_BYTES // (1024 * 1024)} MiB; it was not read."
            )
    line = pending.rstrip(b"\r\n")
    if line.startswith(b"data:"):
        parts.append(line[6:] if line.startswith(b"data: ") else line[5:])
    if parts:
        yield b"\n".join(parts).decode("utf-8", "replace")


async def drain(events: Any) -> None:
    """Read the body's end after [DONE], so the connection goes back to the pool (a half-read
    HTTP/1.1 response is closed, and the next call would connect again); bounded like the SDK's."""

    async def rest() -> None:
        async for _ in events:
            pass

    try:
        await asyncio.wait_for(rest(), 0.1)
    except Exception:  # the answer is complete: a failure after it is not the answer's
        pass
