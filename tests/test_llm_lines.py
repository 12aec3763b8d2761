"""The model stream's SSE reader (agent_core.llm.stream.sse_data): SSE allows CR, LF and CRLF line ends,
and a network read can end anywhere, also between a CR and its LF or inside a UTF-8 character."""

from __future__ import annotations

import asyncio

import pytest

from agent_core.llm.stream import sse_data


async def _data(reads: list[bytes]) -> tuple[list[str], int]:
    seen = 0

    async def chunks():  # type: ignore[no-untyped-def]
        for read in reads:
            yield read

    def on_read() -> None:
        nonlocal seen
        seen += 1

    return [data async for data in sse_data(chunks(), on_read)], seen


@pytest.mark.parametrize(
    ("reads", "events"),
    [
        ([b"data: a\n\ndata: b\n\n"], ["a", "b"]),
        ([b"data: a\r\n\r\n"], ["a"]),
        ([b"data: a\r", b"\n\r\n"], ["a"]),  # CRLF split across reads: one line end, then the blank line
        ([b"data: a\rdata: b\r\r"], ["a\nb"]),  # CR alone ends a line; two data lines are one event's data
        ([b"data: \xc3", b"\xa9\n\n"], ["\u00e9"]),  # a character split across reads
        ([b"data: x", b"y", b"z"], ["xyz"]),  # no line end at the close: still the last event
        ([b"data:\xff\n\n"], ["\ufffd"]),  # not UTF-8: replaced, never an exception
        ([b": comment\nevent: x\nid: 3\ndata: {}\n\n"], ["{}"]),  # other fields are not data
        ([b"data: 1\n", b"\n", b"data: 2\n\n"], ["1", "2"]),
    ],
)
def test_events_split_like_sse(reads: list[bytes], events: list[str]) -> None:
    found, seen = asyncio.run(_data(reads))
    assert found == events and seen == len(reads)


def test_an_endless_line_is_refused_not_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    # A broken or hostile endpoint streaming one line with no end: memory stays bounded.
    from agent_core.llm import stream as model_stream

    monkeypatch.setattr(model_stream, "MAX_EVENT_BYTES", 1000)
    with pytest.raises(model_stream.OversizedEvent, match="longer than"):
        asyncio.run(_data([b"data: " + b"x" * 300] * 10))
    with pytest.raises(model_stream.OversizedEvent):  # nor many data lines of one event that never ends
        asyncio.run(_data([b"data: " + b"y" * 100 + b"\n"] * 20))
    found, _ = asyncio.run(_data([b"data: " + b"z" * 900 + b"\n\n"] * 5))  # events under the cap, however many
    assert found == ["z" * 900] * 5
