"""The MCP servers of one Jupyter server: their connections (kept across runs, rebuilt when their
configuration changes), the tools they give a run (namespaced `mcp__<server>__<tool>`), and what a
call's result becomes for the model (bounded text, a few images)."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import json
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from agent_core.config.mcp_servers import ServerConfig
from agent_core.json_types import JsonObject
from agent_core.mcp.connection import McpUnavailable, ServerConnection, read_only_hint
from agent_core.output_digest import bounded
from agent_core.tools.base import ToolContext, ToolInputError, ToolOutcome
from agent_core.tools.external import ExternalToolSpec, usable_schema, valid_name

log = logging.getLogger(__name__)
PREFIX = "mcp__"
MAX_RESULT_CHARS = 8_000
MAX_IMAGES = 2
MAX_IMAGE_BYTES = 2 * 1024 * 1024


def tool_name(server: str, tool: str) -> str:
    return f"{PREFIX}{server}__{tool}"


class McpManager:
    def __init__(self, configs: Callable[[], Mapping[str, ServerConfig]]) -> None:
        self._configs = configs
        self._connections: dict[str, ServerConnection] = {}

    def _synced(self) -> dict[str, ServerConnection]:
        """The connections of the servers configured now; a changed server gets a new connection
        (the old one is stopped in the background)."""
        configs = self._configs()
        for name in list(self._connections):
            conn = self._connections[name]
            if configs.get(name) != conn.config:
                del self._connections[name]
                asyncio.get_running_loop().create_task(conn.stop())
        for name, config in configs.items():
            if name not in self._connections:
                self._connections[name] = ServerConnection(config)
        return self._connections

    def servers(self) -> list[JsonObject]:
        """What GET mcp/servers answers: status, error and tools, never env or header values."""
        return [conn.public() for conn in self._synced().values()]

    async def tools_for_run(
        self, disabled: Iterable[str], taken: frozenset[str], auto_approve: frozenset[str]
    ) -> tuple[dict[str, ExternalToolSpec], list[str]]:
        """The tools of every enabled server (started now if need be), and notes for the model about
        the servers that failed and the tools left out."""
        off = set(disabled)
        connections = [c for name, c in self._synced().items() if name not in off and not c.config.disabled]
        results = await asyncio.gather(*(c.ensure() for c in connections), return_exceptions=True)
        specs: dict[str, ExternalToolSpec] = {}
        notes: list[str] = []
        for conn, result in zip(connections, results, strict=False):
            if isinstance(result, BaseException):
                notes.append(
                    str(result) if isinstance(result, McpUnavailable) else f"MCP server {conn.config.name!r}: {result}"
                )
                continue
            for tool in conn.tools:
                name = tool_name(conn.config.name, str(tool.name))
                problem = valid_name(name, taken | specs.keys())
                schema, why = usable_schema(tool.input_schema) if not problem else (None, problem)
                if schema is None:
                    notes.append(f"The MCP tool {str(tool.name)[:80]!r} of {conn.config.name!r} was left out: {why}.")
                    continue
                specs[name] = _spec(conn, tool, name, schema, name in auto_approve)
        return specs, notes

    async def shutdown(self) -> None:
        await asyncio.gather(*(c.stop() for c in self._connections.values()), return_exceptions=True)
        self._connections.clear()


def _spec(conn: ServerConnection, tool: Any, name: str, schema: JsonObject, auto: bool) -> ExternalToolSpec:
    server, remote = conn.config.name, str(tool.name)
    origin = {"kind": "mcp", "server": server, "tool": remote, "read_only_hint": read_only_hint(tool)}

    async def call(args: JsonObject, ctx: ToolContext) -> ToolOutcome:
        try:
            result = await conn.call(remote, args)
        except McpUnavailable as exc:
            raise ToolInputError(str(exc)) from None
        outcome = result_outcome(result)
        # A result that echoes a configured secret (a server printing its token) does not reach the model or the log.
        return dataclasses.replace(outcome, content=conn.scrub(outcome.content), summary=conn.scrub(outcome.summary))

    description = f"[MCP server {server}] {tool.description or remote}"
    return ExternalToolSpec.make(name, description, schema, origin, call, auto_approvable=auto)


def result_outcome(result: object) -> ToolOutcome:
    """A CallToolResult as what the model is told: text parts joined and bounded, images kept for
    vision models (a few, small) and described, resources by their text or their address."""
    parts: list[str] = []
    images: list[dict[str, str]] = []
    for block in getattr(result, "content", None) or []:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(bounded(block.text, MAX_RESULT_CHARS))
        elif kind in ("image", "audio"):
            size = len(block.data) * 3 // 4
            parts.append(f"[{kind}: {block.mime_type}, about {size} bytes]")
            if kind == "image" and len(images) < MAX_IMAGES and size <= MAX_IMAGE_BYTES and _is_base64(block.data):
                images.append({"mime": block.mime_type, "data": block.data})
        elif kind == "resource":
            resource = block.resource
            text = getattr(resource, "text", None)
            parts.append(
                f"[resource {resource.uri}]\n{bounded(text, MAX_RESULT_CHARS)}"
                if text is not None
                else f"[binary resource {resource.uri}]"
            )
        elif kind == "resource_link":
            parts.append(f"[resource link: {block.uri}]")
    structured = getattr(result, "structured_content", None)
    if not parts and structured is not None:
        parts.append(bounded(json.dumps(structured, default=str), MAX_RESULT_CHARS))
    text = bounded("\n".join(parts), MAX_RESULT_CHARS) if parts else "(the tool returned nothing)"
    if getattr(result, "is_error", False):
        return ToolOutcome("error", f"The MCP tool reported an error: {text}", images=tuple(images))
    return ToolOutcome("ok", text, images=tuple(images))


def _is_base64(data: str) -> bool:
    try:
        base64.b64decode(data[:64] + "=" * (-len(data[:64]) % 4), validate=True)
        return True
    except ValueError:
        return False
