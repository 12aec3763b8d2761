"""The model stream's line splitter (agent_core.llm._lines): SSE allows CR, LF and CRLF line ends,
and a network read can end anywhere, also between a CR and its LF or inside a UTF-8 character."""
from __future__ import annotations

import asyncio

import pytest

from agent_core.llm import _lines


async def _split(reads: list[bytes]) -> list[str]:
    async def chunks():  # type: ignore[no-untyped-def]
        for read in reads:
            yield read

    return [line async for line in _lines(chunks())]


@pytest.mark.parametrize(
    ("reads", "lines"),
    [
        ([b"data: a\n\ndata: b\n\n"], ["data: a", "", "data: b", ""]),
        ([b"data: a\r\n\r\n"], ["data: a", ""]),
        ([b"data: a\r", b"\n\r\n"], ["data: a", ""]),  # CRLF split across reads: one line end
        ([b"data: a\rdata: b\r\r"], ["data: a", "data: b", ""]),  # CR alone ends a line
        ([b"data: \xc3", b"\xa9\n"], ["data: \u00e9"]),  # a character split across reads
        ([b"data: x", b"y", b"z"], ["data: xyz"]),  # no line end at the close: still a line
        ([b"\xff\n"], ["\ufffd"]),  # not UTF-8: replaced, never an exception
    ],
)
def test_lines_split_like_sse(reads: list[bytes], lines: list[str]) -> None:
    assert asyncio.run(_split(reads)) == lines
