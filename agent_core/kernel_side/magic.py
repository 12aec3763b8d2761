"""`%agent` and `%%agent`: Cellwright's agent inside the kernel.

    %load_ext agent_core
    %agent load sales.csv and plot the monthly totals
    %%agent
    a longer request, over several lines

To load it in every kernel, put this in an IPython profile's ipython_config.py (or ipython_kernel_config.py):

    c.InteractiveShellApp.extensions = ["agent_core"]

Options, before the request: `--new` starts a fresh conversation (otherwise the notebook's latest
`%agent` thread continues); `--yes` approves every call the agent asks about, showing what it
approved (also `c.AgentMagics.approve_all = True`, or the environment variable
CELLWRIGHT_MAGIC_AUTO_APPROVE=1 in the kernel's environment when it starts).

What is fixed when the extension loads, so that nothing the agent's cells do later can widen it:
the folder the file and shell tools work in (the Jupyter server's root, else the notebook's
folder; never the directory a later `%cd` moves to) and whether approvals are skipped without
`--yes` (the config and the environment as they were then, not as a cell has set them since).

Everything the model writes is shown as plain text with its control characters made visible
(agent_core.display_text): trusted Markdown or HTML output would run its HTML in the Jupyter page,
and a carriage return or an escape sequence in a proposed cell would hide what really runs.

It is the panel's agent (the same ThreadRunner and graph) with the server's settings (read by
agent_core.config.configurable as the server reads them), and its threads live in the same store, so they
show in the panel's history. The agent's cells run through this kernel's own shell: their variables
land in the user's namespace and their output shows in the `%agent` cell. Approval is asked with
input(): ipywidgets buttons cannot work here, as a click is a kernel message the kernel only handles
once this cell has ended.

Threads: the agent runs in a worker thread with its own event loop (the kernel's loop is busy
running this cell). Whatever touches the shell (cells, evaluations, questions, printing) is queued
to IPython's main thread, which serves the queue until the worker ends (shell_environment.MainThread).
Ctrl-C or the kernel's interrupt stops the worker's task; the thread stays consistent and usable."""

from __future__ import annotations

import asyncio
import logging
import os
import re
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from IPython.core.magic import Magics, line_cell_magic, magics_class
from traitlets import Bool

from agent_core.config.configurable import Cellwright, SettingsError
from agent_core.contract.bodies import StartRun
from agent_core.errors import CellwrightError
from agent_core.json_types import JsonObject
from agent_core.kernel_side.cell_console import DIM, RED, RESET, ApprovalPrompt, ApprovalUnavailable, Printer
from agent_core.kernel_side.session import env_auto_approve, kernel_id, notebook_path, workspace_root
from agent_core.kernel_side.shell_environment import MainThread, ShellEnvironment
from agent_core.undo.book import UndoBook
from agent_core.workspace import Workspace, default_denied

if TYPE_CHECKING:
    from agent_core.loop.thread_runner import ThreadRunner
    from agent_core.storage.thread_store import ThreadRecord, ThreadStore

log = logging.getLogger(__name__)

USAGE = (
    "Usage: %agent [--new] [--yes] <request>   (or %%agent [--new] [--yes] with the request as the cell body); "
    "%agent --rewind <tool call id> goes back to just before that step"
)
OPTIONS = ("--new", "--yes", "--rewind")
TITLE_PREFIX = "%agent: "


@dataclass(frozen=True)
class Session:
    """What one kernel's `%agent` keeps from the moment the extension first loads."""

    root_dir: Path
    notebook_path: str
    kernel_id: str
    approve_all: bool  # from the config and the environment as they were then
    environ: dict[str, str]  # the environment as the kernel started: settings' env fallbacks come from it
    # The kernel's undo records: each %agent call opens a ThreadRunner of its own, while the steps
    # (and their snapshots in this kernel) outlive the call, as the kernel does.
    undo: UndoBook = field(default_factory=UndoBook, compare=False, repr=False)

    @classmethod
    def detect(cls, shell: Any, configured_approve_all: bool) -> Session:
        try:  # the folder the kernel started in: `%cd` before `%load_ext` must not move the root either
            start_dir = shell.history_manager.dir_hist[0]
        except (AttributeError, IndexError, TypeError):
            start_dir = None
        root = workspace_root(start_dir=start_dir)
        environ = dict(os.environ)
        return cls(
            root, notebook_path(root=root), kernel_id(), configured_approve_all or env_auto_approve(environ), environ
        )


_session: Session | None = None  # one per kernel process: a %reload_ext must not recompute it


@magics_class
class AgentMagics(Magics):
    approve_all = Bool(
        False,
        config=True,
        help="Approve every call the agent asks about, as `%agent --yes` does. Env: CELLWRIGHT_MAGIC_AUTO_APPROVE=1. "
        "Read when the extension loads.",
    )

    def __init__(self, shell: object = None, **kwargs: Any) -> None:
        super().__init__(shell=shell, **kwargs)
        global _session
        if _session is None:
            _session = Session.detect(shell, self.approve_all)
        self.session = _session

    @line_cell_magic
    def agent(self, line: str, cell: str | None = None) -> None:
        """Ask Cellwright's agent: `%agent [--new] [--yes] <request>`; with `%%agent` the cell is the request."""
        options, request = _parse(line if cell is None else line.strip() + "\n" + cell)
        if options is None or not request:
            unknown = f"Unknown option {request.split()[0]}. " if options is None else ""
            print(f"{unknown}{USAGE}", file=sys.stderr)
            return
        # the loop (langgraph, openai), MCP, knowledge and rewind modules load when a %agent cell needs them:
        # %load_ext agent_core stays quick and loads no more into the kernel
        from agent_core.config.kernel_config import load_for_kernel

        try:
            settings, notes = load_for_kernel(environ=self.session.environ)
        except SettingsError as exc:
            print(f"{RED}Cellwright: {exc}{RESET}", file=sys.stderr)
            return
        for note in notes:
            print(f"{DIM}Cellwright: {note}{RESET}", file=sys.stderr)
        if not settings.agent_settings().llm_configured:
            from agent_core.llm.failures import not_configured

            print(f"{RED}{not_configured().message}{RESET}", file=sys.stderr)
            return
        approve_all = "--yes" in options or self.session.approve_all
        # The agent's cells run inside this cell, as part of it: they take no history line or
        # execution count of their own (a second entry under this cell's number clashed in
        # IPython's history database).
        call = AgentCall(self.shell, settings, self.session, request, new="--new" in options, approve_all=approve_all)
        call.rewind_to = request.strip() if "--rewind" in options else None
        call.run()


def _parse(text: str) -> tuple[set[str] | None, str]:
    """Leading options and the request; None as options when an option is unknown."""
    options: set[str] = set()
    rest = text.strip()
    while (match := re.match(r"--\S+", rest)) is not None:
        if match.group() not in OPTIONS:
            return None, rest
        options.add(match.group())
        rest = rest[match.end() :].strip()
    return options, rest


class AgentCall:
    """One `%agent` call: the worker thread drives the agent, the main thread serves it."""

    def __init__(
        self, shell: Any, settings: Cellwright, session: Session, request: str, new: bool, approve_all: bool
    ) -> None:
        self.settings = settings
        self.agent_settings = settings.agent_settings()
        self.request = request
        self.new = new
        self.undo = session.undo  # the kernel's, for this call's ThreadRunner
        self.main = MainThread()

        # The data folder may be configured elsewhere than the default: it holds the API key either way.
        workspace = Workspace(session.root_dir, denied=(Path(settings.data_dir), *default_denied()))
        self.env = ShellEnvironment(
            shell=shell,
            main=self.main,
            notebook_path=session.notebook_path,
            kernel_id=session.kernel_id,
            root_dir=session.root_dir,
            workspace=workspace,
            long_after=self.agent_settings.background_after,
        )
        self.printer = Printer()
        self.prompt = ApprovalPrompt(self.printer, approve_all)
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[Any] | None = None
        self._stop_requested = False
        self._failure: BaseException | None = None
        self.rewind_to: str | None = None  # %agent --rewind <tool call id>: go back, ask nothing

    # -- the main thread

    def run(self) -> None:
        worker = threading.Thread(target=self._work, name="cellwright-agent", daemon=True)
        worker.start()
        stopped = False
        while True:
            try:
                self.main.serve(worker.is_alive)
                break
            except KeyboardInterrupt:
                if stopped:  # a second Ctrl-C: stop waiting; the worker ends on its own
                    self.printer.note("Stopped waiting: the agent is still shutting down in the background.")
                    break
                stopped = True
                self.main.stopping = True
                self._stop_worker()
        self.printer.end_line()
        if self._failure is not None:
            self.printer.error(f"Cellwright failed: {type(self._failure).__name__}: {self._failure}")
        if stopped:
            print("Stopped.", flush=True)

    def _stop_worker(self) -> None:
        with self._lock:
            self._stop_requested = True
            if self._loop is not None and self._task is not None:
                try:
                    self._loop.call_soon_threadsafe(self._task.cancel)
                except RuntimeError:  # its loop has closed: it is done
                    pass

    # -- the worker thread

    def _work(self) -> None:
        try:
            asyncio.run(self._main())
        except asyncio.CancelledError:
            pass
        except BaseException as exc:  # a bug, or a store that cannot be opened: said in the cell
            log.exception("%agent failed")
            self._failure = exc

    async def _main(self) -> None:
        with self._lock:
            self._loop, self._task = asyncio.get_running_loop(), asyncio.current_task()
            if self._stop_requested:
                return
        from agent_core.loop.thread_runner import ThreadRunner
        from agent_core.storage.thread_store import ThreadStore

        # Opened and closed within this call: the server uses the same files, and an open aiosqlite
        # connection would keep a thread alive in the kernel. MCP servers likewise start on this
        # call's first use of one and stop with it.
        # The kernel's user (JUPYTERHUB_USER, else the OS user, as the kernel started) owns its
        # threads: the same user's server shows them in the panel.
        threads = ThreadStore(
            self.settings.threads_path,
            owner=self.settings.owner,
            holder=f"a %agent call in a kernel (pid {os.getpid()})",
            database_url=self.settings.database_url,
            pool_size=self.settings.database_pool_size,
            pool_timeout=self.settings.database_timeout,
        )
        mcp: Any = None

        def mcp_manager() -> Any:
            nonlocal mcp
            if mcp is None:
                from agent_core.config.mcp_servers import parse_servers
                from agent_core.mcp.manager import McpManager

                mcp = McpManager(lambda: parse_servers(self.settings.mcp_servers))
            return mcp

        try:
            await threads.open()
            runner = await ThreadRunner.open(
                threads,
                self.settings.database_url,
                self.settings.checkpoints_path,
                mcp=mcp_manager,
                undo=self.undo,
            )
            try:
                await self._converse(runner)
            finally:
                await runner.aclose()
                if mcp is not None:
                    await mcp.shutdown()
                if "agent_core.knowledge.service" in sys.modules:  # search_knowledge started its watcher on this loop
                    from agent_core.knowledge.service import stop_all

                    await stop_all()
        finally:
            await threads.close()

    async def _converse(self, runner: ThreadRunner) -> None:
        """Start the run, then resume it with each decision asked on the main thread, until it ends."""
        from agent_core.loop.refusals import RunRefused
        from agent_core.loop.thread_view import pending_approval

        record = await self._thread(runner.threads)
        if record is None:
            self.main.post(self.printer.error, "This notebook has no %agent conversation to go back in.")
            return
        thread_id = record.thread_id
        environment = lambda _record: self.env  # noqa: E731 (the cells run in this kernel, whatever the record says)
        try:
            await runner.ensure_not_leased(thread_id, "ask here (or use %agent --new)")
            snapshot = await runner.recovered(record, environment, self.agent_settings)
            if pending_approval(snapshot):
                await runner.stop_pending(thread_id, record.last_run_id)
                self.main.post(
                    self.printer.note, "A call an earlier %agent left waiting for approval was stopped; it did not run."
                )
            if self.rewind_to is not None:
                await self._rewind(runner, thread_id, self.rewind_to)
                return
            request = StartRun(message=self.request, notebook_path=record.notebook_path)
            run = await runner.start(thread_id, request, environment, self.agent_settings, on_event=self._show)
        except RunRefused as exc:
            self.main.post(self.printer.error, exc.message)
            return
        while await run.drive() == "awaiting_approval":
            pending = pending_approval(await runner.snapshot(thread_id))
            if pending is None:
                return
            try:
                decision = await self.main.call(self.prompt.ask, pending)
                run = await runner.resume(
                    thread_id, pending["id"], decision, environment, self.agent_settings, on_event=self._show
                )
            except asyncio.CancelledError:
                await runner.stop_pending(thread_id, run.run_id)
                raise
            except (ApprovalUnavailable, CellwrightError) as exc:
                await runner.stop_pending(thread_id, run.run_id)
                self.main.post(self.printer.error, str(exc))
                return

    async def _rewind(self, runner: ThreadRunner, thread_id: str, call_id: str) -> None:
        """Go back to just before step `call_id` of the notebook's %agent thread (agent_core.rewind.rewind):
        kernel variables, files and conversation; the magic's cells are the user's own, so they stay."""
        from agent_core.contract.rewind import RewindRequest
        from agent_core.loop.branches import NoSuchStep
        from agent_core.rewind.rewind import rewind

        try:
            done = await rewind(runner, thread_id, self.env, RewindRequest(to=call_id[:200], notebook="keep"))
        except NoSuchStep as exc:
            self.main.post(self.printer.error, f"Cannot go back: {exc}.")
            return
        parts = [f"Went back over {len(done.steps)} step(s)"]
        parts += [f"restored {', '.join(done.restored)}"] if done.restored else []
        parts += [f"deleted {', '.join(done.removed)}"] if done.removed else []
        parts += [f"files put back: {', '.join(done.files_reverted)}"] if done.files_reverted else []
        parts += [f"not reversible: {n.tool_call_id}: {n.why}" for n in done.not_reversible]
        self.main.post(self.printer.note, "; ".join(parts) + ". The next %agent continues from there.")

    async def _thread(self, threads: ThreadStore) -> ThreadRecord | None:
        """The notebook's latest `%agent` thread, or a new one (--new, or none yet); --rewind: None
        rather than a new one."""
        from agent_core.loop.thread_view import title_from

        path = self.env.notebook_path
        mine = [
            r for r in await threads.list() if r.notebook_path == path and r.title.startswith(TITLE_PREFIX)
        ]  # newest first
        if self.rewind_to is not None and not mine:
            return None
        record = (
            mine[0]
            if mine and (not self.new or self.rewind_to is not None)
            else await threads.create(path, TITLE_PREFIX + title_from(self.request))
        )
        if self.env.kernel_id and record.kernel_id != self.env.kernel_id:
            await threads.update(
                record.thread_id, kernel_id=self.env.kernel_id
            )  # for the panel, should it continue here
        return record

    def _show(self, event: JsonObject) -> None:
        self.main.post(self.printer.show, event)


_QUESTION = re.compile(r"^(\s*)%agent\b(.*\?)\s*$")


def keep_question_marks(lines: list[str]) -> list[str]:
    """IPython reads a line ending in `?` as a help request (`%agent why?` shows help on `why`):
    this input transformer turns such `%agent` lines into the magic's call first."""
    if lines and lines[0].lstrip().startswith("%%"):
        return lines  # a cell magic's body is its own business

    def call(line: str) -> str:
        match = _QUESTION.match(line.rstrip("\n"))
        if match is None:
            return line
        return f"{match[1]}get_ipython().run_line_magic('agent', {match[2].strip()!r})" + line[len(line.rstrip("\n")) :]

    return [call(line) for line in lines]


def load_ipython_extension(ipython: Any) -> None:
    ipython.register_magics(AgentMagics)
    ipython.input_transformers_cleanup.append(keep_question_marks)


def unload_ipython_extension(ipython: Any) -> None:
    manager = ipython.magics_manager
    for kind in ("line", "cell"):
        manager.magics[kind].pop("agent", None)
    manager.registry.pop("AgentMagics", None)
    if keep_question_marks in ipython.input_transformers_cleanup:
        ipython.input_transformers_cleanup.remove(keep_question_marks)
