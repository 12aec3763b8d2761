"""Where a running cell stands (issue 38), read from its output: `\\r`-updated text bars (tqdm's text
format) and ipywidgets progress bars (IntProgress, FloatProgress, tqdm.notebook) from their comm
messages. A `\\r` overwrites the line, so only completed lines stay outputs: a cell that redraws its
bar a thousand times a second makes a few `cell_progress` events, not a thousand outputs."""

from __future__ import annotations

import re
import time
from collections import deque
from collections.abc import Mapping

from agent_core.contract import make_event
from agent_core.contract.event_fields import CellProgressEventDict
from agent_core.json_types import JsonObject

LINE_CHARS = 2000  # of a line being redrawn (a hostile cell may never end it)
LAST_LINES = 5  # completed lines shown beside the bar
TEXT_CHARS = 1500  # of an event's text
FAST_SECONDS, SLOW_SECONDS, SLOW_AFTER = 0.5, 5.0, 60.0  # coalescing: two a second, then one per 5 s

# tqdm: " 45%|████▌     | 45/100 [00:01<00:01, 40.0it/s]"
_COUNT = re.compile(r"(\d+(?:\.\d+)?)/(\d+(?:\.\d+)?)\s*\[")
_PERCENT = re.compile(r"(\d{1,3}(?:\.\d+)?)%")
_ETA = re.compile(r"<((?:\d+:)?\d{1,2}:\d{2})")
_PROGRESS_MODELS = ("IntProgressModel", "FloatProgressModel")


def _last_draw(line: str) -> str:
    """What a terminal shows of a line redrawn with `\\r`: the text after the last one with any."""
    parts = [part for part in line.split("\r") if part]
    return parts[-1] if parts else ""


def _seconds(clock: str) -> float:
    total = 0.0
    for part in clock.split(":"):
        total = total * 60 + int(part)
    return total


def bar_figures(line: str) -> tuple[float | None, float | None]:
    """(percent, eta in seconds) a text bar's line says, each None when it does not."""
    percent: float | None = None
    if (count := _COUNT.search(line)) and float(count[2]) > 0:
        percent = min(100.0, 100.0 * float(count[1]) / float(count[2]))
    elif match := _PERCENT.search(line):
        percent = min(100.0, float(match[1]))
    eta = _ETA.search(line)
    return percent, (_seconds(eta[1]) if eta else None)


class ProgressReader:
    """One cell's progress: fed its stream outputs and iopub comm messages, it returns the outputs to
    keep and, at most every FAST/SLOW_SECONDS, a `cell_progress` event."""

    def __init__(self, call_id: str) -> None:
        self._call_id = call_id
        self._started = time.monotonic()
        self._partial: dict[str, str] = {}  # stream name -> the line being redrawn (streams that used \r)
        self._lines: deque[str] = deque(maxlen=LAST_LINES)
        self._bar: str = ""
        self._percent: float | None = None
        self._eta: float | None = None
        self._widgets: dict[str, JsonObject] = {}  # comm id -> a progress widget's state
        self._changed = False
        self._sent_at = float("-inf")

    def stream(self, output: JsonObject) -> JsonObject | None:
        """The stream output to keep (its redrawn parts dropped; None if only a redraw)."""
        name, text = str(output.get("name", "stdout")), str(output.get("text", ""))
        if "\r" not in text and name not in self._partial:
            self._note_lines(text.splitlines())
            return output
        *done, partial = (self._partial.get(name, "") + text).split("\n")
        lines = [_last_draw(line) for line in done]
        self._partial[name] = partial[-LINE_CHARS:]
        self._note_lines(lines)
        if drawn := _last_draw(self._partial[name]):
            self._bar = drawn[-LINE_CHARS:]
            self._percent, self._eta = bar_figures(self._bar)
            self._changed = True
        return {**output, "text": "".join(f"{line}\n" for line in lines)} if lines else None

    def comm(self, msg_type: str, content: Mapping[str, object]) -> None:
        """An iopub comm message: a progress widget opened or updated."""
        comm_id = str(content.get("comm_id", ""))
        data = content.get("data")
        state = data.get("state") if isinstance(data, dict) else None
        if not isinstance(state, dict):
            return
        if msg_type == "comm_open" and state.get("_model_name") in _PROGRESS_MODELS:
            self._widgets[comm_id] = dict(state)
        elif msg_type == "comm_msg" and comm_id in self._widgets:
            self._widgets[comm_id].update(state)
        else:
            return
        widget = self._widgets[comm_id]
        low, high, value = widget.get("min", 0), widget.get("max", 100), widget.get("value", 0)
        if isinstance(low, (int, float)) and isinstance(high, (int, float)) and isinstance(value, (int, float)):
            if high > low:
                self._percent = max(0.0, min(100.0, 100.0 * (value - low) / (high - low)))
                self._changed = True

    def finish(self) -> list[JsonObject]:
        """The lines still being redrawn when the cell ended, as the outputs that keep them."""
        ended = [(name, _last_draw(text)) for name, text in self._partial.items()]
        self._partial.clear()
        return [{"output_type": "stream", "name": name, "text": text} for name, text in ended if text]

    def event(self, force: bool = False) -> CellProgressEventDict | None:
        """A `cell_progress` event, if something changed and it is time (coalesced)."""
        now = time.monotonic()
        elapsed = now - self._started
        interval = FAST_SECONDS if elapsed < SLOW_AFTER else SLOW_SECONDS
        if not self._changed or (not force and now - self._sent_at < interval):
            return None
        self._changed, self._sent_at = False, now
        text = "\n".join([*self._lines, self._bar] if self._bar else self._lines)[-TEXT_CHARS:]
        event = make_event("cell_progress", tool_call_id=self._call_id, elapsed_s=round(elapsed, 1), text=text)
        if self._percent is not None:
            event["percent"] = round(self._percent, 1)
        if self._eta is not None:
            event["eta_s"] = self._eta
        return event

    def _note_lines(self, lines: list[str]) -> None:
        for line in lines[-LAST_LINES:]:
            self._lines.append(line[-LINE_CHARS:])
