"""Benchmark tables that tests measure, printed at the end of the run by pytest's terminal reporter
(CI's log shows them; CI does not run pytest -s) and written to .output/bench/ (a CI artefact).

Under pytest-xdist the tests run in worker processes: each worker hands its tables to the controller
(`workeroutput`), which prints them all at the end, as a run without workers does."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

OUTPUT = Path(__file__).resolve().parent.parent / ".output" / "bench"
_TABLES: list[tuple[str, str]] = []


def record(title: str, text: str) -> Path:
    """Keep `text` for the run's summary and write it to .output/bench/<title>.txt."""
    _TABLES.append((title, text))
    OUTPUT.mkdir(parents=True, exist_ok=True)
    path = OUTPUT / (re.sub(r"[^\w.-]+", "_", title).strip("_") + ".txt")
    path.write_text(text + "\n", encoding="utf-8")
    return path


def pytest_sessionfinish(session: pytest.Session) -> None:
    workeroutput = getattr(session.config, "workeroutput", None)  # set in an xdist worker only
    if workeroutput is not None:
        workeroutput["bench_tables"] = list(_TABLES)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: object, error: object) -> None:
    """An xdist worker ended (a hook of the controller): keep the tables it measured."""
    _TABLES.extend(tuple(table) for table in getattr(node, "workeroutput", {}).get("bench_tables", []))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for title, text in sorted(_TABLES):
        terminalreporter.write_sep("=", title)
        for line in text.splitlines():
            terminalreporter.write_line(line)
