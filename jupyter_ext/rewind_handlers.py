"""The routes of rewind (issue 25): go back to a step (or preview it with dry_run), undo that, list
and read a thread's branches, fork a new thread from a step, and the diff of a range of steps; the
work is jupyter_ext.rewinds."""

from __future__ import annotations

from types import ModuleType

from jupyter_server.auth.decorator import authorized
from tornado import web

from . import rewinds
from .handler_base import CellwrightHandler

MAX_ID_CHARS = 200  # a tool call id, as the contract bounds it in bodies


def _rewind_bodies() -> ModuleType:  # the contract models load on first use
    from agent_core.contract import rewind

    return rewind


class RewindHandler(CellwrightHandler):
    route = "threads/{thread_id}/rewind"

    @web.authenticated
    @authorized
    async def post(self, thread_id: str) -> None:
        self.write_json(await rewinds.rewind(self.runs, thread_id, self.body(_rewind_bodies().RewindRequest)))


class RewindUndoHandler(CellwrightHandler):
    route = "threads/{thread_id}/rewind/undo"

    @web.authenticated
    @authorized
    async def post(self, thread_id: str) -> None:
        self.write_json(await rewinds.undo_rewind(self.runs, thread_id))


class BranchesHandler(CellwrightHandler):
    route = "threads/{thread_id}/branches"

    @web.authenticated
    @authorized
    async def get(self, thread_id: str) -> None:
        self.write_json(await rewinds.branches(self.runs, thread_id))


class BranchHandler(CellwrightHandler):
    route = "threads/{thread_id}/branches/{branch}"

    @web.authenticated
    @authorized
    async def get(self, thread_id: str, branch: str) -> None:
        self.write_json(await rewinds.branch(self.runs, thread_id, branch))


class ForkHandler(CellwrightHandler):
    route = "threads/{thread_id}/fork"

    @web.authenticated
    @authorized
    async def post(self, thread_id: str) -> None:
        forked = await rewinds.fork(self.runs, thread_id, self.body(_rewind_bodies().ForkRequest))
        self.set_header("Location", self.base_url.rstrip("/") + f"/cellwright/api/threads/{forked.thread_id}")
        self.write_json(forked, 201)


class DiffHandler(CellwrightHandler):
    route = "threads/{thread_id}/diff"

    @web.authenticated
    @authorized
    async def get(self, thread_id: str) -> None:
        start, end = (self._step_argument(name) for name in ("from", "to"))
        self.write_json(await rewinds.diff(self.runs, thread_id, start, end))

    def _step_argument(self, name: str) -> str | None:
        value = self.get_query_argument(name, None)
        return value[:MAX_ID_CHARS] if value else None


REWIND_HANDLERS: tuple[type[CellwrightHandler], ...] = (
    RewindHandler,
    RewindUndoHandler,
    BranchesHandler,
    BranchHandler,
    ForkHandler,
    DiffHandler,
)
