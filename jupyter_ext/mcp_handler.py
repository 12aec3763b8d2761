"""cellwright/mcp: the tornado side of the MCP endpoint (jupyter_ext.mcp_endpoint, loaded on the
first request: the mcp SDK is not imported at the server's start)."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import cast

from jupyter_server.auth import User
from jupyter_server.auth.decorator import authorized
from tornado import web

from .asgi_bridge import AsgiRequest, serve
from .errors import NotFound
from .handler_base import CellwrightHandler
from .mcp_tokens import presented

Method = Callable[["McpHandler"], Awaitable[None]]


def _authenticated(method: Method) -> Method:
    """Jupyter's authentication and authorization, unless a hosted agent's scoped token (checked in
    prepare) let the request in: that token was minted for this endpoint and its owner only, so no
    other check applies (a hub's authorizer would ask the hub about a user it does not know)."""
    checked = cast(Method, web.authenticated(authorized(method)))

    @functools.wraps(method)
    async def serve_request(self: McpHandler) -> None:
        if self.scoped_owner is not None:
            await method(self)
        else:
            await checked(self)

    return serve_request


class McpHandler(CellwrightHandler):
    """cellwright/mcp: the MCP endpoint (Streamable HTTP) for outside agents, served by the mcp
    SDK (jupyter_ext.mcp_endpoint) once Jupyter has authenticated the request, or once it carried
    the scoped token of an agent we host (jupyter_ext.mcp_tokens). Not a route of the REST table:
    its messages are MCP's JSON-RPC."""

    _asgi: AsgiRequest | None = None
    scoped_owner: str | None = None  # set when a hosted agent's token let the request in

    async def prepare(self) -> None:  # type: ignore[override]
        token = presented(self.request.headers.get("Authorization", ""))
        if token is None:  # Jupyter's token, cookie or nothing: Jupyter decides
            await super().prepare()
            return
        # A scoped token never reaches Jupyter's identity provider (on a hub, a round trip to refuse it).
        self.current_user = self._jupyter_current_user = None  # until it is found valid (the access log reads it)
        if not self.check_host() or not self.check_origin():
            raise web.HTTPError(403)
        host = getattr(self.app, "acp_host", None)
        owner = host.tokens.owner_of(token) if host is not None else None
        if owner is None or owner != self.app.threads.owner:
            raise web.HTTPError(403, "This MCP token is not valid here: its agent process has ended.")
        self.scoped_owner = owner
        self.current_user = self._jupyter_current_user = User(username=owner)
        await self.accepted()

    async def _serve(self) -> None:
        if not self.app.configuration.serve_mcp:
            raise NotFound("The MCP endpoint is off on this server (c.Cellwright.serve_mcp = False).", "not_found")
        self._asgi = AsgiRequest(self)
        await serve(self, self.app.mcp_endpoint().handle, self._asgi)

    def on_connection_close(self) -> None:
        if self._asgi is not None:
            self._asgi.closed()

    def check_xsrf_cookie(self) -> None:
        # MCP clients send the token in a header (no cookie, so no cross-site form can ride on it);
        # a browser's cookie-authenticated request still has to pass Jupyter's check.
        if self.request.headers.get("Authorization"):
            return
        super().check_xsrf_cookie()

    @_authenticated
    async def get(self) -> None:
        await self._serve()

    @_authenticated
    async def post(self) -> None:
        await self._serve()

    @_authenticated
    async def delete(self) -> None:
        await self._serve()
