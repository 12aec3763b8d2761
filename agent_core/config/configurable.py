"""Every Cellwright setting, once: the traitlets configurable `Cellwright` of API.md.

The server extension holds one (`c.Cellwright.model = ...` in jupyter_server_config.py,
`--Cellwright.model=...` on the command line); the `%agent` magic builds one from the same Jupyter
config files with traitlets' own loader (agent_core.config.kernel_config). Both then apply what PUT
config saved (agent_core.config.saved_settings); the agent gets an immutable AgentSettings snapshot."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import fields
from pathlib import Path
from typing import Any, get_args

from jupyter_core.paths import jupyter_data_dir
from traitlets import Bool, Dict, Enum, Float, Int, TraitError, Unicode, default, validate
from traitlets.config import LoggingConfigurable

from agent_core.config import saved_settings as settings_file
from agent_core.config.acp_agents import AcpAgentSettings
from agent_core.config.agent_settings import AgentSettings, ToolCalling, Vision, endpoint_of
from agent_core.config.completion_settings import CompletionSettings
from agent_core.config.data_policy_settings import DataPolicySettings
from agent_core.config.endpoint_keys import EndpointKeys, read_saved_keys
from agent_core.config.mcp_endpoint_settings import McpEndpointSettings
from agent_core.config.sandbox_settings import SandboxSettings  # issue 37
from agent_core.config.storage_settings import StorageSettings
from agent_core.config.string_list import StringList
from agent_core.json_types import JsonObject
from agent_core.redaction import SECRET_PARAMS, redact_url

_AGENT = AgentSettings()  # the defaults of the settings the agent reads live there, with their types


class SettingsError(ValueError):
    """A setting given a value it cannot take; the message names the setting and what it accepts."""


class Cellwright(
    LoggingConfigurable,
    EndpointKeys,
    McpEndpointSettings,
    DataPolicySettings,
    CompletionSettings,
    SandboxSettings,
    AcpAgentSettings,
    StorageSettings,
):
    """Cellwright's settings. Tagged `runtime=True`: PUT config may change it at run time (saved in
    <data_dir>/settings.json, which wins over the config files). Tagged `env=...`: the environment
    variable that fills it in when no config sets it."""

    model = Unicode(help="Model name sent to the endpoint. Env: CELLWRIGHT_MODEL.").tag(
        config=True, runtime=True, env="CELLWRIGHT_MODEL"
    )
    base_url = Unicode(help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1. Env: OPENAI_BASE_URL.").tag(
        config=True, runtime=True, env="OPENAI_BASE_URL"
    )
    api_key = Unicode(
        help="API key for the endpoint; may be empty for local servers. Env: OPENAI_API_KEY. A key belongs to the "
        "endpoint (scheme, host and port) of the base_url set beside it (c.Cellwright.base_url for this one, "
        "OPENAI_BASE_URL for the environment's; api.openai.com when that is unset) and is never sent to another. "
        "PUT config keeps one key per endpoint.",
    ).tag(config=True, runtime=True, env="OPENAI_API_KEY")
    tool_calling = Enum(
        list(get_args(ToolCalling.__value__)),
        _AGENT.tool_calling,
        help="native function calling, tools described in the prompt, or auto (native, prompt if the server "
        "refuses tools). Env: CELLWRIGHT_TOOL_CALLING.",
    ).tag(config=True, runtime=True, env="CELLWRIGHT_TOOL_CALLING")
    auto_approve = StringList(help="Tool names that run without asking. Default: none of the risky ones.").tag(
        config=True, runtime=True
    )
    prices = Dict(
        help='Price per million tokens by model name, e.g. {"gpt-4o": {"prompt": 2.5, "completion": 10}}: threads then '
        "show a cost. A model without a price shows tokens only.",
    ).tag(config=True, runtime=True)
    mcp_servers = Dict(
        help="MCP servers whose tools the agent may use (each call asks for approval unless its name, "
        '"mcp__<server>__<tool>", is in auto_approve): name -> {"command", "args", "env"} for a program spoken to '
        'over stdio, or {"url", "headers"} for a streamable-HTTP endpoint; optional "start_timeout", "call_timeout" '
        '(seconds) and "disabled". Env and header values are secrets: never shown.',
    ).tag(config=True, runtime=True)
    auto_approve_notebook_tools = StringList(
        help="Functions the notebook registers with @tool(read_only=True) that run without asking, by name."
    ).tag(config=True)
    max_model_calls = Int(
        _AGENT.max_model_calls,
        allow_none=True,
        min=1,
        help="Model calls per run before the agent stops with a final answer. Default: 30 single, 50 multi-agent.",
    ).tag(config=True)
    command_timeout = Float(_AGENT.command_timeout, help="Seconds before a shell command is killed.").tag(config=True)
    cell_timeout = Float(
        _AGENT.cell_timeout, allow_none=True, help="Seconds before a cell is interrupted; no cap by default."
    ).tag(config=True)
    background_after = Float(
        _AGENT.background_after,
        min=0,
        help="Seconds an approved cell may run before it goes on in the background: the run then ends as "
        "waiting_for_cell (no model calls, the thread free) and resumes by itself when the cell ends. 0: never.",
    ).tag(config=True)
    request_timeout = Float(_AGENT.request_timeout, help="Seconds to wait for the LLM's next streamed chunk.").tag(
        config=True
    )
    connect_timeout = Float(_AGENT.connect_timeout, help="Seconds to wait for a connection to the LLM endpoint.").tag(
        config=True
    )
    response_timeout = Float(
        _AGENT.response_timeout, help="Seconds a whole model reply may take, however it trickles in."
    ).tag(config=True)
    max_reply_tokens = Int(
        _AGENT.max_reply_tokens,
        allow_none=True,
        min=16,
        help="Tokens one model reply may have (sent as max_tokens). Default: none, the endpoint's own limit. "
        "A small local model can ramble until its context window is full, minutes on a laptop: a few hundred "
        "to a few thousand end such a reply; the answer then says it was cut.",
    ).tag(config=True)
    max_retries = Int(
        _AGENT.max_retries, min=0, help="Retries (with backoff) of a model call after 429, 5xx or a dropped connection."
    ).tag(config=True)
    context_token_budget = Int(
        _AGENT.context_token_budget,
        min=1,
        help="Estimated tokens of history sent to the model; older turns are summarised beyond it.",
    ).tag(config=True)
    namespace_snapshot = Bool(
        _AGENT.namespace_snapshot,
        help="Start each run without @mentions with a short list of the kernel's variables (names, types, shapes).",
    ).tag(config=True)
    vision = Enum(
        list(get_args(Vision.__value__)),
        _AGENT.vision,
        help="Image outputs of cells go to the model as images: on, off, or auto (on until the endpoint refuses "
        "images, then off for the rest of the thread).",
    ).tag(config=True)
    max_images = Int(_AGENT.max_images, min=0, help="Images sent to the model in one request at most.").tag(config=True)
    undo_snapshot_limit_mb = Int(
        _AGENT.undo_snapshot_limit_mb,
        min=0,
        help="MB of kernel memory kept for undo snapshots, in all; a step whose changed variables are larger cannot be "
        "undone (0: no snapshots, nothing is undoable).",
    ).tag(config=True)
    data_dir = Unicode(help="Where threads, checkpoints and runtime settings are kept.").tag(config=True)
    knowledge_index = Bool(
        _AGENT.knowledge_index,
        help="Index the workspace's documents (Markdown, reST, text, notebooks, docstrings) for search_knowledge, "
        "kept fresh by a file watcher. The index lives in data_dir.",
    ).tag(config=True)
    embedding_model = Unicode(
        help="An embedding model of the endpoint (its /embeddings): search_knowledge then combines embeddings "
        "(kept in Qdrant's local mode; pip install cellwright[knowledge]) with BM25. Empty: BM25 only.",
    ).tag(config=True)
    databases = Dict(
        value_trait=Unicode(),
        help='Databases sql_query may use: name -> SQLAlchemy URL, e.g. {"sales": "postgresql://user:pw@host/db"}. '
        "Credentials in the URLs are never shown or logged.",
    ).tag(config=True)
    sql_allow_writes = Bool(
        _AGENT.sql_allow_writes,
        help="Let sql_query run statements other than SELECT/WITH (still only after approval). Off by default.",
    ).tag(config=True)

    def __init__(self, environ: Mapping[str, str] | None = None, **kwargs: Any) -> None:
        # The magic passes the environment as the kernel started with it: a cell (the agent's too)
        # that sets OPENAI_BASE_URL later must not move the agent to another endpoint.
        self._environ = os.environ if environ is None else environ
        self._saved_keys: dict[str, str] = {}  # endpoint -> key, as PUT config saved them ("" for "none")
        super().__init__(**kwargs)

    # -- environment defaults: used only when no config sets the trait

    @default("model")
    def _default_model(self) -> str:
        return self._env("model")

    @default("base_url")
    def _default_base_url(self) -> str:
        return self._env("base_url")

    @default("api_key")
    def _default_api_key(self) -> str:
        return self._env("api_key")

    @default("tool_calling")
    def _default_tool_calling(self) -> str:
        return self._env("tool_calling") or _AGENT.tool_calling

    @default("data_dir")
    def _default_data_dir(self) -> str:
        return str(Path(jupyter_data_dir()) / "cellwright")

    # -- validation beyond the trait types

    @validate("auto_approve")
    def _known_tools(self, proposal: Any) -> list[str]:
        # loaded on first use: this module is read at the server's start (bench/server_start.py) and at %load_ext agent_core
        from agent_core.config.mcp_servers import is_mcp_tool_name
        from agent_core.contract.tool_names import TOOL_NAMES

        unknown = sorted(name for name in set(proposal.value) - set(TOOL_NAMES) if not is_mcp_tool_name(name))
        if unknown:
            raise TraitError(
                f"auto_approve names unknown tools {unknown}; the tools are {list(TOOL_NAMES)} and MCP tools as mcp__<server>__<tool>."
            )
        return list(proposal.value)

    @validate("prices")
    def _prices(self, proposal: Any) -> dict[str, dict[str, float]]:
        checked: dict[str, dict[str, float]] = {}
        for model, price in proposal.value.items():
            if not isinstance(price, Mapping) or set(price) != {"prompt", "completion"}:
                raise TraitError(
                    f'prices[{model!r}] must be {{"prompt": <number>, "completion": <number>}} (per million tokens).'
                )
            values = {part: price[part] for part in ("prompt", "completion")}
            if not all(
                isinstance(v, int | float) and not isinstance(v, bool) and 0 <= v < 1e9 for v in values.values()
            ):
                raise TraitError(f"prices[{model!r}] must hold numbers of 0 or more.")
            checked[str(model)] = {part: float(v) for part, v in values.items()}
        return checked

    @validate("mcp_servers")
    def _mcp_servers(self, proposal: Any) -> JsonObject:
        from agent_core.config.mcp_servers import McpConfigError, parse_servers

        try:
            parse_servers(proposal.value)
        except McpConfigError as exc:
            raise TraitError(str(exc)) from None
        return dict(proposal.value)

    @validate("auto_approve_notebook_tools")
    def _notebook_tool_names(self, proposal: Any) -> list[str]:
        bad = [name for name in proposal.value if not name.isidentifier()]
        if bad:
            raise TraitError(f"auto_approve_notebook_tools takes Python function names, not {bad}.")
        return list(proposal.value)

    @validate(
        "command_timeout", "cell_timeout", "request_timeout", "connect_timeout", "response_timeout", "database_timeout"
    )
    def _positive_seconds(self, proposal: Any) -> float | None:
        if proposal.value is not None and proposal.value <= 0:
            raise TraitError(f"{proposal.trait.name} must be more than 0 seconds, not {proposal.value}.")
        return proposal.value

    # -- what the rest of Cellwright reads

    @classmethod
    def runtime_names(cls) -> list[str]:
        """The settings PUT config may change."""
        return list(cls.class_traits(runtime=True))

    @property
    def threads_path(self) -> Path:
        return Path(self.data_dir) / "threads.sqlite"

    @property
    def checkpoints_path(self) -> Path:
        return Path(self.data_dir) / "checkpoints.sqlite"

    @property
    def settings_path(self) -> Path:
        return Path(self.data_dir) / "settings.json"

    def agent_settings(self) -> AgentSettings:
        """What the agent of one run reads: a snapshot, so a PUT config during a run changes the next.
        Its api_key is the key of base_url's endpoint, none when that endpoint has none."""
        values = {f.name: getattr(self, f.name) for f in fields(AgentSettings)}
        return AgentSettings(
            **{
                **values,
                "auto_approve": frozenset(values["auto_approve"]),
                "databases": dict(values["databases"]),
                "auto_approve_notebook_tools": tuple(values["auto_approve_notebook_tools"]),
                "mcp_servers": dict(values["mcp_servers"]),
                "sandbox_limits": dict(values["sandbox_limits"]),
                "api_key": self.key_for(self.base_url),
            }
        )

    def trial_settings(self, form: Mapping[str, Any]) -> AgentSettings:
        """The settings form's "Test connection": its unsaved model, base_url and api_key over the
        settings. The endpoint tried gets the key typed with it, else its own kept key: never the key
        of another endpoint."""
        base_url = form.get("base_url", self.base_url)
        api_key = form["api_key"] if "api_key" in form else self.key_for(base_url)
        return self.agent_settings().with_overrides(**{**form, "base_url": base_url, "api_key": api_key})

    def public(self) -> JsonObject:
        """The settings as GET config answers them: never the API key, nor credentials in a URL."""
        from agent_core.config.database_url import checkpointer_kind

        return {
            "model": self.model,
            "base_url": redact_url(self.base_url),
            "api_key_set": bool(self.key_for(self.base_url)),
            "api_keys_set": [redact_url(endpoint) for endpoint in self.endpoints_with_keys()],
            "tool_calling": self.tool_calling,
            "auto_approve": list(self.auto_approve),
            "max_model_calls": self.max_model_calls,
            "command_timeout": self.command_timeout,
            "cell_timeout": self.cell_timeout,
            "checkpointer": checkpointer_kind(self.database_url),
            "prices": dict(self.prices),
            "mcp_servers": self.public_mcp_servers(),
            "acp_agents": self.public_acp_agents(),
            "context_token_budget": self.context_token_budget,
            "databases": {name: redact_url(url) for name, url in self.databases.items()},
            "embedding_model": self.embedding_model,
            "sources": self.sources(),
        }

    def public_mcp_servers(self) -> JsonObject:
        from agent_core.config.mcp_servers import parse_servers

        return {name: server.public() for name, server in parse_servers(self.mcp_servers).items()}

    def sources(self) -> dict[str, str]:
        """Where each editable setting's value comes from, for the settings form."""
        saved = settings_file.read(self.settings_path)
        configured = self.config.get("Cellwright", {})
        found = {}
        for name in self.runtime_names():
            env = self.traits()[name].metadata.get("env")
            if name == "api_key":  # the key of the current endpoint
                found[name] = self._key_and_source(endpoint_of(self.base_url))[1]
            elif name in saved:
                found[name] = "settings"
            elif name in configured:
                found[name] = "config"
            elif env and self._environ.get(env):
                found[name] = "environment"
            else:
                found[name] = "default"
        return found

    # -- changes at run time

    def change(self, changes: Mapping[str, Any]) -> None:
        """PUT config: every change or none (a bad value changes nothing), then saved for the next
        start and for the magic. Raises SettingsError saying what to send instead."""
        editable = self.runtime_names()
        if not isinstance(changes, Mapping) or not changes:
            raise SettingsError(f"Send a JSON object with any of {editable}.")
        unknown = sorted(set(changes) - set(editable))
        if unknown:
            raise SettingsError(f"Unknown settings {unknown}; editable ones are {editable}.")
        if "api_key" in changes and not isinstance(changes["api_key"], str):
            raise SettingsError("api_key must be a string (empty: no key for this endpoint).")
        if "mcp_servers" in changes and isinstance(changes["mcp_servers"], Mapping):
            from agent_core.config.mcp_servers import (  # the form sends back masked secrets it could not read
                McpConfigError,
                with_kept_secrets,
            )

            try:
                changes = {**changes, "mcp_servers": with_kept_secrets(changes["mcp_servers"], self.mcp_servers)}
            except McpConfigError as exc:
                raise SettingsError(str(exc)) from None
        if "acp_agents" in changes:  # its env values come back masked too
            try:
                changes = {**changes, "acp_agents": self.acp_agents_from_form(changes["acp_agents"])}
            except TraitError as exc:
                raise SettingsError(str(exc)) from None
        try:
            with self.hold_trait_notifications():  # rolls back the earlier changes when a later one fails
                for name, value in changes.items():
                    if name != "api_key":  # the key is not the trait (that is the config's): it goes with its endpoint
                        setattr(self, name, value)
        except TraitError as exc:
            raise SettingsError(str(exc)) from None
        if "api_key" in changes:  # the key of the endpoint in effect after this change
            self._saved_keys[endpoint_of(self.base_url)] = changes["api_key"]
        saved = settings_file.read(self.settings_path)
        values = {**saved, **{name: getattr(self, name) for name in changes if name != "api_key"}}
        values.pop("api_key", None)  # an older file's single key is in _saved_keys, with its endpoint
        if self._saved_keys:
            values["api_keys"] = dict(self._saved_keys)
        settings_file.write(self.settings_path, values)

    def apply_saved(self) -> None:
        """Take what PUT config saved over the config files. A saved value that is no longer valid
        (a hand-edited file, a tool since renamed) is skipped with a warning: the config still holds."""
        editable = self.runtime_names()
        saved = settings_file.read(self.settings_path)
        # before base_url changes: an older key may take the configured one
        self._saved_keys = read_saved_keys(saved, self.settings_path, self.base_url, self.log)
        for name, value in saved.items():
            if name not in editable or name == "api_key":
                continue
            try:
                setattr(self, name, value)
            except TraitError as exc:
                self.log.warning("Cellwright: %s in %s was ignored: %s", name, self.settings_path, exc)

    def check(self) -> None:
        """Compute every setting now, so that a bad value (from an environment variable, whose
        defaults are computed on first use) fails at start with its source, not in the middle of a run."""
        for name, trait in self.traits(config=True).items():
            try:
                getattr(self, name)
            except TraitError as exc:
                env = trait.metadata.get("env")
                source = f" (from the environment variable {env})" if env and self._environ.get(env) else ""
                raise SettingsError(f"Cellwright.{name}{source}: {exc}") from None


def load(**kwargs: Any) -> Cellwright:
    """A checked Cellwright from `kwargs` (parent= for the server's, config= for the kernel's) with
    what PUT config saved over it. Raises SettingsError for a value the config files set wrong."""
    try:
        settings = Cellwright(**kwargs)
    except TraitError as exc:  # raised while the config is applied: a config file set it
        raise SettingsError(f"The Jupyter config sets a Cellwright setting wrong: {_without_value(exc)}") from None
    settings.check()
    settings.apply_saved()
    return settings


def _without_value(exc: TraitError) -> str:
    """traitlets' type errors end with the value given ("..., not the int 1234."); a secret's (api_key)
    value is left out, as this message reaches health and the log. Its type stays."""
    message = str(exc)
    named = re.match(r"The '(\w+)' trait", message)
    if named is None or not SECRET_PARAMS.search(named.group(1)):
        return message
    return re.sub(r", not the (\w+) .*\Z", r", not a value of type \1.", message, flags=re.S)
