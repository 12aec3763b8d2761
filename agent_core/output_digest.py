"""Turns cell outputs into bounded text for the model: head and tail of streams, no ANSI codes,
images as a short description, HTML replaced by its text form."""
from __future__ import annotations

import re
from typing import Any

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
MAX_CHARS = 8000


def bounded(text: str, limit: int = MAX_CHARS) -> str:
    """Keep the head and the tail of `text`, saying how much was cut in between."""
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = limit - head
    cut = len(text) - head - tail
    return f"{text[:head]}\n[... {cut} characters cut ...]\n{text[-tail:]}"


def _joined(value: Any) -> str:
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
