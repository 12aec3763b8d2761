"""The REST routes of cellwright/api/ (API.md, the route table agent_core.contract.routes): thread,
run, approval, undo, event-stream and settings handlers here, the tool routes in tool_handlers;
each calls the extension's managers."""

from __future__ import annotations

import re
from contextlib import aclosing

from jupyter_server.auth.decorator import authorized
from tornado import web
from tornado.iostream import StreamClosedError

from agent_core import fast_json
from agent_core.json_types import JsonObject

from . import acp_routes
from .acp_routes import AgentsHandler, AlwaysAllowedHandler
from .as_cell import AsCellHandler
from .completion_handlers import COMPLETION_HANDLERS
from .errors import BadRequest, Misconfigured
from .handler_base import CellwrightHandler, contract_bodies
from .request_handlers import RequestsHandler
from .rewind_handlers import REWIND_HANDLERS
from .thread_following import StreamItem
from .tool_handlers import (
    DiagnosticsHandler,
    KnowledgeStatusHandler,
    McpServersHandler,
    NotebookGraphHandler,
    NotebookToolsHandler,
    ResourcesHandler,
    VariablesHandler,
    VerifyHandler,
)

MAX_SEQ = 2**62  # SQLite integers are 64-bit: a larger Last-Event-ID must not reach the query


class HealthHandler(CellwrightHandler):
    route = "health"

    async def prepare(self) -> None:  # type: ignore[override]  # as CellwrightHandler's
        try:
            await super().prepare()
        except Misconfigured:  # health answers, naming it in "problems" (API.md)
            pass

    @web.authenticated
    @authorized
    async def get(self) -> None:
        from .sandbox_health import sandbox_health  # issue 37

        health = self.app.health()
        if not self.app.problems:
            health["sandbox"] = await sandbox_health(self.app.configuration.agent_settings())
        self.write_json(health)


class ConfigHandler(CellwrightHandler):
    route = "config"

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
    route = "config/models"

    @web.authenticated
    @authorized
    async def get(self) -> None:
        # each route's agent_core modules load on its first request: the server starts without them
        # (bench/server_start.py)
        from agent_core.llm.connection_check import list_models

        self.write_json(await list_models(self.app.configuration.agent_settings()))


class ConfigTestHandler(CellwrightHandler):
    route = "config/test"

    @web.authenticated
    @authorized
    async def post(self) -> None:
        from agent_core.llm.connection_check import test_connection

        form = self.body(contract_bodies().ConnectionTest).model_dump(exclude_none=True)
        self.write_json(
            await test_connection(self.app.configuration.trial_settings(form))
        )  # keys stay with their endpoint


class ThreadsHandler(CellwrightHandler):
    route = "threads"

    @web.authenticated
    @authorized
    async def get(self) -> None:
        self.write_json(await self.runs.list_threads())

    @web.authenticated
    @authorized
    async def post(self) -> None:
        body = self.body(contract_bodies().CreateThread)
        path = self._notebook_path(body.notebook_path) or ""
        agent = acp_routes.new_thread_agent(self, body.agent)
        record = await self.runs.threads.create(path, body.title.strip() or "New thread", agent)
        self.set_header("Location", self.base_url.rstrip("/") + f"/cellwright/api/threads/{record.thread_id}")
        self.write_json({**record.public(), "status": "idle"}, 201)


class ThreadHandler(CellwrightHandler):
    route = "threads/{thread_id}"

    @web.authenticated
    @authorized
    async def get(self, thread_id: str) -> None:
        self.write_json(await acp_routes.with_hosted_state(self, await self.runs.thread_detail(thread_id)))

    @web.authenticated
    @authorized
    async def delete(self, thread_id: str) -> None:
        await acp_routes.forget(self, thread_id)
        await self.runs.delete_thread(thread_id)
        self.set_status(204)
        self.finish()


class EventStreaming(CellwrightHandler):
    """Writes a thread's events as Server-Sent Events: the stream route's answer, and the answer of a
    POST that starts a run when it asks for one (`Accept: text/event-stream`): the client then reads
    the run it started on the answer, with no second request before the first token (issue 41)."""

    async def accepted(self) -> None:
        await super().accepted()
        # Read before any work: a POST that would answer 400 for a bad `after` must not start its run.
        self._after_seq = self._after() if self.wants_events() else 0

    def wants_events(self) -> bool:
        return self.request.method == "GET" or "text/event-stream" in self.request.headers.get("Accept", "")

    async def write_events(self, thread_id: str) -> None:
        """Replay after `Last-Event-ID`/`after`, then follow the active run (query: previews, waiting)."""
        after = self._after_seq
        self.set_status(200)
        self.set_header("Content-Type", "text/event-stream")
        self.set_header("Cache-Control", "no-cache")
        self.set_header("X-Accel-Buffering", "no")
        # What is ready at one wake-up is flushed at once, in one write: without TCP_NODELAY, Nagle
        # would hold that write back until the previous one is acknowledged (a delayed ACK: up to 40 ms).
        self.request.connection.stream.set_nodelay(True)  # type: ignore[union-attr]
        try:
            previews = self.get_query_argument("previews", "0") in ("1", "true")
            waiting = self.get_query_argument("waiting", "0") in ("1", "true")
            # aclosing: a reader that leaves stops counting as a preview reader at once, not at GC.
            # An unknown thread is refused (404) before the first batch: no event has been written.
            async with aclosing(self.runs.follow_batches(thread_id, after, previews, waiting)) as batches:
                async for batch in batches:
                    for item in batch:
                        self._write_item(item)
                    await self.flush()
                    if self.request.connection.stream.closed():  # type: ignore[union-attr]
                        return
        except StreamClosedError:
            return  # the client went away; the run goes on
        self.finish()

    async def answer_run(self, thread_id: str, accepted: JsonObject) -> None:
        """A started (or queued) run: its events when the client asked for them, else `accepted`."""
        if self.wants_events():
            await self.write_events(thread_id)
        else:
            self.write_json(accepted, 202)

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


class EventsHandler(EventStreaming):
    """Server-Sent Events: replay after `Last-Event-ID`/`after`, then follow the active run."""

    route = "threads/{thread_id}/events"

    @web.authenticated
    @authorized
    async def get(self, thread_id: str) -> None:
        await self.write_events(thread_id)


class RunsHandler(EventStreaming):
    route = "threads/{thread_id}/runs"

    @web.authenticated
    @authorized
    async def post(self, thread_id: str) -> None:
        body = self.body(contract_bodies().StartRun)
        if not body.message.strip():
            raise BadRequest('"message" must not be blank.', "bad_request")
        path = self._notebook_path(body.notebook_path)
        # Read once for the three questions below (another owner's thread: 404): each read is a hop
        # to the database's thread before the first token (issue 41).
        record = await self.runs.thread(thread_id)
        hosted_run = await acp_routes.start_run(self, record, body.message)
        if hosted_run is not None:  # an outside agent's thread (issue 40)
            await self.answer_run(thread_id, {"run_id": hosted_run})
            return
        waiting_run = await self.runs.background.queue_if_waiting(record, body.message)
        if waiting_run is not None:  # issue 38: kept for the model, given with the cell's outcome
            await self.answer_run(thread_id, {"run_id": waiting_run, "queued": True})
            return
        run_id = await self.runs.start_run(thread_id, body.model_copy(update={"notebook_path": path}), record)
        await self.answer_run(thread_id, {"run_id": run_id})


class ContinueHandler(EventStreaming):
    """POST threads/{id}/continue: continue without waiting for the cell in the background (issue 38)."""

    route = "threads/{thread_id}/continue"

    @web.authenticated
    @authorized
    async def post(self, thread_id: str) -> None:
        await self.runs.thread(thread_id)  # another owner's thread is a 404
        await self.answer_run(thread_id, {"run_id": await self.runs.background.continue_without_waiting(thread_id)})


class ApprovalHandler(EventStreaming):
    route = "threads/{thread_id}/approvals/{tool_call_id}"

    @web.authenticated
    @authorized
    async def post(self, thread_id: str, tool_call_id: str) -> None:
        decision = self.body(contract_bodies().Decision)
        record = await self.runs.thread(thread_id)  # read once, for both (another owner's thread: 404)
        hosted_run = await acp_routes.decide(self, record, tool_call_id, decision)
        if hosted_run is None:
            hosted_run = await self.runs.decide(thread_id, tool_call_id, decision, record)
        await self.answer_run(thread_id, {"run_id": hosted_run})


class UndoHandler(CellwrightHandler):
    """POST threads/{id}/undo/{tool_call_id}: undo one step in the kernel. A run is undone by undoing
    its steps newest first."""

    route = "threads/{thread_id}/undo/{tool_call_id}"

    @web.authenticated
    @authorized
    async def post(self, thread_id: str, tool_call_id: str) -> None:
        hosted = await acp_routes.undo(self, thread_id, tool_call_id)  # an outside agent's file write
        self.write_json(hosted if hosted is not None else await self.runs.undo(thread_id, tool_call_id))


class CancelHandler(CellwrightHandler):
    route = "threads/{thread_id}/cancel"

    @web.authenticated
    @authorized
    async def post(self, thread_id: str) -> None:
        if not await acp_routes.cancel(self, thread_id):
            await self.runs.cancel(thread_id)
        self.write_json({"status": "cancelled"}, 202)


class AgentCellsHandler(CellwrightHandler):
    """POST agent_cells: {"notebook_path", "offset"?, "limit"?} -> {"cells", "next_offset"}: the agent
    cells of the notebook, from this owner's threads only (agent_core/loop/agent_cells.py)."""

    route = "agent_cells"

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

    route = "openapi.json"

    @web.authenticated
    @authorized
    async def get(self) -> None:
        from agent_core.contract_files.openapi import openapi_json

        self.set_header("Content-Type", "application/json")
        self.finish(openapi_json())


HANDLERS: tuple[type[CellwrightHandler], ...] = (
    HealthHandler,
    ConfigHandler,
    ConfigModelsHandler,
    ConfigTestHandler,
    ThreadsHandler,
    ThreadHandler,
    AgentsHandler,
    AlwaysAllowedHandler,
    RunsHandler,
    ApprovalHandler,
    UndoHandler,
    AsCellHandler,
    *REWIND_HANDLERS,
    RequestsHandler,
    ContinueHandler,
    CancelHandler,
    EventsHandler,
    DiagnosticsHandler,
    ResourcesHandler,
    VariablesHandler,
    McpServersHandler,
    NotebookToolsHandler,
    KnowledgeStatusHandler,
    AgentCellsHandler,
    *COMPLETION_HANDLERS,
    VerifyHandler,
    NotebookGraphHandler,
    OpenAPIHandler,
)


# What a path parameter of the route table may be: an id, or a tool call id of bounded length.
PATH_PARAMETERS = {"thread_id": r"[\w-]+", "tool_call_id": r"[^/]{1,200}", "branch": r"[\w-]{1,64}"}


def url_pattern(route: str) -> str:
    """The tornado pattern of a route of the table (agent_core.contract.routes), its parameters named."""
    pattern = re.sub(r"\{(\w+)\}", lambda m: f"(?P<{m[1]}>{PATH_PARAMETERS[m[1]]})", route.replace(".", r"\."))
    return "/cellwright/api/" + pattern


default_handlers = [(url_pattern(handler.route), handler) for handler in HANDLERS]
