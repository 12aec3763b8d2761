"""Thin HTTP handlers for cellwright/api/ (API.md). Each calls the extension's managers; domain
errors become JSON error bodies in one place (`write_error`)."""

from __future__ import annotations

import asyncio
import json
import sys
from contextlib import aclosing
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from tornado import web
from tornado.iostream import StreamClosedError

from agent_core import fast_json
from agent_core.contract.choices import RouteErrorKind
from agent_core.storage.database import DatabaseUnavailable
from agent_core.workspace import WorkspaceError

from .errors import BadRequest, CellwrightError, Conflict, Misconfigured, Unavailable, status_of
from .run_manager import RunManager, StreamItem

if TYPE_CHECKING:
    from agent_core.contract.bodies import ModelT
    from agent_core.contract.shared import WireModel


def contract_bodies() -> ModuleType:
    """agent_core.contract.bodies, loaded by the first request: building its models would add tens of
    milliseconds to Jupyter's start-up."""
    from agent_core.contract import bodies

    return bodies


MAX_SEQ = 2**62  # SQLite integers are 64-bit: a larger Last-Event-ID must not reach the query


class CellwrightHandler(APIHandler):
    auth_resource = "cellwright"

    @property
    def app(self) -> Any:
        return self.settings["cellwright"]

    @property
    def runs(self) -> RunManager:
        return self.app.run_manager

    async def prepare(self) -> None:  # type: ignore[override]  # tornado's, not JupyterHandler's login redirect
        await super().prepare()
        if (
            len(self.request.body or b"") > contract_bodies().MAX_BODY_BYTES
        ):  # before any work, even for a wrong route body
            contract_bodies().parse_json(self.request.body)
        await self.app.ready()

    def body(self, model: type[ModelT]) -> ModelT:
        """The request body as `model`: JSON, bounded, every field type-checked."""
        bodies = contract_bodies()
        return bodies.parse_body(model, bodies.parse_json(self.request.body))

    @property
    def root_dir(self) -> Path:
        return Path(self.app.serverapp.root_dir)

    def _notebook_path(self, path: str | None) -> str | None:
        """A notebook path from a body, relative to the root; 400 path_outside_root when it leaves it
        (by `..`, an absolute path or a symlink)."""
        relative = _root_relative(path)
        if relative:
            self.app.workspace.resolve(relative)
        return relative

    def write_json(self, data: WireModel | dict[str, Any], status: int = 200) -> None:
        """A route's answer: a contract model (the fields it was given, as JSON), or a plain object.
        (No isinstance on the model class: pydantic loads with the first request, not at start.)"""
        if not isinstance(data, dict):
            data = data.model_dump(mode="json", exclude_unset=True)
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(data))

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        exc = kwargs.get("exc_info", (None, None, None))[1]
        kind: RouteErrorKind
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
            self.set_status(status_of(e))
            self.set_header("Content-Type", "application/json")
            self.finish(json.dumps({"error": e.kind, "message": e.message}))
            return
        super()._handle_request_exception(e)


class HealthHandler(CellwrightHandler):
    async def prepare(self) -> None:  # type: ignore[override]  # as CellwrightHandler's
        try:
            await super().prepare()
        except Misconfigured:  # health answers, naming it in "problems" (API.md)
            pass

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
        self.app.apply_changes(contract_bodies().parse_json(self.request.body))
        self.write_json(self.app.public_config())


class ConfigModelsHandler(CellwrightHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        from agent_core.llm.connection_check import list_models

        self.write_json(await list_models(self.app.configuration.agent_settings()))


class ConfigTestHandler(CellwrightHandler):
    @web.authenticated
    @authorized
    async def post(self) -> None:
        from agent_core.llm.connection_check import test_connection

        form = self.body(contract_bodies().ConnectionTest).model_dump(exclude_none=True)
        self.write_json(
            await test_connection(self.app.configuration.trial_settings(form))
        )  # keys stay with their endpoint


class ThreadsHandler(CellwrightHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        self.write_json(await self.runs.list_threads())

    @web.authenticated
    @authorized
    async def post(self) -> None:
        body = self.body(contract_bodies().CreateThread)
        path = self._notebook_path(body.notebook_path) or ""
        record = await self.runs.threads.create(path, body.title.strip() or "New thread")
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
        body = self.body(contract_bodies().StartRun)
        if not body.message.strip():
            raise BadRequest('"message" must not be blank.', "bad_request")
        path = self._notebook_path(body.notebook_path)
        run_id = await self.runs.start_run(thread_id, body.model_copy(update={"notebook_path": path}))
        self.write_json({"run_id": run_id}, 202)


class ApprovalHandler(CellwrightHandler):
    @web.authenticated
    @authorized
    async def post(self, thread_id: str, call_id: str) -> None:
        run_id = await self.runs.decide(thread_id, call_id, self.body(contract_bodies().Decision))
        self.write_json({"run_id": run_id}, 202)


class UndoHandler(CellwrightHandler):
    """POST threads/{id}/undo/{tool_call_id}: undo one step in the kernel. A run is undone by undoing
    its steps newest first."""

    @web.authenticated
    @authorized
    async def post(self, thread_id: str, call_id: str) -> None:
        self.write_json(await self.runs.undo(thread_id, call_id))


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
        after = self._after()
        self.set_header("Content-Type", "text/event-stream")
        self.set_header("Cache-Control", "no-cache")
        self.set_header("X-Accel-Buffering", "no")
        # What is ready at one wake-up is flushed at once, in one write: without TCP_NODELAY, Nagle
        # would hold that write back until the previous one is acknowledged (a delayed ACK: up to 40 ms).
        self.request.connection.stream.set_nodelay(True)  # type: ignore[union-attr]
        try:
            previews = self.get_query_argument("previews", "0") in ("1", "true")
            # aclosing: a reader that leaves stops counting as a preview reader at once, not at GC.
            # An unknown thread is refused (404) before the first batch: no event has been written.
            async with aclosing(self.runs.follow_batches(thread_id, after, previews)) as batches:
                async for batch in batches:
                    for item in batch:
                        self._write_item(item)
                    await self.flush()
                    if self.request.connection.stream.closed():  # type: ignore[union-attr]
                        return
        except StreamClosedError:
            return  # the client went away; the run goes on
        self.finish()

    def _write_item(self, item: StreamItem) -> None:
        if item.kind == "ping":
            self.write(": ping\n\n")
            return
        event = item.event or {}
        # Live-only events and caught_up have no id: a reconnect resumes after the last stored one.
        ident = f"id: {event['seq']}\n" if item.stored else ""
        self.write(f"{ident}event: {event['type']}\ndata: {fast_json.dumps(event)}\n\n")

    def _after(self) -> int:
        raw = self.get_query_argument("after", None) or self.request.headers.get("Last-Event-ID") or "0"
        try:
            return min(max(0, int(raw)), MAX_SEQ)
        except ValueError:
            raise BadRequest(f"'after' / Last-Event-ID must be an integer sequence number, not {raw[:40]!r}.") from None


class AgentCellsHandler(CellwrightHandler):
    """POST agent_cells: {"notebook_path", "offset"?, "limit"?} -> {"cells", "next_offset"}: the agent
    cells of the notebook, from this owner's threads only (agent_core/loop/agent_cells.py)."""

    @web.authenticated
    @authorized
    async def post(self) -> None:
        from agent_core.contract.notebook_cells import AgentCellsRequest
        from agent_core.loop.agent_cells import agent_cells

        body = self.body(AgentCellsRequest)
        path = self._notebook_path(body.notebook_path)
        if not path:
            raise BadRequest('"notebook_path" must name a notebook, relative to the server root.', "bad_request")
        self.write_json(await agent_cells(self.runs.threads, body.model_copy(update={"notebook_path": path})))


class OpenAPIHandler(CellwrightHandler):
    """GET openapi.json: the OpenAPI 3.1 document of these routes, written from the contract's models."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        from agent_core.contract.openapi import openapi_json

        self.set_header("Content-Type", "application/json")
        self.finish(openapi_json())


class ToolRouteHandler(CellwrightHandler):
    """Routes that call the agent's tools directly (the same functions the agent uses)."""

    def environment(self, notebook_path: str, kernel_id: str | None) -> Any:
        return self.app.kernel_environment(notebook_path, kernel_id)

    def kernel_of(self, body: Any) -> Any:
        """The environment of the kernel a body names (`kernel_id` and/or `notebook_path`), or None
        when it names none."""
        kernel_id, notebook = body.kernel_id, self._notebook_path(body.notebook_path)
        return self.environment(notebook or "", kernel_id) if (kernel_id or notebook) else None


class DiagnosticsHandler(ToolRouteHandler):
    """POST diagnostics: {"code", "path"?, "kernel_id"?} -> {"diagnostics": [...]} (1-based lines and
    columns). `path` is the notebook (or .py file) the code belongs to: a notebook's kernel is asked
    which names it defines, so they are not reported as undefined. Without code, `path` names a .py
    file to check."""

    @web.authenticated
    @authorized
    async def post(self) -> None:
        from agent_core.tools.diagnostics import lint_code, lint_file

        body = self.body(contract_bodies().DiagnosticsRequest)
        code, path, kernel_id = body.code, body.path, body.kernel_id
        if code is None and path is None:
            raise BadRequest(
                'Send "code" (the cell\'s Python code), optionally with "path" and "kernel_id".', "missing_fields"
            )
        workspace = self.app.workspace
        if code is None:
            result = await lint_file(workspace, path)
        else:
            target = workspace.resolve(path) if path else None
            if target is not None and target.suffix == ".py":
                result = await lint_code(code, workspace.root, cell=False, path=target)
            else:
                notebook = target.relative_to(workspace.root).as_posix() if target is not None else ""
                env = self.environment(notebook, kernel_id) if (notebook or kernel_id) else None
                result = await lint_code(code, workspace.root, env=env)
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

        body = self.body(contract_bodies().ResourcesRequest)
        self.write_json(await check_resources(self.app.workspace, self.kernel_of(body), body.files, body.dataframes))


class VariablesHandler(ToolRouteHandler):
    """POST variables: {"kernel_id"?, "notebook_path"?} -> {"variables": [{"name", "type", "shape"?}], "note"?}."""

    @web.authenticated
    @authorized
    async def post(self) -> None:
        from agent_core.kernel_probes.introspection import namespace_snapshot

        env = self.kernel_of(self.body(contract_bodies().VariablesRequest))
        if env is None:
            self.write_json({"variables": [], "note": "no kernel: send the notebook's kernel_id or notebook_path"})
            return
        snapshot = await namespace_snapshot(env, limit=200)
        variables = [
            {
                "name": v["name"],
                "type": v["type"],
                **({"shape": v["shape"]} if isinstance(v.get("shape"), list) else {}),
            }
            for v in snapshot.variables
        ]
        self.write_json({"variables": variables, **({"note": snapshot.note} if snapshot.note else {})})


class KnowledgeStatusHandler(CellwrightHandler):
    """GET knowledge/status: the workspace index's files, chunks, last update and errors."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        base = self.app.knowledge()
        if base is None:
            off = {
                "state": "off",
                "files": 0,
                "chunks": 0,
                "tables": 0,
                "last_update": None,
                "skipped": 0,
                "errors": [],
            }
            self.write_json({**off, "embedding_model": None})
            return
        self.write_json(await asyncio.to_thread(base.status))


def _as_domain_error(e: BaseException) -> BaseException:
    """Errors of the agent's tools and of body parsing, as the routes answer them."""
    if isinstance(e, WorkspaceError):  # worded for the model; a route's answer is a sentence
        return BadRequest(e.message[:1].upper() + e.message[1:] + ".", e.kind)
    if isinstance(e, DatabaseUnavailable):
        return Unavailable(str(e), "database_unavailable")
    if "psycopg" in sys.modules:  # the checkpointer's connections to a shared database
        from agent_core.storage.postgres_database import unavailable

        if unavailable(e):
            return Unavailable(
                f"The database cannot be reached ({type(e).__name__}): try again once it is back.",
                "database_unavailable",
            )
    from agent_core.tools import ToolInputError  # loaded by then: only a tool raises it

    if isinstance(e, ToolInputError):
        from agent_core.tools.diagnostics import DiagnosticsUnavailable

        if isinstance(e, DiagnosticsUnavailable):  # pylsp is being restarted: the request may be retried
            return Conflict(str(e), "diagnostics_unavailable")
        return BadRequest(str(e), "bad_request")
    return e


class McpServersHandler(CellwrightHandler):
    """GET mcp/servers: status and tools of the configured MCP servers; never env or header values."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        self.write_json({"servers": self.app.mcp_manager().servers()})


class NotebookToolsHandler(ToolRouteHandler):
    """POST notebook_tools: {"kernel_id"?, "notebook_path"?} -> {"tools": [...], "notes": [...]}."""

    @web.authenticated
    @authorized
    async def post(self) -> None:
        from agent_core.tools.gathering import TAKEN
        from agent_core.tools.notebook_functions import notebook_tools

        env = self.kernel_of(self.body(contract_bodies().VariablesRequest))
        if env is None:
            self.write_json({"tools": [], "notes": []})
            return
        specs, notes = await notebook_tools(env, TAKEN, self.app.configuration.agent_settings())
        tools = [
            {
                "name": name,
                "description": spec.description,
                "read_only": bool(spec.origin.get("read_only_hint")),
                "file": spec.origin.get("file"),
                "line": spec.origin.get("line"),
            }
            for name, spec in specs.items()
        ]
        self.write_json({"tools": tools, "notes": notes})


default_handlers = [
    (r"/cellwright/api/health", HealthHandler),
    (r"/cellwright/api/config", ConfigHandler),
    (r"/cellwright/api/config/models", ConfigModelsHandler),
    (r"/cellwright/api/config/test", ConfigTestHandler),
    (r"/cellwright/api/threads", ThreadsHandler),
    (r"/cellwright/api/threads/(?P<thread_id>[\w-]+)", ThreadHandler),
    (r"/cellwright/api/threads/(?P<thread_id>[\w-]+)/runs", RunsHandler),
    (r"/cellwright/api/threads/(?P<thread_id>[\w-]+)/approvals/(?P<call_id>[^/]+)", ApprovalHandler),
    (r"/cellwright/api/threads/(?P<thread_id>[\w-]+)/undo/(?P<call_id>[^/]{1,200})", UndoHandler),
    (r"/cellwright/api/threads/(?P<thread_id>[\w-]+)/cancel", CancelHandler),
    (r"/cellwright/api/threads/(?P<thread_id>[\w-]+)/events", EventsHandler),
    (r"/cellwright/api/diagnostics", DiagnosticsHandler),
    (r"/cellwright/api/resources", ResourcesHandler),
    (r"/cellwright/api/variables", VariablesHandler),
    (r"/cellwright/api/mcp/servers", McpServersHandler),
    (r"/cellwright/api/notebook_tools", NotebookToolsHandler),
    (r"/cellwright/api/knowledge/status", KnowledgeStatusHandler),
    (r"/cellwright/api/agent_cells", AgentCellsHandler),
    (r"/cellwright/api/openapi\.json", OpenAPIHandler),
]


def _root_relative(path: str | None) -> str | None:
    """Notebook paths are relative to the server root; refuse ones that climb out of it."""
    if path is None:
        return None
    parts = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".")]
    if path.startswith("/") or ".." in parts:
        raise BadRequest(
            f"The path {path!r} is outside the server root; send a path relative to it.", "path_outside_root"
        )
    return "/".join(parts)
