"""What every handler of cellwright/ shares: authentication, bodies read as contract models,
answers written as the route table's models, notebook paths confined to the root, and domain
errors as JSON error bodies in one place (`_handle_request_exception`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from jupyter_server.base.handlers import APIHandler
from tornado import web

from agent_core.contract.choices import RouteErrorKind
from agent_core.json_types import JsonObject
from agent_core.storage.database import DatabaseUnavailable
from agent_core.workspace import WorkspaceError

from .errors import BadRequest, CellwrightError, Conflict, Unavailable, status_of
from .run_manager import RunManager

if TYPE_CHECKING:
    from agent_core.contract.bodies import ModelT
    from agent_core.contract.shared import WireModel


def contract_bodies() -> ModuleType:
    """agent_core.contract.bodies, loaded by the first request: building its models would add tens of
    milliseconds to Jupyter's start-up."""
    from agent_core.contract import bodies

    return bodies


class CellwrightHandler(APIHandler):
    auth_resource = "cellwright"
    route: str  # its path in the route table, agent_core.contract.routes.ROUTES

    @property
    def app(self) -> Any:
        return self.settings["cellwright"]

    @property
    def runs(self) -> RunManager:
        return self.app.run_manager

    async def prepare(self) -> None:  # type: ignore[override]  # tornado's, not JupyterHandler's login redirect
        await super().prepare()
        await self.accepted()

    async def accepted(self) -> None:
        """What an authenticated request passes before any work: its body bounded, the store open."""
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
        return notebook_path_in_root(self.app.workspace, path)

    def write_json(self, data: WireModel | JsonObject, status: int = 200) -> None:
        """A route's answer, as the route table's answer model for this method and status: a dict is
        read as that model (a field the contract does not name is a bug, caught here, not shipped)."""
        if isinstance(data, dict):
            from agent_core.contract.routes import answer_model

            data = answer_model(self.route, self.request.method or "", status).model_validate_json(json.dumps(data))
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.finish(data.model_dump_json(exclude_unset=True))

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


def notebook_path_in_root(workspace: Any, path: str | None) -> str | None:
    """A notebook path from a request, relative to the root; 400 path_outside_root when it leaves it
    (by `..`, an absolute path or a symlink), and the workspace's refusal of hidden files."""
    relative = _root_relative(path)
    if relative:
        workspace.resolve(relative)
    return relative


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
