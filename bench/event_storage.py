"""What the event log stores for a chatty run, through the real EventPump and EventLog (SQLite).

Two workloads, each stored twice in the same run: once one row per emitted event (the baseline:
what the log kept before coalescing and caps), once through Cellwright's pump.
- a cell printing 20 000 lines, emitted as ipykernel sends them (stream messages of ~2 lines);
- a 2 000-token answer, one delta every 0.5 ms (a fast local model).
Prints rows and bytes stored, per cell and per 1 000 tokens, and the ratios. Bounds: a cell's
stored output <= 200 lines head+tail (<= ~100 KB, whatever it prints); tokens <= 1 row per 50 ms.

    python bench/event_storage.py
"""

from __future__ import annotations

import asyncio
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent_core.contract import make_event  # noqa: E402
from agent_core.loop.event_pump import EventPump  # noqa: E402
from agent_core.storage.thread_store import ThreadStore  # noqa: E402

LINES = 20_000
TOKENS = 2_000
TOKEN_GAP_SECONDS = 0.0005


def cell_events() -> list[dict]:
    events = [
        make_event(
            "cell_started", id="c1", code="for i in range(20000): print(i)", notebook_path="n.ipynb", kernel_id="k"
        )
    ]
    for first in range(0, LINES, 2):
        text = "".join(f"{i}\n" for i in range(first, min(first + 2, LINES)))
        events.append(
            make_event("cell_output", id="c1", output={"output_type": "stream", "name": "stdout", "text": text})
        )
    events.append(make_event("cell_finished", id="c1", status="ok", execution_count=1, duration_ms=900))
    return events


def token_events() -> list[dict]:
    return [make_event("token", text=f"word{i} ") for i in range(TOKENS)]


class OneRowPerEvent:
    """The baseline sink: every event its own row, as the log was written before."""

    def __init__(self, threads: ThreadStore, thread_id: str) -> None:
        self.threads, self.thread_id, self.pending = threads, thread_id, []

    def __call__(self, event: dict) -> None:
        self.pending.append(
            asyncio.ensure_future(self.threads.events.append(self.thread_id, {**event, "run_id": "r", "agent": "main"}))
        )

    async def drain(self) -> None:
        await asyncio.gather(*self.pending)


async def store(path: Path, events: list[dict], gap: float, baseline: bool) -> tuple[int, int]:
    threads = ThreadStore(path, owner="bench")
    await threads.open()
    record = await threads.create("n.ipynb", "bench")
    sink = OneRowPerEvent(threads, record.thread_id) if baseline else EventPump(threads.events, record.thread_id, "r")
    for event in events:
        sink(event)
        if gap:
            await asyncio.sleep(gap)
    await sink.drain()
    await threads.close()
    with sqlite3.connect(path) as conn:
        rows, size = conn.execute("SELECT COUNT(*), COALESCE(SUM(LENGTH(data)), 0) FROM events").fetchone()
    return rows, size


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for name, events, gap, per in (
            ("20 000-line cell", cell_events(), 0.0, "per cell"),
            ("2 000-token answer", token_events(), TOKEN_GAP_SECONDS, "per 1 000 tokens"),
        ):
            started = time.monotonic()
            base_rows, base_bytes = await store(Path(tmp) / f"base-{len(events)}.sqlite", events, gap, baseline=True)
            rows, size = await store(Path(tmp) / f"pump-{len(events)}.sqlite", events, gap, baseline=False)
            scale = 1 if per == "per cell" else 1000 / TOKENS
            print(
                f"{name}: one row per event {base_rows} rows / {base_bytes / 1024:.0f} KiB; "
                f"Cellwright {rows} rows / {size / 1024:.1f} KiB "
                f"({rows * scale:.0f} rows and {size * scale / 1024:.1f} KiB {per}); "
                f"ratio rows {base_rows / rows:.0f}x, bytes {base_bytes / size:.1f}x ({time.monotonic() - started:.1f} s)"
            )


if __name__ == "__main__":
    asyncio.run(main())
