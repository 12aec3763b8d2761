"""What the data policy and the record of requests cost, measured in one run.

- Redaction cost per 100 KB of context: Cellwright's prepare() (agent_core.privacy.outgoing) on a
  realistic ~100 KB request (tool results with DataFrame prints, a CSV, cell errors, emails, phones,
  card numbers), under redact and schema_only, against the baseline of serialising the same
  messages to JSON (what the SDK does with every request anyway). Prints medians in ms and the ratios.
- Record storage per 100 model calls: a thread whose context grows by a ~1.5 KB tool result per
  call (as an agent's does), recorded through the real RequestLog in SQLite; the bytes of the bodies
  sent and of the database file, then the same for 300 calls (the newest 200 keep their bodies).

    python bench/data_policy.py [rounds]
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent_core.privacy.outgoing import forget, prepare  # noqa: E402
from agent_core.storage.request_log import KEEP_BODIES  # noqa: E402
from agent_core.storage.thread_store import ThreadStore  # noqa: E402

KB = 1024


def frame_print(rows: int, seed: int) -> str:
    lines = ["     name                     email            phone                 card   amount"]
    for i in range(rows):
        n = seed * 1000 + i
        lines.append(
            f"{i:>4} user{n:<6} user{n}@example.com  +1 415 555 {n % 10000:04d}  4111 1111 1111 1111  {n * 3.7:9.2f}"
        )
    return "\n".join(lines)


def conversation(calls: int, result_chars: int = 1500) -> list[dict[str, Any]]:
    """A system prompt, the user's message, then `calls` tool calls and results of ~result_chars each."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are Cellwright, a data science agent. " * 60},
        {"role": "user", "content": "Clean the customer table and email me at boss@corp.example.com"},
    ]
    for i in range(calls):
        name, args = (
            ("run_cell", {"code": f"print(customers.iloc[{i}:{i + 12}])"})
            if i % 3
            else ("read_file", {"path": f"data/part{i}.csv"})
        )
        body = frame_print(12, i)[:result_chars]
        if i % 7 == 0:
            body += f"\nKeyError: 'user{i}@example.com'"
        call = {"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": body})
    return messages


def context_of(size: int) -> list[dict[str, Any]]:
    calls = 1
    while len(json.dumps(conversation(calls))) < size:
        calls += 1
    return conversation(calls)


def median_ms(fn: Any, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


async def storage(calls: int) -> tuple[int, int, int]:
    """(bytes of the bodies sent, bytes of the SQLite file, bodies kept) for a thread of `calls` requests."""
    with tempfile.TemporaryDirectory() as tmp:
        store = ThreadStore(Path(tmp) / "threads.sqlite", owner="bench")
        await store.open()
        thread = await store.create("n.ipynb", "bench")
        sent = 0
        for n in range(1, calls + 1):
            body = json.dumps({"model": "m", "messages": conversation(n), "stream": True}).encode()
            sent += len(body)
            await store.requests.add(thread.thread_id, "main", "", "turn", body, 0, [{"kind": "file", "name": "x"}])
        kept = sum(1 for r in await store.requests.list(thread.thread_id) if r.body is not None)
        await store.database.call(lambda conn: conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall())
        await store.database.call(lambda conn: conn.execute("VACUUM").fetchall())
        size = (Path(tmp) / "threads.sqlite").stat().st_size
        await store.close()
        return sent, size, kept


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    messages = context_of(100 * KB)
    size = len(json.dumps(messages))
    scale = 100 * KB / size
    baseline = median_ms(lambda: json.dumps({"model": "m", "messages": messages, "stream": True}), rounds)
    print(f"context: {size / KB:.1f} KB in {len(messages)} messages; medians of {rounds} rounds, per 100 KB")
    print(f"  baseline (serialise the request to JSON): {baseline * scale:7.2f} ms")
    for policy in ("full", "redact", "schema_only"):

        def cold(p: str = policy) -> None:
            forget()  # every text searched as if it had never been sent
            prepare(messages, [], p)  # type: ignore[arg-type]

        cost = median_ms(cold, rounds)
        found = prepare(messages, [], policy).redactions  # type: ignore[arg-type]
        print(
            f"  prepare, {policy:<11} (every text new): {cost * scale:7.2f} ms  ({cost / baseline:6.2f} x the "
            f"baseline; {found} values replaced)"
        )
    # A turn as an agent sends it: the history again, plus one new tool result (its texts seen before).
    grown = messages + conversation(len(messages) // 2 + 1)[-2:]
    for policy in ("redact", "schema_only"):
        times: list[float] = []
        for _ in range(rounds):
            forget()
            prepare(messages, [], policy)  # type: ignore[arg-type]  # the previous turn
            start = time.perf_counter()
            prepare(grown, [], policy)  # type: ignore[arg-type]
            times.append((time.perf_counter() - start) * 1000)
        cost = statistics.median(times)
        print(
            f"  prepare, {policy:<11} (the next turn): {cost * scale:7.2f} ms  ({cost / baseline:6.2f} x the baseline)"
        )
    for calls in (100, 300):
        sent, stored, kept = asyncio.run(storage(calls))
        print(
            f"record of {calls} model calls: bodies sent {sent / KB / KB:6.1f} MB, SQLite file {stored / KB / KB:6.1f} MB "
            f"({stored / sent:4.2f} x), {kept} bodies kept (limit {KEEP_BODIES}); "
            f"per 100 calls: {stored / KB / KB * 100 / calls:5.1f} MB"
        )


if __name__ == "__main__":
    main()
