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

It is the panel's agent (AgentRuntime and the same graph) with the server's settings (see
kernel_settings), and its threads live in the same store, so they show in the panel's history. The
agent's cells run through this kernel's own shell: their variables land in the user's namespace
and their output shows in the `%agent` cell. Approval is asked with input(): ipywidgets buttons
cannot work here, as a click is a kernel message the kernel only handles once this cell has ended.

Threads: the agent runs in a worker thread with its own event loop (the kernel's loop is busy
running this cell). Whatever touches the shell (cells, evaluations, questions, printing) is queued
to IPython's main thread, which serves the queue until the worker ends (shell_environment.MainThread).
Ctrl-C or the kernel's interrupt stops the worker's task; the thread stays consistent and usable."""
from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import sys
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from IPython.core.magic import Magics, line_cell_magic, magics_class
from traitlets import Bool

from ..display_text import visible
from .kernel_settings import KernelSettings, env_auto_approve, kernel_id, load_settings, notebook_path, workspace_root
from .shell_environment import MainThread, ShellEnvironment

log = logging.getLogger(__name__)

USAGE = "Usage: %agent [--new] [--yes] <request>   (or %%agent [--new] [--yes] with the request as the cell body)"
OPTIONS = ("--new", "--yes")
TITLE_PREFIX = "%agent: "
EDITABLE_ARG = {"run_cell": "code", "execute_command": "command", "write_file": "content"}  # edited as text
# The argument shown as the body of the approval prompt; every other argument is listed under it.
MAIN_ARG = {"run_cell": "code", "execute_command": "command", "write_file": "content", "edit_file": "edits"}
NOT_RUN_ARGS = {"run_cell": ("description",)}  # shown in the prompt's heading already; changes nothing that runs
RED, DIM, RESET = "\x1b[31m", "\x1b[90m", "\x1b[0m"  # 90: grey, which JupyterLab renders (2 it ignores)


@dataclass(frozen=True)
class Session:
    """What one kernel's `%agent` keeps from the moment the extension first loads."""

    root_dir: Path
    notebook_path: str
    kernel_id: str
    approve_all: bool  # from the config and the environment as they were then

    @classmethod
    def detect(cls, shell: Any, configured_approve_all: bool) -> "Session":
        try:  # the folder the kernel started in: `%cd` before `%load_ext` must not move the root either
            start_dir = shell.history_manager.dir_hist[0]
        except (AttributeError, IndexError, TypeError):
            start_dir = None
        root = workspace_root(start_dir=start_dir)
        return cls(root, notebook_path(root=root), kernel_id(), configured_approve_all or env_auto_approve())


_session: Session | None = None  # one per kernel process: a %reload_ext must not recompute it


@magics_class
class AgentMagics(Magics):
    approve_all = Bool(
        False,
        config=True,
        help="Approve every call the agent asks about, as `%agent --yes` does. Env: CELLWRIGHT_MAGIC_AUTO_APPROVE=1. "
        "Read when the extension loads.",
    )

    def __init__(self, shell: Any = None, **kwargs: Any) -> None:
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
        settings = load_settings()
        for problem in settings.problems:
            print(f"{DIM}Cellwright: {problem}{RESET}", file=sys.stderr)
        if not settings.agent.llm_configured:
            from ..llm import not_configured

            print(f"{RED}{not_configured().message}{RESET}", file=sys.stderr)
            return
        approve_all = "--yes" in options or self.session.approve_all
        call = AgentCall(self.shell, settings, self.session, request, new="--new" in options, approve_all=approve_all)
        # This cell's input is in the history under its execution count N; the agent's cells take
        # N+1, N+2... (a second entry under N would clash in the history database). The kernel adds
        # one for this cell when it ends, so that one is taken back here.
        self.shell.execution_count += 1
        try:
            call.run()
        finally:
            self.shell.execution_count -= 1


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

    def __init__(self, shell: Any, settings: KernelSettings, session: Session, request: str, new: bool, approve_all: bool) -> None:
        self.settings = settings
        self.request = request
        self.new = new
        self.main = MainThread()
        from ..workspace import Workspace, default_denied

        # The data folder may be configured elsewhere than the default: it holds the API key either way.
        workspace = Workspace(session.root_dir, denied=(settings.data_dir, *default_denied()))
        self.env = ShellEnvironment(
            shell=shell, main=self.main, notebook_path=session.notebook_path, kernel_id=session.kernel_id,
            root_dir=session.root_dir, workspace=workspace,
        )  # fmt: skip
        self.printer = Printer()
        self.prompt = ApprovalPrompt(self.printer, approve_all)
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[Any] | None = None
        self._stop_requested = False
        self._failure: BaseException | None = None

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
        from ..runner import AgentRuntime
        from ..thread_store import ThreadStore

        # Opened and closed within this call: the server uses the same files, and an open aiosqlite
        # connection would keep a thread alive in the kernel.
        threads = ThreadStore(self.settings.threads_path, holder=f"a %agent call in a kernel (pid {os.getpid()})")
        try:
            await threads.open()
            runtime = await AgentRuntime.open(threads, self.settings.checkpointer_url, self.settings.checkpoints_path)
            try:
                await self._converse(runtime)
            finally:
                await runtime.aclose()
        finally:
            await threads.close()

    async def _converse(self, runtime: Any) -> None:
        from ..graph import new_run_input

        record = await self._thread(runtime.threads)
        if await runtime.threads.leased_elsewhere(record.thread_id):
            self.main.post(self.printer.error, "The panel is running this conversation right now: wait for it, or use %agent --new.")
            return
        snapshot = await runtime.snapshot(record.thread_id)
        if runtime.stuck(snapshot):  # a crash between the model's step and its approval: finish that first
            if await self._drive(runtime, record, None, "") != "completed":
                return
        elif runtime.pending(snapshot):
            await runtime.stop_pending(record.thread_id, record.last_run_id)
            self.main.post(self.printer.note, "A call an earlier %agent left waiting for approval was stopped; it did not run.")
        await self._drive(runtime, record, new_run_input(self.request), self.request)

    async def _thread(self, threads: Any) -> Any:
        """The notebook's latest `%agent` thread, or a new one (--new, or none yet)."""
        from ..runner import title_from

        path = self.env.notebook_path
        mine = [r for r in await threads.list() if r.notebook_path == path and r.title.startswith(TITLE_PREFIX)]  # newest first
        record = mine[0] if mine and not self.new else await threads.create(path, TITLE_PREFIX + title_from(self.request))
        if self.env.kernel_id and record.kernel_id != self.env.kernel_id:
            await threads.update(record.thread_id, kernel_id=self.env.kernel_id)  # for the panel, should it continue here
        return record

    async def _drive(self, runtime: Any, record: Any, graph_input: Any, message: str) -> str:
        """Run segments until the run ends; each approval is asked on the main thread in between
        and resumes the graph as RunManager.decide does."""
        from langgraph.types import Command

        from ..graph import run_context

        thread_id = record.thread_id
        while True:
            run_id = uuid.uuid4().hex

            def make_context(emit: Any) -> Any:
                return run_context(thread_id, self.settings.agent, self.env, runtime.store.ledger, emit, record.notebook_path, "single")

            status = await runtime.run_segment(thread_id, run_id, graph_input, make_context, "single", message, self._show)
            if status != "awaiting_approval":
                return status
            try:
                pending = runtime.pending(await runtime.snapshot(thread_id))
                if pending is None:
                    return status
                decision = await self.main.call(self.prompt.ask, pending)
            except asyncio.CancelledError:
                await runtime.stop_pending(thread_id, run_id)
                raise
            except ApprovalUnavailable as exc:
                await runtime.stop_pending(thread_id, run_id)
                self.main.post(self.printer.error, str(exc))
                return "cancelled"
            graph_input, message = Command(resume={pending["interrupt_id"]: decision}), ""

    def _show(self, event: dict[str, Any]) -> None:
        self.main.post(self.printer.show, event)


class ApprovalUnavailable(Exception):
    """This frontend cannot answer input()."""


class ApprovalPrompt:
    """Asks for a decision on the main thread: a text prompt, answered in the notebook."""

    def __init__(self, printer: "Printer", approve_all: bool) -> None:
        self.printer = printer
        self.approve_all = approve_all

    def ask(self, pending: dict[str, Any]) -> dict[str, Any]:
        self.printer.approval(pending)
        if self.approve_all:
            print("Approved (--yes).", flush=True)
            return {"decision": "approve", "args": None, "reason": ""}
        from IPython.core.error import StdinNotImplementedError

        try:
            return self._decide(pending)
        except StdinNotImplementedError:
            raise ApprovalUnavailable(
                f"{pending['name']} needs your approval, but this frontend cannot answer input(). It did not run. "
                "Use `%agent --yes ...` to approve the agent's calls, or the Cellwright panel."
            ) from None
        except EOFError:
            raise ApprovalUnavailable(f"No answer came (end of input): {pending['name']} did not run.") from None

    def _decide(self, pending: dict[str, Any]) -> dict[str, Any]:
        from ..tools import TOOLS

        field = EDITABLE_ARG.get(pending["name"])
        question = "Approve? [y]es / [e]dit / [n]o: " if field else "Approve? [y]es / [n]o: "
        while True:
            answer = input(question).strip().lower()
            if answer in ("y", "yes"):
                return {"decision": "approve", "args": None, "reason": ""}
            if answer in ("n", "no"):
                reason = input("Reason, for the agent (optional): ").strip()
                return {"decision": "reject", "args": None, "reason": reason}
            if field and answer in ("e", "edit"):
                print(f"Type the new {field} line by line; a line with only a dot (.) ends it.", flush=True)
                lines = []
                while (line := input()) != ".":
                    lines.append(line)
                args = {**pending["args"], field: "\n".join(lines)}
                problem = TOOLS[pending["name"]].check_args(args)
                if problem is None:
                    return {"decision": "edit", "args": args, "reason": ""}
                self.printer.line(f"Not usable: {problem}.")


class Printer:
    """Shows a run's events in the `%agent` cell (main thread only): tokens inline, a line per tool
    call, todos as a checklist, the final answer as text.

    Whatever it prints goes through `visible` (our own colours are added afterwards): the model
    writes nearly all of it, and JupyterLab honours `\\r`, backspaces and ANSI escapes in a stream."""

    def __init__(self) -> None:
        self._open_line = False  # tokens printed without a newline yet
        self._streamed = ""  # the text streamed since the last other event

    def show(self, event: dict[str, Any]) -> None:
        kind = event["type"]
        if kind == "token":
            sys.stdout.write(visible(event["text"]))
            sys.stdout.flush()
            self._streamed += event["text"]
            self._open_line = not event["text"].endswith("\n")
            return
        streamed, self._streamed = self._streamed, ""
        if kind == "tool_call" and event["name"] not in ("final_answer", "write_todos") and not event.get("needs_approval"):
            self.line(f"→ {_call_line(event['name'], event.get('args') or {})}")
        elif kind == "tool_result" and event["name"] not in ("final_answer", "write_todos"):
            if event["status"] != "ok":
                if event["name"] != "run_cell" or event["status"] == "rejected":  # a cell's traceback is shown already
                    self.line(f"✗ {event['name']}: {event['summary']}")
            elif event["name"] != "run_cell":
                self.note(f"  {_shortened(event['summary'])}")
        elif kind == "todos":
            marks = {"completed": "[x]", "in_progress": "[~]"}
            todos = [f"  {marks.get(t.get('status'), '[ ]')} {_one_line(t.get('content', ''))}" for t in event["todos"]]
            self.line("\n".join(["Todo:", *todos]))
        elif kind == "agent_switch":
            self.line(f"⇄ {_one_line(event['to'])}: {_shortened(event.get('task', ''))}")
        elif kind == "final":
            self.final(event["answer"], event.get("next_items") or [], already_shown=streamed.strip() == event["answer"].strip())
        elif kind == "error":
            if event.get("kind") == "llm_retrying":
                self.note(event["message"])
            else:
                self.error(event["message"])

    def final(self, answer: str, next_items: list[dict[str, Any]], already_shown: bool) -> None:
        from IPython.display import display

        self.end_line()
        if answer and not already_shown:  # an answer streamed as tokens is on screen once already
            # Plain text only: this cell is trusted, so Markdown or HTML from the model would run its
            # <img onerror=...> in the Jupyter page and fetch its ![](https://...) images unasked.
            display({"text/plain": visible(answer)}, raw=True)
        if next_items:
            items = [f"  • {_one_line(i.get('title', ''))}: %agent {_one_line(i.get('prompt', ''))}" for i in next_items]
            self.line("\n".join(["Next:", *items]))

    def approval(self, pending: dict[str, Any]) -> None:
        """Everything that decides what would run, each character visible: the main argument (or
        the file diff) as a block, then every other argument, then the diagnostics."""
        name = str(pending.get("name", ""))
        args = pending.get("args") or {}
        if not isinstance(args, dict):
            args = {"args": args}
        self.line(f"── {name} needs approval: {_one_line(pending.get('description', ''))}")
        main = MAIN_ARG.get(name)
        shown = {main, "path", *NOT_RUN_ARGS.get(name, ())}
        if "path" in args:
            self.line(_argument("path", args["path"]))
        diff = pending.get("diff")
        if name in ("write_file", "edit_file") and isinstance(diff, str) and diff.strip():
            self.line(_block(diff))  # the content or the edits, as they change the file
        elif main is not None and main in args:
            value = args[main]
            self.line(_block(value, python=name == "run_cell") if isinstance(value, str) else _edits_block(value))
        for key in sorted(k for k in args if k not in shown):
            self.line(_argument(key, args[key]))
        if name == "execute_command":
            if "cwd" not in args:
                self.line("cwd: . (the workspace root)")
            if "timeout" not in args:
                self.line("timeout: the default from the settings")
        self.line("──")
        for d in pending.get("diagnostics") or []:
            self.note(f"line {d.get('line')}: {d.get('severity')} {d.get('code')} {_one_line(d.get('message', ''))}")

    def line(self, text: str, style: str = "") -> None:
        self.end_line()
        print(f"{style}{visible(text)}{RESET}" if style else visible(text), flush=True)

    def note(self, text: str) -> None:
        self.line(text, DIM)

    def error(self, text: str) -> None:
        self.end_line()
        print(f"{RED}{visible(text)}{RESET}", file=sys.stderr, flush=True)

    def end_line(self) -> None:
        if self._open_line:
            print(flush=True)
            self._open_line = False


BAR = "│ "  # before each line of a block, so that no line of it can pass for the prompt's own lines


def _block(text: str, python: bool = False) -> str:
    if python:  # Python ends a line at a lone \r too: show the lines it will run, each \r still marked
        text = re.sub(r"\r(?!\n)", "\r\n", str(text))
    lines = str(text).split("\n")
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()  # the usual final newline; one that matters shows as an empty block line
    return "\n".join(BAR + visible(line, keep="\t") for line in lines)


def _edits_block(edits: Any) -> str:
    if not isinstance(edits, list):
        return _block(json.dumps(edits, ensure_ascii=False, indent=1))
    parts = []
    for number, edit in enumerate(edits, 1):
        if isinstance(edit, dict) and set(edit) <= {"old", "new"}:
            parts += [f"edit {number}, replace:", _block(edit.get("old", "")), "with:", _block(edit.get("new", ""))]
        else:
            parts += [f"edit {number}:", _block(json.dumps(edit, ensure_ascii=False))]
    return "\n".join(parts)


def _argument(key: str, value: Any) -> str:
    """One argument as `key: value`, in JSON so that quotes, spaces and newlines show exactly; a long
    text of several lines (stdin) as a block under its name."""
    label = _one_line(key)
    if isinstance(value, str) and "\n" in value.rstrip("\n") and len(value) > 200:
        return f"{label} ({len(value.splitlines())} lines):\n{_block(value)}"
    return f"{label}: {json.dumps(value, ensure_ascii=False)}"


def _one_line(text: Any) -> str:
    """Model text for a place that must stay one line: its newlines show as markers too."""
    return visible(str(text), keep="")


def _call_line(name: str, args: dict[str, Any]) -> str:
    if args.get("description"):
        return f"{name}: {_one_line(args['description'])}"
    return f"{name} {_shortened(json.dumps(args, ensure_ascii=False))}"


def _shortened(text: str, limit: int = 160) -> str:
    line = " ".join(str(text).split())
    line = line if len(line) <= limit else line[: limit - 3] + "..."
    return visible(line, keep="")


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
