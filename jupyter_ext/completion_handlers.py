"""The inline completion routes (agent_core/completion): `POST completions` streams a suggestion as
JSON lines, and closes the endpoint's request the moment the panel drops its own (a new keystroke);
`GET completions/usage` counts this server's completions."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import TYPE_CHECKING

from jupyter_server.auth.decorator import authorized
from tornado import web
from tornado.iostream import StreamClosedError

from agent_core.json_types import JsonObject

from .errors import BadRequest, Conflict
from .handler_base import CellwrightHandler

if TYPE_CHECKING:
    from agent_core.completion.service import CompletionService

OFF_MESSAGE = (
    "Inline completion is turned off on this server (c.Cellwright.inline_completion = False). Turn it on in "
    "jupyter_server_config.py, or switch the panel's inline completion off in the Settings Editor (Cellwright)."
)


def completion_service(handler: CellwrightHandler) -> CompletionService:
    """The server's one CompletionService (its cache and counters), made on the first completion."""
    service = handler.settings.get("cellwright_completions")
    if service is None:
        # the completion service and its contract models load on the first request: the server starts without them
        # (bench/server_start.py)
        from agent_core.completion.service import CompletionService

        service = CompletionService(handler.app.configuration.completion_endpoint)
        handler.settings["cellwright_completions"] = service
    return service


class CompletionsHandler(CellwrightHandler):
    route = "completions"
    _work: asyncio.Task[None] | None = None

    @web.authenticated
    @authorized
    async def post(self) -> None:
        from agent_core.contract.completions import CompletionRequest

        body = self.body(CompletionRequest)
        if not self.app.configuration.inline_completion:
            raise Conflict(OFF_MESSAGE, "completion_off")
        # Confined to the root, hidden files and Cellwright's data refused (400): their text never reaches a prompt.
        path = self._notebook_path(body.path)
        if not path:
            raise BadRequest('"path" must name the notebook or file typed in, relative to the server root.')
        notebook = path if path.endswith(".ipynb") else ""
        env = self.app.kernel_environment(notebook, body.kernel_id) if (notebook or body.kernel_id) else None
        chunks = completion_service(self).complete(
            path,
            body.prefix,
            body.suffix,
            (body.language or "python").lower(),
            body.cells_above,
            env,
            body.kernel_id or f"notebook:{notebook}",
            body.execution_count,
        )
        # The stream runs in a task of its own: a client that hangs up cancels it (on_connection_close),
        # which closes the endpoint's response on its way out, instead of waiting for the next write to fail.
        self._work = asyncio.ensure_future(self._relay(chunks))
        try:
            await self._work
        except asyncio.CancelledError:
            if not self._gone():
                raise
            return
        if not self._gone():
            self.finish()

    async def _relay(self, chunks: AsyncGenerator[JsonObject, None]) -> None:
        async with aclosing(chunks) as lines:
            first = await anext(lines)  # a refusal (no model configured) is still an error answer here
            self.set_header("Content-Type", "application/x-ndjson")
            self.set_header("Cache-Control", "no-cache")
            self.set_header("X-Accel-Buffering", "no")
            self.request.connection.stream.set_nodelay(True)  # type: ignore[union-attr]
            try:
                self.write(json.dumps(first) + "\n")
                await self.flush()
                async for chunk in lines:
                    self.write(json.dumps(chunk) + "\n")
                    await self.flush()
            except StreamClosedError:
                return

    def _gone(self) -> bool:
        stream = self.request.connection.stream  # type: ignore[union-attr]
        return stream is None or stream.closed()

    def on_connection_close(self) -> None:
        if self._work is not None and not self._work.done():
            self._work.cancel()


class CompletionUsageHandler(CellwrightHandler):
    route = "completions/usage"

    @web.authenticated
    @authorized
    async def get(self) -> None:
        self.write_json(completion_service(self).usage.public())


COMPLETION_HANDLERS: tuple[type[CellwrightHandler], ...] = (CompletionsHandler, CompletionUsageHandler)
