"""diagnostics: python-lsp-server's pyflakes and pycodestyle checks for a cell's code or a file.

pylsp over stdio answers a change only after its fixed lint debounce (0.5 s); an approval card
needs tens of milliseconds. So the linting runs in-process through pylsp's own machinery: one
long-lived pylsp `Workspace` (with its `Config`, so project and user pycodestyle settings apply),
a `Document` per request, and pylsp's pyflakes / pycodestyle plugins. It runs in one worker
thread, never on the event loop. If pylsp fails, the engine is dropped and re-created on the next
request; that request gets a clear DiagnosticsUnavailable error.

A diagnostic: {"line", "column", "severity", "code", "message", "source"}. Lines and columns are
1-BASED, as editors show them to people. severity is "error" | "warning" | "information" | "hint".

Cells are linted as cells: IPython syntax (%magic, !shell, x?) is translated first, line numbers
kept; names the kernel already defines (from earlier cells) are not reported as undefined; style
nits (line length, spacing) are left out: only pyflakes' findings and pycodestyle's E9 (syntax /
IO errors) and W6 (deprecated syntax such as invalid escape sequences) are kept."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import re
import threading
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from pydantic import Field, model_validator

from agent_core.kernel_probes.introspection import _evaluate
from agent_core.kernel_probes.namespace_names import defined_names_expression
from agent_core.tools.arguments import ToolArgs, argument_error
from agent_core.tools.base import ToolContext, ToolEnvironment, ToolInputError, ToolOutcome, ToolSpec
from agent_core.workspace import Workspace, WorkspaceError, human_size, relative_to_root, workspace_of

log = logging.getLogger(__name__)

SEVERITIES = {1: "error", 2: "warning", 3: "information", 4: "hint"}
KEPT_PYCODESTYLE = ("E9", "W6")
IPYTHON_NAMES = frozenset({"get_ipython", "display", "In", "Out", "exit", "quit"})
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug"})  # their body is Python
MAX_SOURCE_BYTES = 1024 * 1024
LINT_TIMEOUT = 10.0
KERNEL_NAMES_TIMEOUT = 2.0  # the approval card must not wait for a busy kernel
_UNDEFINED = re.compile(r"^undefined name '(.+)'$")

# flake8's codes for pyflakes' messages, so the codes read as people know them.
PYFLAKES_CODES = {
    "UnusedImport": "F401",
    "ImportShadowedByLoopVar": "F402",
    "ImportStarUsed": "F403",
    "LateFutureImport": "F404",
    "ImportStarUsage": "F405",
    "ImportStarNotPermitted": "F406",
    "FutureFeatureNotDefined": "F407",
    "PercentFormatInvalidFormat": "F501",
    "StringDotFormatInvalidFormat": "F521",
    "FStringMissingPlaceholders": "F541",
    "MultiValueRepeatedKeyLiteral": "F601",
    "MultiValueRepeatedKeyVariable": "F602",
    "TooManyExpressionsInStarredAssignment": "F621",
    "TwoStarredExpressions": "F622",
    "AssertTuple": "F631",
    "IsLiteral": "F632",
    "InvalidPrintSyntax": "F633",
    "IfTuple": "F634",
    "BreakOutsideLoop": "F701",
    "ContinueOutsideLoop": "F702",
    "YieldOutsideFunction": "F704",
    "ReturnOutsideFunction": "F706",
    "DefaultExceptNotLast": "F707",
    "DoctestSyntaxError": "F721",
    "ForwardAnnotationSyntaxError": "F722",
    "RedefinedWhileUnused": "F811",
    "UndefinedName": "F821",
    "UndefinedExport": "F822",
    "UndefinedLocal": "F823",
    "DuplicateArgument": "F831",
    "UnusedVariable": "F841",
    "UnusedAnnotation": "F842",
    "RaiseNotImplemented": "F901",
}


class DiagnosticsUnavailable(ToolInputError):
    """pylsp failed or hangs; it is re-created for the next request."""


# pylsp's diagnostic (LSP JSON, 0-based range, plus our code and name): pylsp types it Any, and it is walked here
LspDiagnostic = dict[str, Any]


class Finding(TypedDict):
    """A diagnostic as the contract has it (contract.shared.Diagnostic): 1-based line and column."""

    line: int
    column: int
    severity: str
    code: str
    message: str
    source: str


@dataclass
class DiagnosticsResult:
    diagnostics: list[Finding]
    note: str = ""
    kernel_names_used: bool = False


class LintEngine:
    """One in-process pylsp workspace. Not thread-safe: used from the single lint thread only."""

    def __init__(self, root: Path) -> None:
        # pylsp and pyflakes load with the first lint: the server and %load_ext agent_core start without them
        from pyflakes import api as pyflakes_api
        from pylsp import uris
        from pylsp.config.config import Config
        from pylsp.plugins import pycodestyle_lint, pyflakes_lint
        from pylsp.workspace import Document, Workspace

        self._uris = uris
        self._document = Document
        self._pycodestyle = pycodestyle_lint
        self._pyflakes_api = pyflakes_api
        root_uri = uris.from_fs_path(str(root))
        self.workspace = Workspace(root_uri, None, Config(root_uri, {}, os.getpid(), {}))

        class CodedReport(pyflakes_lint.PyflakesDiagnosticReport):  # pylsp's report, plus codes and names
            def flake(self, message: Any) -> None:
                super().flake(message)
                kind = type(message).__name__
                self.diagnostics[-1]["code"] = PYFLAKES_CODES.get(kind, kind)
                if kind == "UndefinedName":
                    self.diagnostics[-1]["name"] = message.message_args[0]

            def syntaxError(self, *args: Any) -> None:  # noqa: N802 (pyflakes' name)
                super().syntaxError(*args)
                diagnostic = self.diagnostics[-1]
                diagnostic["code"] = "E999"
                start = diagnostic["range"]["start"]  # pylsp passes Python's 1-based offset on as a 0-based one
                start["character"] = max(int(start["character"]) - 1, 0)

        self._report = CodedReport

    def lint(self, source: str, path: Path) -> list[LspDiagnostic]:
        """Raw LSP diagnostics (0-based ranges) of pyflakes and pycodestyle."""
        document = self._document(self._uris.from_fs_path(str(path)), self.workspace, source=source)
        report = self._report(document.lines)
        # What pylsp's pyflakes plugin does, with the coded report. Compiling the code may warn about it
        # (invalid escapes): those are findings for the user (W605), not warnings of this process.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self._pyflakes_api.check(document.source.encode("utf-8"), document.path, reporter=report)
        style = self._pycodestyle.pylsp_lint(self.workspace, document)
        return report.diagnostics + [d for d in style if str(d.get("code", "")).startswith(KEPT_PYCODESTYLE)]


class _Linter:
    """The engines (one per root) and the one thread they run in."""

    def __init__(self) -> None:
        self._engines: dict[str, LintEngine] = {}
        self._executor = self._new_executor()
        self._lock = threading.Lock()

    @staticmethod
    def _new_executor() -> concurrent.futures.ThreadPoolExecutor:
        return concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="cellwright-pylsp")

    def _lint_sync(self, root: Path, source: str, path: Path) -> list[LspDiagnostic]:
        key = str(root)
        engine = self._engines.get(key)
        if engine is None:
            try:
                engine = self._engines[key] = LintEngine(root)
            except Exception as exc:
                log.exception("python-lsp-server could not start")
                raise DiagnosticsUnavailable(
                    f"python-lsp-server could not start ({type(exc).__name__}: {exc})"
                ) from None
        try:
            return engine.lint(source, path)
        except Exception as exc:
            log.exception("python-lsp-server failed; it is restarted for the next request")
            self._engines.pop(key, None)
            raise DiagnosticsUnavailable(
                f"python-lsp-server failed ({type(exc).__name__}: {exc}); it is being restarted, try again"
            ) from None

    async def lint(self, root: Path, source: str, path: Path, timeout: float = LINT_TIMEOUT) -> list[LspDiagnostic]:
        loop = asyncio.get_running_loop()
        with self._lock:
            executor = self._executor
        future = loop.run_in_executor(executor, self._lint_sync, root, source, path)
        try:
            return await asyncio.wait_for(future, timeout)
        except asyncio.TimeoutError:
            # The thread is stuck inside pylsp: leave it, start afresh in a new thread.
            with self._lock:
                if self._executor is executor:
                    self._executor = self._new_executor()
                    self._engines.clear()
            executor.shutdown(wait=False)
            raise DiagnosticsUnavailable(
                f"python-lsp-server took more than {timeout:g} s; it is being restarted, try again"
            ) from None

    def reset(self) -> None:
        """Drop the engines (tests; a crash does it by itself)."""
        self._engines.clear()


LINTER = _Linter()


def cell_source(code: str) -> str | None:
    """The cell's code as plain Python with the same line numbers, or None when the cell is not
    Python at all (a %%bash or %%html cell)."""
    lines = code.split("\n")
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is not None and lines[first].lstrip().startswith("%%"):
        magic = lines[first].lstrip()[2:].split(maxsplit=1)
        if not magic or magic[0] not in PYTHON_CELL_MAGICS:
            return None
        lines[first] = ""
        code = "\n".join(lines)
    if not any(
        line.lstrip().startswith(("%", "!")) or line.rstrip().endswith("?") or "= !" in line or "= %" in line
        for line in lines
    ):
        return code
    try:
        from IPython.core.inputtransformer2 import TransformerManager
    except ImportError:
        return code
    lead = len(code) - len(code.lstrip("\n"))  # the transformer drops leading blank lines
    body = code[lead:]
    try:
        out = TransformerManager().transform_cell(body)
    except Exception:
        return code
    if out.rstrip("\n").count("\n") != body.rstrip("\n").count("\n"):
        return code  # lines moved: better a false syntax error than wrong line numbers
    return "\n" * lead + out


def _converted(raw: LspDiagnostic) -> Finding:
    start = raw.get("range", {}).get("start", {})
    message = str(raw.get("message", ""))
    code = str(raw.get("code", ""))
    if code and message.startswith(code + " "):
        message = message[len(code) + 1 :]
    return {
        "line": int(start.get("line", 0)) + 1,
        "column": int(start.get("character", 0)) + 1,
        "severity": SEVERITIES.get(raw.get("severity", 1), "error"),
        "code": code,
        "message": message,
        "source": str(raw.get("source", "")),
    }


def _is_top_level_await(raw: LspDiagnostic, lines: list[str]) -> bool:
    if raw.get("code") != "F704":
        return False
    start = raw.get("range", {}).get("start", {})
    line = start.get("line", 0)
    return line < len(lines) and lines[line][start.get("character", 0) :].lstrip().startswith("await")


async def kernel_names(env: ToolEnvironment | None, timeout: float = KERNEL_NAMES_TIMEOUT) -> set[str] | None:
    """Names defined in the notebook's kernel (globals and builtins), or None when it cannot say. A busy
    kernel is not asked: the card would wait for the user's cell, and the question would stay queued."""
    try:
        names = await _evaluate(env, defined_names_expression(), timeout)
    except ToolInputError as exc:  # no kernel, a busy one (KernelBusy), a time-out, a kernel gone mid-request
        log.debug("kernel names unavailable: %s", exc)
        return None
    return {str(n) for n in names} if isinstance(names, list) else None


async def lint_code(
    code: str,
    root: Path,
    *,
    env: ToolEnvironment | None = None,
    cell: bool = True,
    path: Path | None = None,
    names_timeout: float = KERNEL_NAMES_TIMEOUT,
) -> DiagnosticsResult:
    """Diagnostics for `code`. A cell (cell=True) gets IPython syntax translated and undefined names
    the kernel defines (asked through `env`, silently) dropped; without a kernel, plain diagnostics."""
    if len(code.encode("utf-8", errors="replace")) > MAX_SOURCE_BYTES:
        raise ToolInputError(
            f"the code is larger than {human_size(MAX_SOURCE_BYTES)}; diagnostics checks cells and modules"
        )
    source = cell_source(code) if cell else code
    if source is None:
        return DiagnosticsResult([], note="not Python (a cell magic such as %%bash): nothing to check")
    document_path = path or Path(root) / "cell.py"
    raw = await LINTER.lint(Path(root).resolve(), source, document_path)
    lines = source.split("\n")
    result = DiagnosticsResult([])
    known: set[str] = set(IPYTHON_NAMES) if cell else set()
    undefined = [d for d in raw if d.get("name") and d["name"] not in known]
    if cell and undefined:
        names = await kernel_names(env, names_timeout)
        if names is None:
            result.note = (
                "the kernel could not be asked which names it defines: undefined names may be defined in earlier cells"
            )
        else:
            known |= names
            result.kernel_names_used = True
    kept: list[Finding] = []
    for diagnostic in raw:
        if diagnostic.get("name") in known:
            continue
        if cell and _is_top_level_await(diagnostic, lines):
            continue  # IPython runs top-level await
        kept.append(_converted(diagnostic))
    if any(d["code"] == "E999" for d in kept):  # pycodestyle's E9 would repeat pyflakes' syntax error
        kept = [d for d in kept if not (d["source"] == "pycodestyle" and d["code"].startswith("E9"))]
    result.diagnostics = sorted(kept, key=lambda d: (d["line"], d["column"]))
    return result


async def lint_file(root: Workspace, path_text: str) -> DiagnosticsResult:
    """Diagnostics of a Python file of the workspace. Raises WorkspaceError outside the root."""
    path = root.resolve(path_text)
    rel = relative_to_root(root, path)
    if not path.exists():
        raise ToolInputError(f"there is no file {rel!r}; call list_files to see what is there")
    if path.is_dir():
        raise ToolInputError(f"{rel!r} is a directory; give a Python file")
    if path.suffix == ".ipynb":
        raise ToolInputError(f"{rel!r} is a notebook: pass a cell's code as `code` instead")
    if path.stat().st_size > MAX_SOURCE_BYTES:
        raise ToolInputError(
            f"{rel!r} is larger than {human_size(MAX_SOURCE_BYTES)}; diagnostics checks modules up to that size"
        )
    raw = path.read_bytes()
    if b"\x00" in raw[:8192]:
        raise ToolInputError(f"{rel!r} is a binary file, not Python source")
    try:
        source = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolInputError(f"{rel!r} is not valid UTF-8 Python source") from None
    return await lint_code(source, root.root, cell=False, path=path)


def format_diagnostics(result: DiagnosticsResult, what: str) -> str:
    if not result.diagnostics:
        text = f"No problems found in {what}."
    else:
        count = len(result.diagnostics)
        lines = [f"{count} problem{'s' if count != 1 else ''} in {what} (lines and columns from 1):"]
        for d in result.diagnostics[:100]:
            label = " ".join(part for part in (d["severity"], d["code"], d["message"]) if part)
            lines.append(f"line {d['line']}, column {d['column']}: {label} ({d['source']})")
        if count > 100:
            lines.append(f"... {count - 100} more")
        text = "\n".join(lines)
    return f"{text}\n[note: {result.note}]" if result.note else text


class DiagnosticsArgs(ToolArgs):
    code: str | None = Field(default=None, description="Python code of a cell.")
    path: str | None = Field(default=None, description="A .py file, relative to the workspace root.")

    @model_validator(mode="after")
    def _one_of_them(self) -> DiagnosticsArgs:
        if (self.code is None) == (self.path is None):
            raise argument_error(
                "pass either `code` (a cell's Python code) or `path` (a .py file), not both or neither"
            )
        return self


async def diagnostics(args: DiagnosticsArgs, ctx: ToolContext) -> ToolOutcome:
    workspace = workspace_of(ctx.env)
    if args.code is not None:
        result = await lint_code(args.code, workspace.root, env=ctx.env)
        what = "the code"
    else:
        path = args.path or ""
        try:
            result = await lint_file(workspace, path)
        except WorkspaceError as exc:
            raise ToolInputError(exc.message) from None
        what = path
    text = format_diagnostics(result, what)
    count = len(result.diagnostics)
    return ToolOutcome(
        "ok", text, summary=f"{count} problem{'s' if count != 1 else ''}" if count else "No problems found"
    )


DIAGNOSTICS = ToolSpec(
    name="diagnostics",
    description=(
        "Check Python code for errors before running it (python-lsp-server: pyflakes, serious pycodestyle "
        "findings): syntax errors, undefined names (names the notebook's kernel defines count as defined), "
        "unused imports and variables. Pass `code` (a cell) or `path` (a .py file). Lines count from 1."
    ),
    args=DiagnosticsArgs,
    action=diagnostics,
    touches="nothing",
    outside_agents=True,
    read_only=True,
)
