"""Per-stage clocks for the path benches (bench/paths.py): where a round's time goes, seen from
outside the server as a client does, plus two vantage points the server does not control: the
scripted model (when it was asked) and the kernel's iopub (when it went busy and idle for whom).

    clock = Clock()            # a round starts
    clock.mark("POST answered")
    stages.add(clock)          # after the round: each mark's offset from the start, per stage
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jupyter_client import BlockingKernelClient

from devtools.fake_llm_script import Reply


class Clock:
    """The marks of one round, in seconds since it started (the first mark of a name wins)."""

    def __init__(self) -> None:
        self.start = time.perf_counter()
        self.marks: dict[str, float] = {}

    def mark(self, stage: str, at: float | None = None) -> None:
        self.marks.setdefault(stage, (at if at is not None else time.perf_counter()) - self.start)

    def stamped(self, stage: str, reply: Reply) -> Callable[[dict[str, Any]], Reply]:
        """A script item for the scripted model that marks `stage` when the request arrives."""

        def item(body: dict[str, Any]) -> Reply:
            self.mark(stage)
            return reply

        return item


def pct(values: list[float], q: float) -> float:
    """The q-quantile of `values` in ms (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))] * 1000


@dataclass
class Stages:
    """The rounds of one path: each stage's offsets from its round's start."""

    name: str
    values: dict[str, list[float]] = field(default_factory=dict)

    def add(self, clock: Clock) -> None:
        for stage, offset in sorted(clock.marks.items(), key=lambda item: item[1]):
            self.values.setdefault(stage, []).append(offset)

    def p50(self, stage: str) -> float:
        return pct(self.values[stage], 0.5)

    def p95(self, stage: str) -> float:
        return pct(self.values[stage], 0.95)

    def lines(self) -> list[str]:
        rows = [f"  {self.name}"]
        previous = 0.0
        for stage, values in sorted(self.values.items(), key=lambda item: pct(item[1], 0.5)):  # in time order
            p50, p95 = pct(values, 0.5), pct(values, 0.95)
            rows.append(f"    {stage:38s} p50 {p50:7.1f} ms  p95 {p95:7.1f} ms  (+{p50 - previous:6.1f} ms at p50)")
            previous = p50
        return rows


@dataclass(frozen=True)
class KernelMessage:
    at: float  # perf_counter when the observer read it
    parent_type: str  # the request it answers (execute_request, kernel_info_request, ...)
    parent_session: str
    state: str  # the status message's execution_state


class KernelObserver:
    """A second client of a kernel that only reads iopub: every request the kernel's dispatcher serves,
    whoever sent it, shows there as a busy/idle pair, so the server's kernel round trips per turn are
    counted and timed without touching the server. The quick path's answers to read-only probes come
    before the dispatcher and show nothing (agent_core.kernel_probes.quick_answers)."""

    def __init__(self, connection_file: Path) -> None:
        self._client = BlockingKernelClient(connection_file=str(connection_file))
        self._client.load_connection_file()
        self._client.start_channels(shell=False, iopub=True, stdin=False, hb=False, control=False)
        self._seen: list[KernelMessage] = []
        self._lock = threading.Condition()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        while not self._stop.is_set():
            try:
                msg = self._client.get_iopub_msg(timeout=0.2)
            except queue.Empty:
                continue
            if msg["msg_type"] != "status":
                continue
            parent = msg["parent_header"]
            seen = KernelMessage(
                time.perf_counter(),
                str(parent.get("msg_type", "")),
                str(parent.get("session", "")),
                msg["content"]["execution_state"],
            )
            with self._lock:
                self._seen.append(seen)
                self._lock.notify_all()

    def since(self, start: float, not_session: str = "") -> list[KernelMessage]:
        """Status messages read after `start`, except those for requests of session `not_session`."""
        with self._lock:
            return [m for m in self._seen if m.at >= start and m.parent_session != not_session]

    def settle(self, clock: Clock, until: float, not_session: str = "") -> int:
        """Once a round is over (`until`, perf_counter): mark the kernel's first busy and its last
        idle on `clock`, and answer how many requests it served for others meanwhile. The observer
        reads iopub on its own thread: wait (bounded) until it has read past `until`."""
        with self._lock:
            self._lock.wait_for(lambda: not self._busy_after(clock.start, not_session), timeout=2)
        messages = [m for m in self.since(clock.start, not_session) if m.at <= until + 0.5]
        busy = [m for m in messages if m.state == "busy"]
        idle = [m for m in messages if m.state == "idle"]
        if busy:
            clock.mark("kernel busy (first request)", busy[0].at)
        if idle:
            clock.mark("kernel idle (last request)", idle[-1].at)
        return len(busy)

    def _busy_after(self, start: float, not_session: str) -> bool:
        """The last status read after `start` for others is busy (its idle not read yet); lock held."""
        mine = [m for m in self._seen if m.at >= start and m.parent_session != not_session]
        return bool(mine) and mine[-1].state == "busy"

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self._client.stop_channels()
