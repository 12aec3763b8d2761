"""The shapes of tools from outside (agent_core.mcp, agent_core.tools.notebook_functions): the `mcp_servers`
setting as it is sent and shown, the MCP servers' status, and the kernel's @tool functions."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from agent_core.contract.shared import Autonomy, WireModel


class McpServerSetting(WireModel):
    """One MCP server of the `mcp_servers` setting: `command` (+ `args`, `env`) or `url` (+ `headers`).
    In answers, env and header values are masked ("********"); sent back masked, they are kept."""

    command: str | None = None
    args: list[str] | None = None
    env: dict[str, str] | None = None
    url: str | None = None
    headers: dict[str, str] | None = None
    start_timeout: float | None = None
    call_timeout: float | None = None
    disabled: bool | None = None


class PublicMcpServer(WireModel):
    transport: Literal["stdio", "http"]
    command: str | None = None
    args: list[str] | None = None
    env: dict[str, str] | None = Field(default=None, description="Names only: every value is masked.")
    url: str | None = None
    headers: dict[str, str] | None = Field(default=None, description="Names only: every value is masked.")
    start_timeout: float
    call_timeout: float
    disabled: bool


class AcpAgentSetting(WireModel):
    """One outside agent of the `acp_agents` setting (hosted over ACP): the program that starts it, its
    arguments and environment. In answers every env value is masked ("********"); sent back masked, the
    saved value is kept for the same name, command and args (a renamed or re-pointed agent must be given
    it again)."""

    command: str = Field(min_length=1, description='One program, e.g. "npx"; its arguments go in args.')
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict, description="Secrets: masked in answers.")


class McpToolInfo(WireModel):
    name: str
    description: str
    read_only_hint: bool | None = Field(
        default=None, description="What the server claims; never a reason to skip approval."
    )


class McpServerStatus(PublicMcpServer):
    name: str
    status: Literal["not_started", "starting", "connected", "failed", "stopped"]
    error: str | None = Field(default=None, description="Why it failed (no secrets).")
    tools: list[McpToolInfo] = Field(default_factory=list, description="Known once the server started.")


class McpServers(WireModel):
    """GET mcp/servers: the configured MCP servers, their status and tools; never env or header values."""

    servers: list[McpServerStatus]


class NotebookToolInfo(WireModel):
    name: str
    description: str
    read_only: bool = Field(
        description="Declared with @tool(read_only=True); runs unasked only if auto_approve_notebook_tools names it."
    )
    file: str | None = None
    line: int | None = None


class NotebookTools(WireModel):
    """POST notebook_tools: the functions the kernel registered with @tool, as the next run will offer them."""

    tools: list[NotebookToolInfo]
    notes: list[str] = Field(default_factory=list, description="Functions left out, and why.")


class OutsideCall(WireModel):
    """A tool call an outside agent (an MCP client of Cellwright's MCP endpoint) asks of a thread: it
    goes through the same policy, approval, ledger and undo as the model's calls."""

    tool_call_id: str = Field(min_length=1, max_length=200)
    name: str = Field(min_length=1, max_length=200)
    arguments: dict[str, Any]
    client: str = Field(min_length=1, max_length=200, description='Who asks, e.g. "Claude Code" (clientInfo).')
    driver: str = Field(
        default="",
        max_length=200,
        description='Who the run and its cell name as their author; default "<client> via MCP".',
    )
    autonomy: Autonomy = "agent"
