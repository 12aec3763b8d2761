"""Thin HTTP handlers for cellwright/api/ (API.md). Each calls the extension's managers; domain
errors become JSON error bodies in one place (`write_error`)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from tornado import web
from tornado.iostream import StreamClosedError

from agent_core.tools import ToolInputError
from agent_core.workspace import WorkspaceError, resolve_in_root

from .errors import BadRequest, CellwrightError, Conflict
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
        e = _as_domain_error(e)
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
            await threads.wait_for_events(thread_id, after, PING_SECONDS, still=lambda: self.runs.is_running(thread_id))
            if self.runs.is_running(thread_id) and not await threads.events_after(thread_id, before, 1):
                self.write(": ping\n\n")


class ToolRouteHandler(CellwrightHandler):
    """Routes that call the agent's tools directly (the same functions the agent uses)."""

    @property
    def root_dir(self) -> Path:
        return Path(self.app.serverapp.root_dir)

    def environment(self, notebook_path: str, kernel_id: str | None) -> Any:
        from .kernel_executor import KernelEnvironment

        return KernelEnvironment(self.kernel_manager, self.session_manager, self.root_dir, notebook_path, kernel_id)

    def strings(self, body: dict[str, Any], *names: str) -> list[Any]:
        values = [body.get(name) for name in names]
        for name, value in zip(names, values):
            if value is not None and not isinstance(value, str):
                raise BadRequest(f'"{name}" must be a string.')
        return values



class DiagnosticsHandler(ToolRouteHandler):
    """POST diagnostics: {"code", "path"?, "kernel_id"?} -> {"diagnostics": [...]} (1-based lines and
    columns). `path` is the notebook (or .py file) the code belongs to: a notebook's kernel is asked
    which names it defines, so they are not reported as undefined. Without code, `path` names a .py
    file to check."""

    @web.authenticated
    @authorized
    async def post(self) -> None:
        from agent_core.tools.diagnostics import lint_code, lint_file

        code, path, kernel_id = self.strings(self.body(), "code", "path", "kernel_id")
        if code is None and path is None:
            raise BadRequest('Send "code" (the cell\'s Python code), optionally with "path" and "kernel_id".', "missing_fields")
        root = self.root_dir
        if code is None:
            result = await lint_file(root, path)
        else:
            target = resolve_in_root(root, path) if path else None
            if target is not None and target.suffix == ".py":
                result = await lint_code(code, root, cell=False, path=target)
            else:
                notebook = target.relative_to(root.resolve()).as_posix() if target is not None else ""
                env = self.environment(notebook, kernel_id) if (notebook or kernel_id) else None
                result = await lint_code(code, root, env=env)
        answer: dict[str, Any] = {"diagnostics": result.diagnostics}
        if result.note:
            answer["note"] = result.note
        self.write_json(answer)


class ResourcesHandler(ToolRouteHandler):
    """POST resources: {"files"?, "dataframes"?, "kernel_id"?} -> {"files", "dataframes", "system"}."""

    @web.authenticated
    @authorized
    async def post(self) -> None:
        from agent_core.tools.resources import check_resources

        body = self.body()
        kernel_id, notebook = self.strings(body, "kernel_id", "notebook_path")
        env = self.environment(_root_relative(notebook) or "", kernel_id) if (kernel_id or notebook) else None
        self.write_json(await check_resources(self.root_dir, env, body.get("files"), body.get("dataframes")))


def _as_domain_error(e: BaseException) -> BaseException:
    """Errors of the agent's tools, as the routes that call those tools answer them."""
    if isinstance(e, WorkspaceError):
        return BadRequest(e.message[:1].upper() + e.message[1:] + ".", e.kind)
    if isinstance(e, ToolInputError):
        from agent_core.tools.diagnostics import DiagnosticsUnavailable

        if isinstance(e, DiagnosticsUnavailable):  # pylsp is being restarted: the request may be retried
            return Conflict(str(e), "diagnostics_unavailable")
        return BadRequest(str(e), "bad_request")
    return e


default_handlers = [
    (r"/cellwright/api/health", HealthHandler),
    (r"/cellwright/api/config", ConfigHandler),
    (r"/cellwright/api/threads", ThreadsHandler),
    (r"/cellwright/api/threads/(?P<thread_id>[\w-]+)", ThreadHandler),
    (r"/cellwright/api/threads/(?P<thread_id>[\w-]+)/runs", RunsHandler),
    (r"/cellwright/api/threads/(?P<thread_id>[\w-]+)/approvals/(?P<call_id>[^/]+)", ApprovalHandler),
    (r"/cellwright/api/threads/(?P<thread_id>[\w-]+)/cancel", CancelHandler),
    (r"/cellwright/api/threads/(?P<thread_id>[\w-]+)/events", EventsHandler),
    (r"/cellwright/api/diagnostics", DiagnosticsHandler),
    (r"/cellwright/api/resources", ResourcesHandler),
]


def _root_relative(path: str | None) -> str | None:
    """Notebook paths are relative to the server root; refuse ones that climb out of it."""
    if path is None:
        return None
    parts = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".")]
    if path.startswith("/") or ".." in parts:
        raise BadRequest(f"The path {path!r} is outside the server root; send a path relative to it.", "path_outside_root")
    return "/".join(parts)
