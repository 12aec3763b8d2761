"""Thin HTTP handlers for cellwright/api/ (API.md). Each calls the extension's managers; domain
errors become JSON error bodies in one place (`write_error`)."""
from __future__ import annotations

import asyncio
import json
from typing import Any

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from tornado import web
from tornado.iostream import StreamClosedError

from .errors import BadRequest, CellwrightError
from .settings_store import validate_changes

PING_SECONDS = 15.0
MODES = ("single", "multi")


class CellwrightHandler(APIHandler):
    auth_resource = "cellwright"

    @property
    def app(self) -> Any:
        return self.settings["cellwright"]

    @property
    def runs(self) -> Any:
        return self.app.run_manager

    async def prepare(self) -> None:
        await super().prepare()
        await self.app.ready()

    def body(self, *required: str) -> dict[str, Any]:
        try:
            data = json.loads(self.request.body or b"{}")
        except ValueError as exc:
            raise BadRequest(f"The request body is not valid JSON ({exc}).", "malformed_json") from None
        if not isinstance(data, dict):
            raise BadRequest("The request body must be a JSON object.", "malformed_json")
        missing = [name for name in required if name not in data]
        if missing:
            raise BadRequest(f"Missing fields: {missing}.", "missing_fields")
        return data

    def write_json(self, data: Any, status: int = 200) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(data))

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        exc = kwargs.get("exc_info", (None, None, None))[1]
        if isinstance(exc, web.HTTPError):
            kind, message = "http_error", exc.log_message or exc.reason or "request failed"
        elif status_code >= 500:
            kind, message = "internal", "Cellwright hit an internal error; the server log has the details."
        else:
            kind, message = "bad_request", "bad request"
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps({"error": kind, "message": message}))

    def _handle_request_exception(self, e: BaseException) -> None:  # noqa: N802 (tornado's name)
        if isinstance(e, CellwrightError):
            self.set_status(e.status)
            self.set_header("Content-Type", "application/json")
            self.finish(json.dumps({"error": e.kind, "message": e.message}))
            return
        super()._handle_request_exception(e)  # type: ignore[misc]


class HealthHandler(CellwrightHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        self.write_json(self.app.health())


class ConfigHandler(CellwrightHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        self.write_json(self.app.public_config())

    @web.authenticated
    @authorized
    async def put(self) -> None:
        self.app.apply_changes(validate_changes(self.body()))
        self.write_json(self.app.public_config())


class ThreadsHandler(CellwrightHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        self.write_json({"threads": await self.runs.list_threads()})

    @web.authenticated
    @authorized
    async def post(self) -> None:
        body = self.body()
        path, title = body.get("notebook_path", ""), body.get("title", "")
        if not isinstance(path, str) or not isinstance(title, str):
            raise BadRequest('"notebook_path" and "title" must be strings.')
        record = await self.runs.threads.create(path, title.strip() or "New thread")
        self.set_header("Location", self.base_url.rstrip("/") + f"/cellwright/api/threads/{record.thread_id}")
        self.write_json({**record.public(), "status": "idle"}, 201)


class ThreadHandler(CellwrightHandler):
    @web.authenticated
    @authorized
    async def get(self, thread_id: str) -> None:
        self.write_json(await self.runs.thread_detail(thread_id))

    @web.authenticated
    @authorized
    async def delete(self, thread_id: str) -> None:
        await self.runs.delete_thread(thread_id)
        self.set_status(204)
        self.finish()


class RunsHandler(CellwrightHandler):
    @web.authenticated
    @authorized
    async def post(self, thread_id: str) -> None:
        body = self.body("message")
        message, mode = body["message"], body.get("mode", "single")
        if not isinstance(message, str) or not message.strip():
            raise BadRequest('"message" must be a non-empty string.')
        if mode not in MODES:
            raise BadRequest(f'"mode" must be one of {list(MODES)}.', "bad_mode")
        if mode == "multi":
            raise BadRequest("Multi-agent mode is not available in this version; use mode \"single\".", "mode_unavailable")
        path, kernel_id = body.get("notebook_path"), body.get("kernel_id")
        if (path is not None and not isinstance(path, str)) or (kernel_id is not None and not isinstance(kernel_id, str)):
            raise BadRequest('"notebook_path" and "kernel_id" must be strings.')
        run_id = await self.runs.start_run(thread_id, message, _root_relative(path), kernel_id, mode)
        self.write_json({"run_id": run_id}, 202)


class ApprovalHandler(CellwrightHandler):
    @web.authenticated
    @authorized
    async def post(self, thread_id: str, call_id: str) -> None:
        run_id = await self.runs.decide(thread_id, call_id, self.body("decision"))
        self.write_json({"run_id": run_id}, 202)


class CancelHandler(CellwrightHandler):
    @web.authenticated
    @authorized
    async def post(self, thread_id: str) -> None:
        await self.runs.cancel(thread_id)
        self.write_json({"status": "cancelled"}, 202)


class EventsHandler(CellwrightHandler):
    """Server-Sent Events: replay after `Last-Event-ID`/`after`, then follow the active run."""

    @web.authenticated
    @authorized
    async def get(self, thread_id: str) -> None:
        await self.runs.thread(thread_id)
        after = self._after()
        self.set_header("Content-Type", "text/event-stream")
        self.set_header("Cache-Control", "no-cache")
        self.set_header("X-Accel-Buffering", "no")
        try:
            await self._stream(thread_id, after)
        except StreamClosedError:
            return  # the client went away; the run goes on
        self.finish()

    def _after(self) -> int:
        raw = self.get_query_argument("after", None) or self.request.headers.get("Last-Event-ID") or "0"
        try:
            return max(0, int(raw))
        except ValueError:
            raise BadRequest(f"'after' / Last-Event-ID must be an integer sequence number, not {raw!r}.") from None

    async def _stream(self, thread_id: str, after: int) -> None:
        threads = self.runs.threads
        while True:
            running = self.runs.is_running(thread_id)
            for event in await threads.events_after(thread_id, after):
                self.write(f"id: {event['seq']}\nevent: {event['type']}\ndata: {json.dumps(event)}\n\n")
                after = event["seq"]
            await self.flush()
            if not running and not self.runs.is_running(thread_id) and not await threads.events_after(thread_id, after, 1):
                return
            if self.request.connection.stream.closed():  # type: ignore[union-attr]
                return
            before = after
            await threads.wait_for_events(thread_id, after, PING_SECONDS)
            if not await threads.events_after(thread_id, before, 1):
                self.write(": ping\n\n")


default_handlers = [
    (r"/cellwright/api/health", HealthHandler),
    (r"/cellwright/api/config", ConfigHandler),
    (r"/cellwright/api/threads", ThreadsHandler),
    (r"/cellwright/api/threads/(?P<thread_id>[\w-]+)", ThreadHandler),
    (r"/cellwright/api/threads/(?P<thread_id>[\w-]+)/runs", RunsHandler),
    (r"/cellwright/api/threads/(?P<thread_id>[\w-]+)/approvals/(?P<call_id>[^/]+)", ApprovalHandler),
    (r"/cellwright/api/threads/(?P<thread_id>[\w-]+)/cancel", CancelHandler),
    (r"/cellwright/api/threads/(?P<thread_id>[\w-]+)/events", EventsHandler),
]


def _root_relative(path: str | None) -> str | None:
    """Notebook paths are relative to the server root; refuse ones that climb out of it."""
    if path is None:
        return None
    parts = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".")]
    if path.startswith("/") or ".." in parts:
        raise BadRequest(f"The path {path!r} is outside the server root; send a path relative to it.", "path_outside_root")
    return "/".join(parts)
