"""Cell outputs made comparable across runs: the text a user reads (streams merged, the plain-text
form of results, an error's name and value), with what changes on every run masked (memory
addresses, timings)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from agent_core.json_types import JsonObject, json_object

_ADDRESS = re.compile(r"0x[0-9a-fA-F]{4,}")
_TIMING = re.compile(r"\b\d+(?:\.\d+)?\s?(?:ns|µs|us|ms|s|sec|secs|seconds|min)\b")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_OMITTED = re.compile(r"\[\.\.\. \d+ lines omitted \.\.\.\]")  # agent_core.loop.event_pump's overflow summary
DETAIL_CHARS = 300


def _text(value: object) -> str:
    return "".join(value) if isinstance(value, list) else str(value or "")


def normalised(text: str) -> str:
    text = _ANSI.sub("", text)
    text = _ADDRESS.sub("0x…", text)
    text = _TIMING.sub("<time>", text)
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


def comparable(outputs: Iterable[JsonObject]) -> list[str]:
    """Each output as one normalised line of text, consecutive stream text of one name merged."""
    parts: list[tuple[str, str]] = []
    for output in outputs:
        kind = output.get("output_type")
        if kind == "stream":
            name = f"stream:{output.get('name', 'stdout')}"
            if parts and parts[-1][0] == name:
                parts[-1] = (name, parts[-1][1] + _text(output.get("text")))
            else:
                parts.append((name, _text(output.get("text"))))
        elif kind in ("execute_result", "display_data"):
            data = json_object(output.get("data"))
            plain = data.get("text/plain")
            parts.append(("result", _text(plain) if plain is not None else "[" + ", ".join(sorted(data)) + "]"))
        elif kind == "error":
            parts.append(("error", f"{output.get('ename')}: {output.get('evalue')}"))
    return [f"{name}: {normalised(text)}" for name, text in parts if name == "error" or normalised(text)]


def _cut_matches(before: list[str], after: list[str]) -> bool:
    """A long output the server stored as head, "[... N lines omitted ...]" and tail: the re-run's
    text matches when it starts with that head and ends with that tail."""
    recorded, rerun = "\n".join(before), "\n".join(after)
    cut = _OMITTED.search(recorded)
    if cut is None:
        return False
    head, tail = recorded[: cut.start()].strip(), recorded[cut.end() :].strip()
    tail = tail.removeprefix("stream:stdout: ").strip()  # the tail is stored as an output of its own
    return rerun.startswith(head) and rerun.endswith(tail)


def difference(recorded: Iterable[JsonObject], rerun: Iterable[JsonObject]) -> str:
    """'' when the outputs match; else the first that differs, shortened."""
    before, after = comparable(recorded), comparable(rerun)
    if before == after or _cut_matches(before, after):
        return ""
    for index in range(max(len(before), len(after))):
        old = before[index] if index < len(before) else "(nothing)"
        new = after[index] if index < len(after) else "(nothing)"
        if old != new:
            return f"recorded {old[:DETAIL_CHARS]!r}, re-run gave {new[:DETAIL_CHARS]!r}"
    return "the outputs differ"
