"""cellwright/mcp: the tornado side of the MCP endpoint (jupyter_ext.mcp_endpoint, loaded on the
first request: the mcp SDK is not imported at the server's start)."""

from __future__ import annotations

from jupyter_server.auth.decorator import authorized
from tornado import web

from .asgi_bridge import AsgiRequest, serve
from .errors import NotFound
from .handler_base import CellwrightHandler


class McpHandler(CellwrightHandler):
    """cellwright/mcp: the MCP endpoint (Streamable HTTP) for outside agents, served by the mcp
    SDK (jupyter_ext.mcp_endpoint) once Jupyter has authenticated the request. Not a route of the
    REST table: its messages are MCP's JSON-RPC."""

    _asgi: AsgiRequest | None = None

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

    @web.authenticated
    @authorized
    async def get(self) -> None:
        await self._serve()

    @web.authenticated
    @authorized
    async def post(self) -> None:
        await self._serve()

    @web.authenticated
    @authorized
    async def delete(self) -> None:
        await self._serve()
