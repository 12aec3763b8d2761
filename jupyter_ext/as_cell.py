"""Run as cell (issue 37): an explore step of a thread becomes a notebook cell. The step's code, as the
thread's own events recorded it (never the request's), is proposed as a `run_cell` call of a one-call
run (RunManager.outside_call, the run an outside agent's call makes), so the usual approval card
follows, and approved, it runs in the notebook's kernel and the thread records it."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from jupyter_server.auth.decorator import authorized
from tornado import web

from agent_core.json_types import JsonObject
from agent_core.storage.event_log import seq_of

from .errors import Conflict, NotFound
from .handler_base import CellwrightHandler

if TYPE_CHECKING:
    from agent_core.config.agent_settings import AgentSettings
    from agent_core.contract.as_cell import AsCellStarted

    from .run_manager import RunManager

CLIENT = "Run as cell"  # who proposes the cell: the run's driver, named in the cell's provenance
EVENT_PAGE = 1000


async def explored_code(runs: RunManager, thread_id: str, call_id: str) -> str:
    """The code of explore call `call_id` as the owner's thread `thread_id` recorded it."""
    await runs.thread(thread_id)  # another owner's thread is a 404, as one that does not exist
    after = 0
    while page := await runs.threads.events.events_after(thread_id, after, EVENT_PAGE):
        for event in page:
            if event["type"] == "tool_call" and event.get("id") == call_id:
                return _code_of(event, call_id)
        after = seq_of(page[-1])
    raise NotFound(f"Thread {thread_id!r} has no step {call_id[:200]!r}.", "step_not_found")


def _code_of(call: JsonObject, call_id: str) -> str:
    args = call.get("args")
    code = args.get("code") if isinstance(args, dict) else None
    if call.get("name") != "explore" or not isinstance(code, str) or not code.strip():
        raise Conflict(
            f"Step {call_id[:200]!r} is a {str(call.get('name'))[:200]} call, not an exploration: only the code of an "
            "explore step can be run as a cell.",
            "not_explore",
        )
    return code


async def run_as_cell(runs: RunManager, thread_id: str, call_id: str, settings: AgentSettings) -> AsCellStarted:
    """Start the one-call run that proposes the explore step's code as a cell; refused as a new run
    is while a run of the thread is active or an approval is pending (409)."""
    from agent_core.contract.as_cell import AsCellStarted
    from agent_core.contract.outside_tools import OutsideCall

    code = await explored_code(runs, thread_id, call_id)
    cell_call_id = f"ascell_{uuid.uuid4().hex[:24]}"
    call = OutsideCall(
        tool_call_id=cell_call_id,
        name="run_cell",
        arguments={"code": code, "description": "The code explored in a sandbox, run as a notebook cell"},
        client=CLIENT,
        driver=CLIENT,
    )
    after = await runs.outside_call(thread_id, call, settings)
    return AsCellStarted(tool_call_id=cell_call_id, after=after)


class AsCellHandler(CellwrightHandler):
    route = "threads/{thread_id}/steps/{tool_call_id}/as_cell"

    @web.authenticated
    @authorized
    async def post(self, thread_id: str, tool_call_id: str) -> None:
        from agent_core.contract.as_cell import StepAsCell

        self.body(StepAsCell)  # nothing to send; a `code` field is refused
        started = await run_as_cell(self.runs, thread_id, tool_call_id, self.app.configuration.agent_settings())
        self.write_json(started, 202)
