"""The routes' side of hosted ACP agents (jupyter_ext.acp_host): GET agents, and the thread routes'
turn to the host when a thread's agent is an outside one (runs, approvals, Stop, detail, delete)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from jupyter_server.auth.decorator import authorized
from tornado import web

from .errors import BadRequest, Conflict
from .handler_base import CellwrightHandler

if TYPE_CHECKING:
    from agent_core.config.acp_agents import AcpAgentConfig
    from agent_core.contract.answers import ThreadDetail
    from agent_core.contract.bodies import Decision
    from agent_core.storage.thread_store import ThreadRecord

    from .acp_always import AlwaysAllowed
    from .acp_host import AcpHost


class AgentsHandler(CellwrightHandler):
    """GET agents: Cellwright's own agent, then each configured ACP agent with whether it can start."""

    route = "agents"

    @web.authenticated
    @authorized
    async def get(self) -> None:
        self.write_json({"agents": self.app.configuration.agent_listing()})


class AlwaysAllowedHandler(CellwrightHandler):
    """DELETE threads/{id}/always_allowed: the user takes back every "always" given in an outside agent's
    thread; each kind of its requests asks again."""

    route = "threads/{thread_id}/always_allowed"

    @web.authenticated
    @authorized
    async def delete(self, thread_id: str) -> None:
        await handler_thread(self, thread_id)
        always_allowed(self).clear(thread_id)
        self.write_json({"always_allowed": []})


async def handler_thread(handler: CellwrightHandler, thread_id: str) -> None:
    await handler.runs.thread(thread_id)  # another owner's: 404 before anything is read or changed


def always_allowed(handler: CellwrightHandler) -> AlwaysAllowed:
    """The users' "always" per hosted thread, kept in the data folder (read without the acp SDK)."""
    app = handler.app
    if getattr(app, "acp_always", None) is None:
        from .acp_always import AlwaysAllowed

        app.acp_always = AlwaysAllowed(Path(app.configuration.data_dir) / "acp_always.json")
    return app.acp_always


def host(handler: CellwrightHandler) -> AcpHost:
    """The server's host of ACP agents, made on first use (the acp SDK loads only then)."""
    app = handler.app
    if getattr(app, "acp_host", None) is None:
        from .acp_host import AcpHost
        from .acp_sessions import SavedSessions
        from .acp_undo import HostedWrites

        app.acp_host = AcpHost(
            app.threads,
            app.workspace,
            lambda: float(app.configuration.acp_idle_timeout),
            lambda: float(app.configuration.command_timeout),
            SavedSessions(Path(app.configuration.data_dir) / "acp_sessions.json"),
            HostedWrites(Path(app.configuration.data_dir) / "acp_undo", app.workspace),
            always_allowed(handler),
            _our_mcp(handler),
        )
        app.run_manager.hosted_running = app.acp_host.is_running  # event streams follow hosted runs
    return app.acp_host


def new_thread_agent(handler: CellwrightHandler, name: str) -> str:
    """What POST threads stores as the thread's agent: "" for ours, else a configured ACP agent."""
    if name in ("", "cellwright"):
        return ""
    if handler.app.configuration.acp_agent(name) is None:
        raise BadRequest(f"There is no agent {name[:100]!r}: GET cellwright/api/agents lists them.", "bad_request")
    return name


async def hosted_config(handler: CellwrightHandler, thread_id: str) -> AcpAgentConfig | None:
    """The ACP agent of the owner's thread, or None for a thread of Cellwright's own agent."""
    return agent_config(handler, await handler.runs.thread(thread_id))  # another owner's: 404


def agent_config(handler: CellwrightHandler, record: ThreadRecord) -> AcpAgentConfig | None:
    """The ACP agent of a thread already read, or None for a thread of Cellwright's own agent."""
    if not record.agent:
        return None
    config = handler.app.configuration.acp_agent(record.agent)
    if config is None:
        raise Conflict(f"The agent {record.agent!r} of this thread is no longer configured (acp_agents).", "conflict")
    return config


async def start_run(handler: CellwrightHandler, record: ThreadRecord, message: str) -> str | None:
    config = agent_config(handler, record)
    if config is None:
        return None
    return await host(handler).start_run(record, config, message)


async def decide(handler: CellwrightHandler, record: ThreadRecord, call_id: str, decision: Decision) -> str | None:
    if agent_config(handler, record) is None:
        if decision.always:
            raise BadRequest(
                "always is for an outside agent's request that offers it; Cellwright's own tools are allowed "
                "unasked in the settings (auto_approve).",
                "bad_decision",
            )
        return None
    return await host(handler).decide(record.thread_id, call_id, decision)


async def undo(handler: CellwrightHandler, thread_id: str, call_id: str) -> dict[str, Any] | None:
    config = await hosted_config(handler, thread_id)
    if config is None:
        return None
    return await host(handler).undo(await handler.runs.thread(thread_id), config.name, call_id)


async def cancel(handler: CellwrightHandler, thread_id: str) -> bool:
    if await hosted_config(handler, thread_id) is None:
        return False
    await host(handler).cancel(thread_id)
    return True


async def forget(handler: CellwrightHandler, thread_id: str) -> None:
    await handler_thread(handler, thread_id)
    if getattr(handler.app, "acp_host", None) is not None:
        await handler.app.acp_host.forget(thread_id)
    always_allowed(handler).clear(thread_id)  # also when no agent ran since the server started


async def with_hosted_state(handler: CellwrightHandler, detail: ThreadDetail) -> ThreadDetail:
    """A hosted thread's detail: its turns from its events (the graph has none), its open card from
    the host."""
    if detail.agent == "cellwright":
        return detail
    from agent_core.contract.answers import ThreadMessage
    from agent_core.contract.events import ApprovalRequest

    turns: list[ThreadMessage] = []
    for event in await handler.runs.threads.events.events_after(detail.thread_id, 0):
        if event["type"] == "run_started" and event.get("message"):  # a resumed segment has none
            turns.append(ThreadMessage(role="user", content=str(event["message"])))
        elif event["type"] == "token":
            if not turns or turns[-1].role != "assistant":
                turns.append(ThreadMessage(role="assistant", content=""))
            turns[-1].content += str(event["text"])
    host = getattr(handler.app, "acp_host", None)
    pending = host.pending(detail.thread_id) if host is not None else None
    card = ApprovalRequest.model_validate(pending) if pending is not None else None
    config = handler.app.configuration.acp_agent(detail.agent)
    always = always_allowed(handler).kinds(detail.thread_id, config) if config is not None else []
    return detail.model_copy(update={"pending_approval": card, "messages": turns, "always_allowed": always})


def _our_mcp(handler: CellwrightHandler) -> str | None:
    """Our MCP endpoint's URL as the agent reaches it (session/new's mcpServers), when it is served. The
    agent gets a token for it alone (jupyter_ext.mcp_tokens), never the server's own."""
    app = handler.app
    if not app.configuration.serve_mcp:
        return None
    server = app.serverapp
    return f"http://127.0.0.1:{server.port}{server.base_url}cellwright/mcp"
