"""A run's event sink: what the agent emits goes into the thread's log, in order, with bounded
storage. Token deltas are coalesced (one row per 50 ms or 1 KB, the first at once), and a cell's
outputs are stored up to a head cap; beyond it they are streamed live only, and the cell's end
stores a "lines omitted" note and the tail. Readers connected at the time still get everything.
Readers that ask for token previews get each delta as it arrives, live only, named by the seq of
the row that will store it: they see tokens at once without a commit per token."""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

from typing_extensions import TypedDict

from agent_core.contract import EventDict, make_event
from agent_core.contract.event_fields import CellOutputEventDict, TokenEventDict
from agent_core.json_types import JsonObject
from agent_core.redaction import redact_text
from agent_core.storage.event_log import EventLog

TOKEN_WINDOW_SECONDS = 0.05
TOKEN_MAX_CHARS = 1024
HEAD_LINES, HEAD_BYTES = 200, 64 * 1024  # stored from the start of each cell's output
TAIL_LINES, TAIL_BYTES = 100, 32 * 1024  # stored from its end when the middle was cut

Stored = bool  # where an event goes: the log (True) or only live readers (False)
Output = Mapping[str, object]  # a cell's output (nbformat), as a cell_output event carries it


@dataclass(frozen=True)
class _Flushed:
    """Not an event: a marker that resolves its future once what came before is written."""

    future: asyncio.Future[None]


class _Tags(TypedDict, total=False):
    run_id: str
    agent: str
    task_id: str | None


def _stream_lines(text: str) -> int:
    return text.count("\n") + (0 if text.endswith("\n") or not text else 1)


def _size(output: Output) -> tuple[int, int]:
    """(lines, bytes) an output counts for against a cell's cap."""
    if output.get("output_type") == "stream":
        text = str(output.get("text", ""))
        return _stream_lines(text), len(text.encode("utf-8", "replace"))
    return 1, len(json.dumps(output, default=str))


def _split_stream(output: Output, lines: int, size: int) -> tuple[Output, Output] | None:
    """A stream output cut after at most `lines` lines and `size` bytes (None if nothing fits)."""
    text = str(output.get("text", ""))
    cut, count = 0, 0
    for piece in text.splitlines(keepends=True):
        if count >= lines or cut + len(piece.encode("utf-8", "replace")) > size:
            break
        cut, count = cut + len(piece), count + 1
    if cut == 0:
        return None
    return {**output, "text": text[:cut]}, {**output, "text": text[cut:]}


@dataclass
class _CellBudget:
    lines: int = 0
    bytes: int = 0
    overflowing: bool = False
    tail: deque[Output] = field(default_factory=deque)
    tail_lines: int = 0
    tail_bytes: int = 0
    omitted_lines: int = 0

    def keep_tail(self, output: Output) -> None:
        self.tail.append(output)
        lines, size = _size(output)
        self.tail_lines, self.tail_bytes = self.tail_lines + lines, self.tail_bytes + size
        while self.tail and (self.tail_lines > TAIL_LINES or self.tail_bytes > TAIL_BYTES):
            first = self.tail.popleft()
            lines, size = _size(first)
            excess_lines = self.tail_lines - TAIL_LINES
            if (
                first.get("output_type") == "stream"
                and 0 < excess_lines < lines
                and self.tail_bytes - size <= TAIL_BYTES
            ):
                text = str(first["text"]).splitlines(keepends=True)
                rest = {**first, "text": "".join(text[excess_lines:])}
                self.tail.appendleft(rest)
                lines, size = excess_lines, size - _size(rest)[1]
            self.tail_lines, self.tail_bytes = self.tail_lines - lines, self.tail_bytes - size
            self.omitted_lines += lines


class OutputCaps:
    """Decides, per cell (or streamed command), which outputs are stored and which only streamed."""

    def __init__(self) -> None:
        self._cells: dict[str, _CellBudget] = {}

    def route(self, event: EventDict) -> Iterator[tuple[EventDict, Stored]]:
        if event["type"] == "cell_output" and isinstance(event["output"], dict):
            yield from self._output(event, event["output"])
        elif (event["type"] == "cell_finished" or event["type"] == "tool_result") and event["id"] in self._cells:
            yield from self._summary(event["id"], event)
            yield event, True
        else:
            yield event, True

    def _output(self, event: CellOutputEventDict, output: Output) -> Iterator[tuple[EventDict, Stored]]:
        budget = self._cells.setdefault(event["id"], _CellBudget())
        if not budget.overflowing:
            lines, size = _size(output)
            if budget.lines + lines <= HEAD_LINES and budget.bytes + size <= HEAD_BYTES:
                budget.lines, budget.bytes = budget.lines + lines, budget.bytes + size
                yield event, True
                return
            budget.overflowing = True
            parts = (
                _split_stream(output, HEAD_LINES - budget.lines, HEAD_BYTES - budget.bytes)
                if output.get("output_type") == "stream"
                else None
            )
            if parts is not None:
                yield {**event, "output": parts[0]}, True
                output = parts[1]
        budget.keep_tail(output)
        yield {**event, "output": output, "live_only": True}, False

    def _summary(self, call_id: str, event: EventDict) -> Iterator[tuple[EventDict, Stored]]:
        budget = self._cells.pop(call_id)
        if not budget.overflowing:
            return
        if budget.omitted_lines:
            note: Output = {
                "output_type": "stream",
                "name": "stdout",
                "text": f"[... {budget.omitted_lines} lines omitted ...]\n",
            }
            yield (
                {**_tags(event), **make_event("cell_output", id=call_id, output=note, overflow_summary=True)},
                True,
            )
        for output in _merged_streams(budget.tail):
            yield (
                {**_tags(event), **make_event("cell_output", id=call_id, output=output, overflow_summary=True)},
                True,
            )


def _tags(event: EventDict) -> _Tags:
    """Who emitted `event` (run, agent, task), for an event written on its behalf: not its own fields."""
    tags: _Tags = {}
    if "run_id" in event:
        tags["run_id"] = event["run_id"]
    if "agent" in event:
        tags["agent"] = event["agent"]
    if "task_id" in event:
        tags["task_id"] = event["task_id"]
    return tags


def _merged_streams(outputs: deque[Output]) -> list[Output]:
    """Consecutive stream outputs of one stream as one output: the tail is stored in few rows."""
    merged: list[Output] = []
    for output in outputs:
        last = merged[-1] if merged else None
        if (
            last is not None
            and output.get("output_type") == "stream" == last.get("output_type")
            and output.get("name") == last.get("name")
        ):
            merged[-1] = {**last, "text": str(last["text"]) + str(output["text"])}
        else:
            merged.append(output)
    return merged


@dataclass
class _RowPreviews:
    """The previews of the row being coalesced: each token as it arrives, to readers that asked for
    previews; kept, so a reader that starts asking mid-row gets the row's tokens so far at once."""

    log: EventLog
    thread_id: str
    stored_as: int  # the seq the row will be stored with
    tokens: list[TokenEventDict] = field(default_factory=list)
    shown: int = 0  # tokens published so far

    def add(self, token: TokenEventDict) -> None:
        self.tokens.append(token)
        if self.log.wants_previews(self.thread_id):
            self.catch_up()

    def catch_up(self) -> None:
        for token in self.tokens[self.shown :]:
            self.log.publish_live(self.thread_id, {**token, "live_only": True, "stored_as": self.stored_as})
        self.shown = len(self.tokens)


def _same_stream(a: EventDict, b: EventDict) -> bool:
    return a.get("agent") == b.get("agent") and a.get("task_id") == b.get("task_id")


class EventPump:
    """A sync call for the agent; a task of its own appends to the thread's log in order, so events
    emitted while the run is being cancelled are still kept."""

    def __init__(
        self,
        log: EventLog,
        thread_id: str,
        run_id: str,
        agent: str = "main",
        on_event: Callable[[JsonObject], None] | None = None,
    ) -> None:
        self._log = log
        self._thread_id = thread_id
        self._run_id = run_id
        self._agent = agent  # the run's top agent: "main", or "planner" in multi mode
        self._on_event = on_event
        # A deque and one future to wake the pump, not an asyncio.Queue: waiting for the next token
        # with a deadline would start a task (wait_for) per token.
        self._pending: deque[EventDict | _Flushed | None] = deque()  # None: the end, put by drain()
        self._arrival: asyncio.Future[None] | None = None
        self._held: EventDict | _Flushed | None = None  # read while coalescing tokens, written next
        self._last_token_write = float("-inf")  # loop time of the last token row
        self._window_open = False  # tokens that arrive now join the row being coalesced
        self._caps = OutputCaps()
        log.forget_live(thread_id)  # a new segment: the last one's live-only outputs are history
        self._task = asyncio.create_task(self._pump())

    def __call__(self, event: EventDict) -> None:
        stamped = event.copy()
        stamped.setdefault("agent", self._agent)  # a sub-agent's event keeps its own
        stamped["run_id"] = self._run_id
        self._put(stamped)

    async def drain(self) -> None:
        """Write what is pending, then end the pump."""
        self._put(None)
        await asyncio.shield(self._task)

    async def flush(self) -> None:
        """Wait until every event emitted so far is in the log; the pump goes on."""
        written: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._put(_Flushed(written))
        await asyncio.shield(written)

    def _put(self, item: EventDict | _Flushed | None) -> None:
        self._pending.append(item)
        self._wake()

    def _wake(self) -> None:
        if self._arrival is not None and not self._arrival.done():
            self._arrival.set_result(None)

    async def _arrived(self) -> bool:
        """Wait until something is pending or the token window closes; whether something is."""
        if not self._pending:
            self._arrival = asyncio.get_running_loop().create_future()
            try:
                await self._arrival
            finally:
                self._arrival = None
        return bool(self._pending)

    def _close_window(self) -> None:
        self._window_open = False
        self._wake()

    async def _next(self) -> EventDict | _Flushed | None:
        if self._held is not None:
            event, self._held = self._held, None
            return event
        await self._arrived()
        return self._pending.popleft()

    async def _pump(self) -> None:
        while (event := await self._next()) is not None:
            if isinstance(event, _Flushed):
                event.future.set_result(None)
                continue
            if event["type"] == "token":
                event = await self._coalesced(event)
            elif event["type"] == "error" and isinstance(message := event.get("message"), str):
                redacted = event.copy()
                redacted["message"] = redact_text(message)
                event = redacted
            for routed, stored in self._caps.route(event):
                if stored:
                    stamped = await self._log.append(self._thread_id, routed)
                    if self._on_event is not None:
                        self._on_event(stamped)
                else:
                    self._log.publish_live(self._thread_id, routed)

    async def _coalesced(self, first: TokenEventDict) -> TokenEventDict:
        """`first` and the tokens that follow it within the window (the first of a burst at once)."""
        loop = asyncio.get_running_loop()
        parts = [first["text"]]
        size = len(parts[0])
        deadline = self._last_token_write + TOKEN_WINDOW_SECONDS
        # Readers that asked for previews get each delta now; the row stored at the deadline has
        # the next seq (this pump is the run's only writer) and carries the same text again.
        previews = _RowPreviews(self._log, self._thread_id, self._log.last_stored(self._thread_id) + 1)
        self._window_open = deadline > loop.time()
        # One timer closes the window: a time-out on each wait inside it was a timer per token.
        window = loop.call_at(deadline, self._close_window) if self._window_open else None
        if self._window_open:
            previews.add(first)
            self._log.coalescing(self._thread_id, previews.catch_up)
        try:
            while size < TOKEN_MAX_CHARS:
                if not self._pending and (not self._window_open or not await self._arrived()):
                    break
                following = self._pending.popleft()
                if following is None:
                    self._pending.appendleft(None)  # the end marker stays: _next reads it again
                    break
                if (
                    isinstance(following, _Flushed)
                    or following["type"] != "token"
                    or not _same_stream(first, following)
                ):
                    self._held = following
                    break
                parts.append(following["text"])
                size += len(parts[-1])
                previews.add(following)
        finally:
            self._log.coalescing(self._thread_id, None)
            if window is not None:
                window.cancel()
        self._last_token_write = loop.time()
        coalesced = first.copy()
        coalesced["text"] = "".join(parts)
        return coalesced
