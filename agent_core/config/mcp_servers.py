"""The `mcp_servers` setting: name -> {"command", "args", "env"} (stdio) or {"url", "headers"}
(streamable HTTP), checked once with errors that say what to write instead. Env and header values
are secrets: `public_servers` is what may leave the server."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agent_core.config import masked_secrets
from agent_core.config.masked_secrets import MASK as MASK  # the settings form's mask, as callers import it
from agent_core.config.masked_secrets import masked
from agent_core.json_types import JsonObject
from agent_core.redaction import redact_url

SERVER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$")  # "__" is the namespace separator: not in a name
MAX_SERVERS = 32
MAX_ARGS = 100
MAX_VALUE_CHARS = 10_000
OPTIONAL = ("start_timeout", "call_timeout", "disabled")


TOOL_NAME = re.compile(r"^mcp__[A-Za-z0-9][A-Za-z0-9_-]{0,31}__[A-Za-z0-9_.-]{1,64}$")


def is_mcp_tool_name(name: str) -> bool:
    """`mcp__<server>__<tool>`: a name auto_approve may list before the server ever ran."""
    return bool(TOOL_NAME.match(name))


class McpConfigError(ValueError):
    """The mcp_servers setting has a wrong shape; the message names the server and the field."""


@dataclass(frozen=True)
class ServerConfig:
    name: str
    command: str = ""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    url: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    start_timeout: float = 20.0
    call_timeout: float = 120.0
    disabled: bool = False

    @property
    def transport(self) -> str:
        return "http" if self.url else "stdio"

    def public(self) -> JsonObject:
        """Without secrets: the names of env variables and headers, never their values."""
        shown: JsonObject = {
            "transport": self.transport,
            "start_timeout": self.start_timeout,
            "call_timeout": self.call_timeout,
        }
        if self.url:
            shown.update(url=_without_credentials(self.url), headers=masked(self.headers))
        else:
            shown.update(command=self.command, args=list(self.args), env=masked(self.env))
        return {**shown, "disabled": self.disabled}


def _without_credentials(url: str) -> str:
    return redact_url(url)


def _strings(value: object, where: str, limit: int) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or len(value) > limit:
        raise McpConfigError(f"{where} must be an object of strings (at most {limit})")
    for key, item in value.items():
        if not isinstance(key, str) or not isinstance(item, str) or len(item) > MAX_VALUE_CHARS or not key:
            raise McpConfigError(f"{where} must map names to strings of at most {MAX_VALUE_CHARS} characters")
    return dict(value)


def _seconds(value: object, where: str, default: float) -> float:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 3600:
        raise McpConfigError(f"{where} must be a number of seconds between 0 and 3600")
    return float(value)


def server_config(name: str, raw: object) -> ServerConfig:
    where = f"mcp_servers[{name!r}]"
    if not isinstance(name, str) or not SERVER_NAME.match(name) or "__" in name:
        raise McpConfigError(f'{where}: a server name is letters, digits, - and single _ (at most 32), e.g. "github"')
    if not isinstance(raw, Mapping):
        raise McpConfigError(f'{where} must be {{"command", "args", "env"}} or {{"url", "headers"}}')
    allowed = {"command", "args", "env", "url", "headers", *OPTIONAL}
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise McpConfigError(f"{where} has unknown fields {unknown}; it takes {sorted(allowed)}")
    has_command, has_url = bool(raw.get("command")), bool(raw.get("url"))
    if has_command == has_url:
        raise McpConfigError(
            f'{where} needs either "command" (a program to start) or "url" (a streamable-HTTP endpoint)'
        )
    start_timeout = _seconds(raw.get("start_timeout"), f"{where}.start_timeout", ServerConfig.start_timeout)
    call_timeout = _seconds(raw.get("call_timeout"), f"{where}.call_timeout", ServerConfig.call_timeout)
    disabled = bool(raw.get("disabled", False))
    if has_url:
        url = raw["url"]
        if not isinstance(url, str) or not re.match(r"^https?://", url) or len(url) > 2000:
            raise McpConfigError(f"{where}.url must be an http:// or https:// URL")
        if "command" in raw or "args" in raw or "env" in raw:
            raise McpConfigError(f'{where}: "url" goes with "headers", not with "command", "args" or "env"')
        headers = _strings(raw.get("headers"), f"{where}.headers", 50)
        return ServerConfig(
            name, url=url, headers=headers, start_timeout=start_timeout, call_timeout=call_timeout, disabled=disabled
        )
    command, args = raw["command"], raw.get("args") or []
    if not isinstance(command, str) or len(command) > 1000:
        raise McpConfigError(f"{where}.command must be a string: the program to start")
    if (
        not isinstance(args, list)
        or len(args) > MAX_ARGS
        or not all(isinstance(a, str) and len(a) <= MAX_VALUE_CHARS for a in args)
    ):
        raise McpConfigError(f"{where}.args must be a list of strings (at most {MAX_ARGS})")
    if "headers" in raw:
        raise McpConfigError(f'{where}: "headers" go with "url", not with "command"')
    env = _strings(raw.get("env"), f"{where}.env", 100)
    return ServerConfig(
        name,
        command=command,
        args=tuple(args),
        env=env,
        start_timeout=start_timeout,
        call_timeout=call_timeout,
        disabled=disabled,
    )


def parse_servers(raw: object) -> dict[str, ServerConfig]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise McpConfigError(
            'mcp_servers must be an object: server name -> {"command", "args", "env"} or {"url", "headers"}'
        )
    if len(raw) > MAX_SERVERS:
        raise McpConfigError(f"mcp_servers names {len(raw)} servers; at most {MAX_SERVERS}")
    return {name: server_config(name, value) for name, value in raw.items()}


def with_kept_secrets(new: Mapping[str, Any], old: Mapping[str, Any]) -> JsonObject:
    """PUT config from the settings form: masked env and header values kept for the server they were set
    for (agent_core.config.masked_secrets); McpConfigError names the server and the variable or header."""
    try:
        return masked_secrets.with_kept_secrets(new, old, "mcp_servers", "server")
    except masked_secrets.MaskedSecretError as exc:
        raise McpConfigError(str(exc)) from None
