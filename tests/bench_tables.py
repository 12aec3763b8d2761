"""Benchmark tables that tests measure, printed at the end of the run by pytest's terminal reporter
(CI's log shows them; CI does not run pytest -s) and written to .output/bench/ (a CI artefact)."""

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


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for title, text in _TABLES:
        terminalreporter.write_sep("=", title)
        for line in text.splitlines():
            terminalreporter.write_line(line)
