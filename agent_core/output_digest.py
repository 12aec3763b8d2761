"""Turns cell outputs into bounded text for the model: head and tail of streams, no ANSI codes,
images as a short description, HTML replaced by its text form."""

from __future__ import annotations

import re
from typing import Any

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
MAX_CHARS = 8000


class BoundedText:
    """Keeps the first `head` and the last `tail` characters of a growing text, and counts the rest."""

    def __init__(self, limit: int) -> None:
        self.head_limit = limit * 2 // 3
        self.tail_limit = limit - self.head_limit
        self.head = ""
        self.tail = ""
        self.total = 0

    def add(self, text: str) -> None:
        self.total += len(text)
        if len(self.head) < self.head_limit:
            take = self.head_limit - len(self.head)
            self.head += text[:take]
            text = text[take:]
        if text:
            self.tail = (self.tail + text)[-self.tail_limit :]

    def text(self) -> str:
        cut = self.total - len(self.head) - len(self.tail)
        if cut <= 0:
            return self.head + self.tail
        return f"{self.head}\n[... {cut} characters cut ...]\n{self.tail}"


def bounded(text: str, limit: int = MAX_CHARS) -> str:
    """Keep the head and the tail of `text`, saying how much was cut in between."""
    kept = BoundedText(limit)
    kept.add(text)
    return kept.text()


def _joined(value: object) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def _rich_output_text(data: dict[str, Any]) -> str:
    images = [mime for mime in data if mime.startswith("image/")]
    parts = [f"[{mime} output, {len(_joined(data[mime]))} bytes]" for mime in images]
    if "text/plain" in data:
        parts.append(_joined(data["text/plain"]))
    elif "text/markdown" in data:
        parts.append(_joined(data["text/markdown"]))
    elif "text/html" in data and not images:
        parts.append("[HTML output without a text form]")
    return "\n".join(parts)


def output_text(output: dict[str, Any]) -> str:
    kind = output.get("output_type")
    if kind == "stream":
        return _joined(output.get("text", ""))
    if kind == "error":
        trace = "\n".join(output.get("traceback") or [f"{output.get('ename')}: {output.get('evalue')}"])
        return ANSI.sub("", trace)
    if kind in ("display_data", "execute_result"):
        return _rich_output_text(output.get("data", {}))
    return ""


def digest(outputs: list[dict[str, Any]], limit: int = MAX_CHARS) -> str:
    pieces: list[str] = []
    last_stream: str | None = None
    for output in outputs:
        text = output_text(output)
        stream = output.get("name") if output.get("output_type") == "stream" else None
        if stream is not None and stream == last_stream:
            pieces[-1] += text  # a kernel sends one stream in many small messages
        else:
            pieces.append(text)
        last_stream = stream
    text = "\n".join(p.rstrip("\n") for p in pieces if p)
    return bounded(text, limit) if text else "(no output)"
