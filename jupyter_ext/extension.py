"""The `cellwright` server extension: the objects it owns, and its settings, held as the
`Cellwright` configurable of agent_core.config.configurable (API.md, "Configuration")."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, cast
from weakref import WeakKeyDictionary

from jupyter_core.utils import ensure_async
from jupyter_server.extension.application import ExtensionApp
from traitlets import Type
from traitlets.config import Config

from agent_core import __version__
from agent_core.config.agent_settings import AgentSettings
from agent_core.config.configurable import Cellwright, SettingsError, load
from agent_core.json_types import JsonObject
from agent_core.storage.database import missing_postgres_extra
from agent_core.storage.thread_store import ThreadStore
from agent_core.workspace import Workspace, default_denied

from .errors import BadRequest, Misconfigured

if TYPE_CHECKING:
    from jupyter_server.serverapp import ServerApp

    from .kernel_clients import MappingKernelManagerProtocol
    from .kernel_executor import KernelEnvironment
    from .mcp_endpoint import McpEndpoint
    from .shared_notebook import SharedNotebookWriter

MAX_SHADOW_KERNELS = 2  # verify_notebook's fresh kernels running at once on one server; more checks wait


class CellwrightApp(ExtensionApp):
    """Named CellwrightApp, not Cellwright: an app's class name is its config section, and
    `c.Cellwright.*` belongs to the settings configurable (`self.configuration`, a child of this app)."""

    name = "cellwright"
    classes = [*ExtensionApp.classes, Cellwright]

    # The app this class loaded into each server: enabled under both names ("cellwright" and the
    # old "jupyter_ext"), the extension must load once (two apps would share one extension point).
    _loaded: ClassVar[WeakKeyDictionary[Any, CellwrightApp]] = WeakKeyDictionary()
    problems: list[dict[str, str]] = []  # what initialize_settings found misconfigured (health names it)

    run_manager_class = Type(
        default_value="jupyter_ext.run_manager.RunManager",
        klass="jupyter_ext.run_manager.RunManager",
        config=True,
        help="The RunManager subclass that owns the runs and their event streams.",
    )

    @classmethod
    def _load_jupyter_server_extension(cls, serverapp: ServerApp) -> CellwrightApp:
        loaded = cls._loaded.get(serverapp)
        if loaded is not None:  # the second name of a double enable: warned about at the first load
            return loaded
        _warn_of_the_old_name(serverapp)
        extension = super()._load_jupyter_server_extension(serverapp)
        cls._loaded[serverapp] = extension
        return extension

    async def _start_jupyter_server_extension(self, serverapp: ServerApp) -> None:
        # Called when `jupyter server` / `jupyter lab` starts its loop; not for a server embedded in
        # another program (pytest-jupyter's), whose SIGINT stays its host's.
        _stop_cleanly_on_sigint(serverapp)

    def initialize_settings(self) -> None:
        try:
            self.configuration = load(parent=self)
        except SettingsError as exc:
            # Loaded without the Jupyter config's Cellwright settings, so that health and the panel say
            # what is wrong (a failed extension answers 404 everywhere and says it only in the log).
            message = f"{exc} Fix it in the Jupyter config or on the command line, then restart the server."
            try:
                self.configuration = load(config=Config())
            except SettingsError:  # also wrong without them (an environment variable): not loaded at all
                raise RuntimeError(f"Cellwright cannot start: {exc}") from None
            self.problems = [{"kind": "settings_invalid", "message": message}]
        missing = missing_postgres_extra(self.configuration.database_url)
        if missing:
            self.problems = [*self.problems, {"kind": "postgres_extra_missing", "message": missing}]
        if self.problems:  # said once here; health names them, every other route answers 503 misconfigured
            self.log.error(
                "Cellwright cannot start, its routes answer 503 until this is fixed: %s",
                " ".join(problem["message"] for problem in self.problems),
            )
        serverapp = self._server()
        # What the agent's file tools and the routes may touch: Jupyter's own hidden-file rule, and
        # never this extension's data folder (API key) nor the runtime folder (kernel keys).
        self.workspace = Workspace(
            Path(serverapp.root_dir),
            allow_hidden=bool(getattr(serverapp.contents_manager, "allow_hidden", False)),
            denied=(Path(self.configuration.data_dir), Path(serverapp.runtime_dir), *default_denied()),
        )
        # The user this server runs for owns the threads it makes, and it sees no one else's.
        self.threads = ThreadStore(
            self.configuration.threads_path,
            owner=self.configuration.owner,
            holder=f"the Jupyter server (pid {os.getpid()})",
            database_url=self.configuration.database_url,
            pool_size=self.configuration.database_pool_size,
            pool_timeout=self.configuration.database_timeout,
        )
        self.run_manager = self.run_manager_class(
            self.threads,
            self.configuration.agent_settings,
            self.kernel_environment,
            self.configuration.database_url,
            self.configuration.checkpoints_path,
            parent=self,
        )
        self._open_lock = asyncio.Lock()
        self._recovery: asyncio.Task[None] | None = None
        # loaded when the server sets the extension up, not by `import jupyter_ext` (extension discovery, `jupyter
        # cellwright mcp`); agent_core's modules load on first use (bench/server_start.py)
        from .kernel_clients import KernelClients
        from .kernel_evaluations import KernelEvaluations

        self.kernel_clients = KernelClients()
        self.kernel_evaluations = KernelEvaluations()
        from .kernel_restarts import KernelRestarts

        self.kernel_restarts = KernelRestarts(getattr(self.serverapp, "event_logger", None))
        self.shadow_slots = asyncio.Semaphore(MAX_SHADOW_KERNELS)  # verify_notebook's kernels at once
        self._mcp: Any = None
        self._mcp_endpoint: McpEndpoint | None = None
        self.run_manager.mcp = self.mcp_manager
        self.shared_cells: SharedNotebookWriter | None = None  # with jupyter-collaboration, from ready() on
        self.settings["cellwright"] = self

    def initialize_handlers(self) -> None:
        from .handlers import default_handlers
        from .mcp_handler import McpHandler

        self.handlers.extend(default_handlers)
        self.handlers.append((r"/cellwright/mcp", McpHandler))

    async def ready(self) -> None:
        """Open the thread store once, on the server's loop (handlers await this first). With a
        misconfiguration found at start, nothing is opened: 503 misconfigured, saying what to do."""
        if self.problems:
            raise Misconfigured(" ".join(problem["message"] for problem in self.problems))
        async with self._open_lock:
            if not self.threads.is_open:
                await self.threads.open()
                self._write_shared_documents()
                self._recovery = asyncio.create_task(self._recover())
                self.knowledge()  # the index builds in the background: nothing here waits for it

    def _write_shared_documents(self) -> None:
        """With jupyter-collaboration loaded (and not disabled), the agent's cells go into the notebooks'
        shared documents from this server (jupyter_ext/shared_notebook.py); the panel then only decorates."""
        from .shared_notebook import SharedNotebookWriter, collaboration_documents

        documents = collaboration_documents(self._server())
        if documents is None:
            return

        async def notebook_of(thread_id: str) -> str | None:
            record = await self.threads.get(thread_id)
            return record.notebook_path if record is not None else None

        contents = self._server().contents_manager

        async def exists(path: str) -> bool:
            try:
                return bool(await ensure_async(contents.file_exists(path)))
            except Exception:  # e.g. a path outside the root: not a notebook to write into
                return False

        self.shared_cells = SharedNotebookWriter(documents, notebook_of, exists)
        self.threads.events.observe(self.shared_cells)
        self.log.info(
            "Cellwright writes the agent's cells into the notebooks' shared documents (jupyter-collaboration)"
        )

    async def _recover(self) -> None:
        try:
            await self.run_manager.recover()
        except Exception:  # a thread that cannot be recovered stays as it is; the others still run
            self.log.exception("Cellwright could not recover the threads a crash left running")

    async def stop_extension(self) -> None:
        if getattr(self, "run_manager", None) is None:  # never initialized: the old name's app, or a failed load
            return
        if "agent_core.knowledge.service" in sys.modules:  # loaded only once the index was used
            from agent_core.knowledge.service import stop_all

            await stop_all()
        if self._recovery is not None:  # recovery opens the checkpointer: let it finish, then close all
            await asyncio.gather(self._recovery, return_exceptions=True)
        if self._mcp_endpoint is not None:  # its sessions end before the runs they wait on
            await self._mcp_endpoint.close()
        acp_host = getattr(self, "acp_host", None)  # jupyter_ext.acp_routes makes it on first use
        if acp_host is not None:  # hosted ACP agents' processes end with the server
            await acp_host.shutdown()
        await self.run_manager.shutdown()
        if self.shared_cells is not None:
            await self.shared_cells.close()
        if self._mcp is not None:  # the MCP servers this server started stop with it
            await self._mcp.shutdown()
        self.kernel_clients.close()
        self.kernel_evaluations.close()
        await self.threads.close()

    # -- what the handlers and the run manager ask for

    def _server(self) -> ServerApp:
        """The server this extension was loaded into (set before initialize_settings runs)."""
        assert self.serverapp is not None, "the extension is used before Jupyter loaded it"
        return self.serverapp

    def kernel_environment(
        self, notebook_path: str, kernel_id: str | None, settings: AgentSettings | None = None
    ) -> KernelEnvironment:
        """The one way a KernelEnvironment is made: for a run (with that run's settings) and for the
        tool routes (with the current ones), so neither can lose the cell time-out or the workspace."""
        from .kernel_executor import KernelEnvironment

        serverapp = self._server()
        cell_timeout = settings.cell_timeout if settings is not None else self.configuration.cell_timeout
        return KernelEnvironment(
            # An AsyncMappingKernelManager (jupyter_server 2's; its methods are awaited), though the trait
            # is annotated with the synchronous MappingKernelManager.
            cast("MappingKernelManagerProtocol", serverapp.kernel_manager),
            serverapp.session_manager,
            Path(serverapp.root_dir),
            notebook_path,
            kernel_id,
            cell_timeout,
            workspace=self.workspace,
            clients=self.kernel_clients,
            evaluations=self.kernel_evaluations,
            restarts=self.kernel_restarts,
            shared=self.shared_cells.cells if self.shared_cells is not None else None,
            shadow_slots=self.shadow_slots,
        )

    def mcp_manager(self) -> Any:
        """The MCP servers' connections, made on first use: the mcp SDK loads only when one is configured and used."""
        if self._mcp is None:
            from agent_core.config.mcp_servers import parse_servers
            from agent_core.mcp.manager import McpManager

            self._mcp = McpManager(lambda: parse_servers(self.configuration.mcp_servers))
        return self._mcp

    def mcp_endpoint(self) -> McpEndpoint:
        """Cellwright's own MCP server for outside agents, made on its first request (c.Cellwright.serve_mcp)."""
        if self._mcp_endpoint is None:
            from .mcp_endpoint import ClientRules, McpEndpoint

            def rules(client: str) -> ClientRules:
                given = self.configuration.client_rules(client)
                auto = given.get("auto_approve")
                return ClientRules(given.get("autonomy", "agent"), tuple(auto) if auto is not None else None)

            self._mcp_endpoint = McpEndpoint(
                self.run_manager,
                lambda: self.workspace,
                self.configuration.agent_settings,
                rules,
                lambda: self.configuration.mcp_approval_wait,
            )
        return self._mcp_endpoint

    def knowledge(self) -> Any:
        """The workspace's knowledge base, started (in the background) on first use; None when indexing is off."""
        if not self.configuration.knowledge_index:
            return None
        from agent_core.knowledge.service import knowledge_base

        base = knowledge_base(self.workspace, self.configuration.data_dir, self.configuration.agent_settings)
        base.start()
        return base

    def apply_changes(self, changes: Any) -> None:
        """PUT config: a change the settings refuse is the client's to fix (400, saying why)."""
        try:
            self.configuration.change(changes)
        except SettingsError as exc:
            raise BadRequest(str(exc)) from None

    def public_config(self) -> JsonObject:
        return self.configuration.public()

    def health(self) -> JsonObject:
        config = self.configuration.public()
        return {
            "version": __version__,
            **{name: config[name] for name in ("model", "tool_calling", "checkpointer")},
            "llm_configured": self.configuration.agent_settings().llm_configured,
            "shared_document": self.shared_cells is not None,
            **({"problems": self.problems} if self.problems else {}),
        }


OLD_NAME = "jupyter_ext"  # the module name an older config enabled


def _stop_cleanly_on_sigint(serverapp: ServerApp) -> None:
    """Without a terminal (JupyterHub's LocalProcessSpawner, a service manager), Jupyter leaves SIGINT to
    Python: a KeyboardInterrupt wherever the main thread is. Landing in a callback that catches it (seen:
    a weakref callback, which printed and dropped it) it stops nothing, and the hub waits 10 s before
    its SIGTERM; landing elsewhere it skips the extensions' stop hooks. Here it becomes what SIGTERM
    is: Jupyter's own clean stop. A handler someone else installed (Jupyter's prompt on a terminal,
    JupyterHub's singleuser) is left as it is."""
    if threading.current_thread() is not threading.main_thread():  # only the main thread sets handlers
        return
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, serverapp._signal_stop)


def _warn_of_the_old_name(serverapp: Any) -> None:
    """One log line when a config still enables the extension under its old name."""
    enabled = {name for name, on in (serverapp.jpserver_extensions or {}).items() if on}
    if OLD_NAME not in enabled:
        return
    if CellwrightApp.name in enabled:
        serverapp.log.warning(
            "Cellwright is enabled twice, as %r and as %r (its old name); it loads once. Remove the old name from "
            "the config: jupyter server extension disable %s",
            CellwrightApp.name,
            OLD_NAME,
            OLD_NAME,
        )
    else:
        serverapp.log.warning(
            "Cellwright is enabled under its old name %r. Enable it as %r instead: jupyter server extension enable %s "
            "&& jupyter server extension disable %s",
            OLD_NAME,
            CellwrightApp.name,
            CellwrightApp.name,
            OLD_NAME,
        )
