"""The `Cellwright` server extension: its configuration traits (API.md) and the objects it owns."""
from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from jupyter_core.paths import jupyter_data_dir
from jupyter_server.extension.application import ExtensionApp
from traitlets import Enum, Float, Int, List, Unicode, default

from agent_core.checkpoint import checkpointer_kind
from agent_core.settings import AgentSettings
from agent_core.thread_store import ThreadStore

from .settings_store import SettingsStore

__version__ = "0.1.0"


def _env(name: str) -> str:
    return os.environ.get(name, "")


class Cellwright(ExtensionApp):
    name = "cellwright"

    model = Unicode(config=True, help="Model name sent to the endpoint. Env: CELLWRIGHT_MODEL.")
    base_url = Unicode(config=True, help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1. Env: OPENAI_BASE_URL.")
    api_key = Unicode(config=True, help="API key for the endpoint; may be empty for local servers. Env: OPENAI_API_KEY.")
    tool_calling = Enum(
        ["native", "prompt", "auto"], config=True,
        help="native function calling, tools described in the prompt, or auto (native, prompt if the server refuses tools). "
        "Env: CELLWRIGHT_TOOL_CALLING.",
    )
    auto_approve = List(Unicode(), config=True, help="Tool names that run without asking. Default: none of the risky ones.")
    checkpointer_url = Unicode(config=True, help="'' for SQLite in the data directory, a file path, 'memory', or postgresql://... Env: CELLWRIGHT_CHECKPOINTER_URL.")
    max_model_calls = Int(
        None, allow_none=True, config=True,
        help="Model calls per run before the agent stops with a final answer. Default: 30 single, 50 multi-agent.",
    )
    command_timeout = Float(120.0, config=True, help="Seconds before a shell command is killed.")
    cell_timeout = Float(None, allow_none=True, config=True, help="Seconds before a cell is interrupted; no cap by default.")
    request_timeout = Float(120.0, config=True, help="Seconds to wait for the LLM's next streamed chunk.")
    connect_timeout = Float(10.0, config=True, help="Seconds to wait for a connection to the LLM endpoint.")
    response_timeout = Float(600.0, config=True, help="Seconds a whole model reply may take, however it trickles in.")
    max_retries = Int(3, config=True, help="Retries (with backoff) of a model call after 429, 5xx or a dropped connection.")
    context_token_budget = Int(48_000, config=True, help="Estimated tokens of history sent to the model; older turns are summarised beyond it.")
    data_dir = Unicode(config=True, help="Where threads, checkpoints and runtime settings are kept.")

    @default("model")
    def _default_model(self) -> str:
        return _env("CELLWRIGHT_MODEL")

    @default("base_url")
    def _default_base_url(self) -> str:
        return _env("OPENAI_BASE_URL")

    @default("api_key")
    def _default_api_key(self) -> str:
        return _env("OPENAI_API_KEY")

    @default("tool_calling")
    def _default_tool_calling(self) -> str:
        return _env("CELLWRIGHT_TOOL_CALLING") or "native"

    @default("checkpointer_url")
    def _default_checkpointer_url(self) -> str:
        return _env("CELLWRIGHT_CHECKPOINTER_URL")

    @default("data_dir")
    def _default_data_dir(self) -> str:
        return str(Path(jupyter_data_dir()) / "cellwright")

    def initialize_settings(self) -> None:
        from .kernel_executor import KernelEnvironment
        from .run_manager import RunManager

        data = Path(self.data_dir)
        self.settings_store = SettingsStore(data / "settings.json")
        for name, value in self.settings_store.load().items():
            setattr(self, name, value)
        serverapp = self.serverapp
        from agent_core.workspace import Workspace, default_denied, register_workspace

        # What the agent's file tools and the routes may touch: Jupyter's own hidden-file rule, and
        # never this extension's data folder (API key) nor the runtime folder (kernel keys).
        # Registered, so code that holds only the root (diagnostics, resources) applies it too.
        self.workspace = register_workspace(
            Workspace(
                Path(serverapp.root_dir),
                allow_hidden=bool(getattr(serverapp.contents_manager, "allow_hidden", False)),
                denied=(data, Path(serverapp.runtime_dir), *default_denied()),
            )
        )
        workspace = self.workspace

        def environment(notebook_path: str, kernel_id: str | None, settings: AgentSettings) -> KernelEnvironment:
            return KernelEnvironment(
                serverapp.kernel_manager, serverapp.session_manager, Path(serverapp.root_dir), notebook_path, kernel_id, settings.cell_timeout,
                workspace=workspace,
            )

        self.threads = ThreadStore(data / "threads.sqlite", holder=f"the Jupyter server (pid {os.getpid()})")
        self.run_manager = RunManager(self.threads, self.agent_settings, environment, self.checkpointer_url, data / "checkpoints.sqlite")
        self._open_lock = asyncio.Lock()
        self.settings["cellwright"] = self

    def initialize_handlers(self) -> None:
        from .handlers import default_handlers

        self.handlers.extend(default_handlers)

    async def ready(self) -> None:
        """Open the thread store once, on the server's loop (handlers await this first)."""
        async with self._open_lock:
            if not self.threads.is_open:
                await self.threads.open()
                self._recovery = asyncio.create_task(self._recover())

    async def _recover(self) -> None:
        try:
            await self.run_manager.recover()
        except Exception:  # a thread that cannot be recovered stays as it is; the others still run
            self.log.exception("Cellwright could not recover the threads a crash left running")

    async def stop_extension(self) -> None:
        await self.run_manager.shutdown()
        await self.threads.close()

    # -- settings

    def agent_settings(self) -> AgentSettings:
        return AgentSettings(
            model=self.model,
            base_url=self.base_url,
            api_key=self.api_key,
            tool_calling=self.tool_calling,
            auto_approve=frozenset(self.auto_approve),
            max_model_calls=self.max_model_calls,
            cell_timeout=self.cell_timeout,
            command_timeout=self.command_timeout,
            request_timeout=self.request_timeout,
            connect_timeout=self.connect_timeout,
            response_timeout=self.response_timeout,
            max_retries=self.max_retries,
            context_token_budget=self.context_token_budget,
        )

    def apply_changes(self, changes: dict[str, Any]) -> None:
        for name, value in changes.items():
            setattr(self, name, value)
        self.settings_store.save(changes)

    def public_config(self) -> dict[str, Any]:
        """The settings without secrets: never the API key, nor credentials inside the URL."""
        return {
            "model": self.model,
            "base_url": _without_credentials(self.base_url),
            "api_key_set": bool(self.api_key),
            "tool_calling": self.tool_calling,
            "auto_approve": list(self.auto_approve),
            "max_model_calls": self.max_model_calls,
            "command_timeout": self.command_timeout,
            "cell_timeout": self.cell_timeout,
            "checkpointer": checkpointer_kind(self.checkpointer_url),
        }

    def health(self) -> dict[str, Any]:
        return {
            "version": __version__,
            "model": self.model,
            "tool_calling": self.tool_calling,
            "checkpointer": checkpointer_kind(self.checkpointer_url),
            "llm_configured": self.agent_settings().llm_configured,
        }


def _without_credentials(url: str) -> str:
    parts = urlsplit(url)
    if parts.username or parts.password:
        host = parts.hostname or ""
        netloc = f"{host}:{parts.port}" if parts.port else host
        return urlunsplit(parts._replace(netloc=netloc))
    return url
