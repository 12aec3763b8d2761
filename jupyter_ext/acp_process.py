"""One hosted ACP agent's process (jupyter_ext.acp_host): started over stdio with the official SDK,
initialised with the client capabilities we implement, its session made (or loaded, where the agent
can and remembers it), and ended with every process under it. The agent reaches our MCP endpoint
with a token scoped to that endpoint and this process (jupyter_ext.mcp_tokens), never the Jupyter
server's token."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from .mcp_tokens import McpTokens

if TYPE_CHECKING:
    from agent_core.config.acp_agents import AcpAgentConfig

    from .acp_client import ThreadClient

log = logging.getLogger(__name__)

STOP_GRACE = 5.0  # seconds the SDK's connection has to close after the process is killed
STDIO_LIMIT = 4 * 1024 * 1024  # bytes of one JSON-RPC line from the agent
# What the server's environment holds that opens more than the agent is given: Jupyter's and the hub's
# tokens (every route of this server; the user's hub account) and the shared database (every owner's
# threads). The operator can still hand one to an agent on purpose, in its own `env`.
WITHHELD_ENV = ("JUPYTER_TOKEN", "JPY_API_TOKEN", "JUPYTERHUB_API_TOKEN", "CELLWRIGHT_DATABASE_URL")


class AgentGone(Exception):
    """The agent process died, hung, or broke the protocol: the message says which."""


@dataclass(frozen=True)
class McpOffer:
    """Our MCP endpoint as hosted agents reach it: its URL, and the tokens minted for them, as `owner`."""

    url: str
    tokens: McpTokens
    owner: str


@dataclass
class AgentProcess:
    stack: contextlib.AsyncExitStack
    conn: Any  # the SDK's ClientSideConnection
    process: asyncio.subprocess.Process
    session_id: str
    loaded: bool  # session/load took up the session of an earlier process: the agent remembers the thread
    revoke: Callable[[], None]  # ends its MCP token

    async def close(self) -> None:
        """Its MCP token revoked, then it and every process under it killed."""
        self.revoke()
        _kill_tree(self.process.pid)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.stack.aclose(), STOP_GRACE)


async def start(
    config: AcpAgentConfig, client: ThreadClient, root: Path, mcp: McpOffer | None, earlier: str
) -> AgentProcess:
    """The agent's process and session: `earlier`, an earlier process's session, is loaded when the
    agent advertises loadSession; otherwise (or if loading fails) a new session starts."""
    from acp import PROTOCOL_VERSION
    from acp.schema import ClientCapabilities, FileSystemCapabilities, HttpHeader, HttpMcpServer, Implementation
    from acp.stdio import spawn_agent_process

    from agent_core import __version__

    stack = contextlib.AsyncExitStack()
    token = ""

    def revoke() -> None:
        if token and mcp is not None:
            mcp.tokens.revoke(token)

    try:
        executable = config.executable()
        if executable is None:
            raise AgentGone(config.unavailable_reason() or "the agent's command was not found")
        conn, process = await stack.enter_async_context(
            spawn_agent_process(
                cast(Any, client),  # the SDK's Client protocol, implemented in part
                executable,
                *config.args,
                env={**{k: v for k, v in os.environ.items() if k not in WITHHELD_ENV}, **config.env},
                cwd=str(root),
                # stderr unread would fill its pipe and stall a chatty agent; it may hold its secrets
                transport_kwargs={"limit": STDIO_LIMIT, "stderr": asyncio.subprocess.DEVNULL},
            )
        )
        answer = await conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(
                fs=FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=True
            ),
            client_info=Implementation(name="cellwright", title="Cellwright", version=__version__),
        )
        capabilities = answer.agent_capabilities
        servers: list[Any] = []
        if mcp is not None and capabilities and capabilities.mcp_capabilities and capabilities.mcp_capabilities.http:
            token = mcp.tokens.mint(mcp.owner, lambda: process.returncode is None)
            headers = [HttpHeader(name="Authorization", value=f"Bearer {token}")]
            servers.append(HttpMcpServer(type="http", name="cellwright", url=mcp.url, headers=headers))
        if earlier and capabilities and capabilities.load_session:
            try:
                with client.replaying():  # the agent replays the conversation: the thread has it already
                    await conn.load_session(cwd=str(root), session_id=earlier, mcp_servers=servers)
                return AgentProcess(stack, conn, process, earlier, True, revoke)
            except Exception as exc:  # the agent forgot it (its own storage was cleared): a new session
                log.info("%s could not load its earlier session: %s", config.name, type(exc).__name__)
        new = await conn.new_session(cwd=str(root), mcp_servers=servers)
        return AgentProcess(stack, conn, process, new.session_id, False, revoke)
    except BaseException:
        revoke()
        await stack.aclose()
        raise


def _kill_tree(pid: int) -> None:
    """Kill the agent's process and every process under it: a launcher (npx, a node wrapper) that
    dies alone leaves the real agent running, holding our pipes."""
    import psutil

    try:
        root = psutil.Process(pid)
        processes = [*root.children(recursive=True), root]
    except psutil.NoSuchProcess:
        return
    for process in processes:
        with contextlib.suppress(psutil.NoSuchProcess):
            process.kill()
