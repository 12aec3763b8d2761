"""One HTTP request of a tornado handler, served by an ASGI application (the mcp SDK's Streamable
HTTP transport is ASGI; Jupyter's server is tornado). The handler has authenticated the request
before; the ASGI side sees its method, path, headers and body, and its answer is streamed back as
it is sent (SSE included), flushed per chunk."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from tornado.web import RequestHandler

Message = MutableMapping[str, Any]
AsgiApp = Callable[
    [MutableMapping[str, Any], Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]], Awaitable[None]
]


class AsgiRequest:
    """The ASGI scope and channels of one tornado request; `closed()` when the client goes away."""

    def __init__(self, handler: RequestHandler) -> None:
        self.handler = handler
        self._body_sent = False
        self._gone = asyncio.Event()
        self.content_type = ""  # as the application sent it

    def scope(self) -> MutableMapping[str, Any]:
        request = self.handler.request
        host, _, port = (request.host or "localhost").partition(":")
        return {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": request.version.removeprefix("HTTP/"),
            "method": request.method,
            "scheme": request.protocol,
            "path": request.path,
            "raw_path": request.path.encode(),
            "query_string": request.query.encode(),
            "root_path": "",
            "headers": [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in request.headers.get_all()],
            "client": (request.remote_ip or "", 0),
            "server": (host, int(port) if port.isdigit() else 80),
        }

    async def receive(self) -> Message:
        if not self._body_sent:  # tornado has read the whole body (JSON-RPC messages are small)
            self._body_sent = True
            return {"type": "http.request", "body": self.handler.request.body or b"", "more_body": False}
        await self._gone.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: Message) -> None:
        handler = self.handler
        if message["type"] == "http.response.start":
            handler.set_status(message["status"])
            handler.clear_header("Content-Type")
            for name, value in message.get("headers", ()):
                handler.add_header(name.decode("latin-1"), value.decode("latin-1"))
                if name.lower() == b"content-type":
                    self.content_type = value.decode("latin-1")
        elif message["type"] == "http.response.body" and not self._gone.is_set():
            body = message.get("body", b"")
            if body:
                handler.write(body)
            if message.get("more_body"):
                await handler.flush()  # an SSE event reaches the client now, not with the next one

    def closed(self) -> None:
        self._gone.set()


async def serve(handler: RequestHandler, app: AsgiApp, request: AsgiRequest) -> None:
    """Run `app` for the handler's request; the handler finishes once the app has answered."""
    await app(request.scope(), request.receive, request.send)
    if not handler._finished:  # tornado has no public "finished"
        # Jupyter's APIHandler would stamp application/json on an event stream that ended unflushed.
        handler.finish(**({"set_content_type": request.content_type} if request.content_type else {}))
