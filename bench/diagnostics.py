"""Warm diagnostics latency for one 50-line cell: Cellwright's in-process pylsp path against pylsp
over stdio (LSP JSON-RPC: initialize, didOpen, then didChange per round, each answered by a
publishDiagnostics). Prints both medians and their ratio. Target: in-process <= 50 ms.

    python bench/diagnostics.py [rounds]
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

from agent_core.tools.diagnostics import lint_code  # noqa: E402

CELL = """import os
import json
import numpy as np
import pandas as pd
from sklearn.model_selection import train_test_split

DATA = os.path.join("data", "sales.csv")


def load(path):
    frame = pd.read_csv(path, parse_dates=["order_date"])
    frame["month"] = frame["order_date"].dt.to_period("M")
    return frame


def summarize(frame):
    by_region = frame.groupby("region", observed=True).agg(
        orders=("order_id", "nunique"),
        revenue=("amount", "sum"),
    )
    by_region["share"] = by_region["revenue"] / by_region["revenue"].sum()
    return by_region.sort_values("revenue", ascending=False)


def features(frame):
    X = frame[["amount", "quantity", "discount"]].fillna(0)
    y = (frame["returned"] == "yes").astype(int)
    return train_test_split(X, y, test_size=0.2, random_state=42, stratify=y)


sales = load(DATA)
summary = summarize(sales)
print(summary.head(10))

X_train, X_test, y_train, y_test = features(sales)
print(X_train.shape, X_test.shape)

monthly = sales.groupby("month")["amount"].sum()
growth = monthly.pct_change().dropna()
print(growth.describe())
top_regions = summary.index[:3].tolist()
print("top regions:", ", ".join(top_regions))

unused_total = np.log1p(sales["amount"]).mean()
pattern = "\\d+-\\d+"
best_month = monthly.idxmax()
print(f"best month: {best_month}")
print(undefined_threshold)
with open("summary.json", "w") as handle:
    json.dump({"best": str(best_month)}, handle)
"""


def variant(round_: int) -> str:
    return CELL + f"# round {round_}\n"  # a real change each round, so nothing can be served from a cache


async def in_process(root: Path, rounds: int) -> tuple[list[float], int]:
    await lint_code(variant(-1), root)  # warm: imports, pylsp Config and Workspace
    times, count = [], 0
    for round_ in range(rounds):
        started = time.perf_counter()
        result = await lint_code(variant(round_), root)
        times.append(time.perf_counter() - started)
        count = len(result.diagnostics)
    return times, count


class LspClient:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.next_id = 0

    async def send(self, method: str, params: Any, request: bool = False) -> int | None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
        ident = None
        if request:
            self.next_id += 1
            ident = message["id"] = self.next_id
        body = json.dumps(message).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        await self.proc.stdin.drain()
        return ident

    async def receive(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        length = 0
        while True:
            line = await self.proc.stdout.readline()
            if not line:
                raise RuntimeError("pylsp closed its output")
            if line in (b"\r\n", b"\n"):
                break
            name, _, value = line.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value)
        return json.loads(await self.proc.stdout.readexactly(length))

    async def until(self, predicate: Any, timeout: float = 30) -> dict[str, Any]:
        async def wait() -> dict[str, Any]:
            while True:
                message = await self.receive()
                if predicate(message):
                    return message

        return await asyncio.wait_for(wait(), timeout)


async def over_stdio(root: Path, rounds: int) -> tuple[list[float], int]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "pylsp",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    client = LspClient(proc)
    uri = (root / "cell.py").as_uri()
    try:
        ident = await client.send(
            "initialize", {"processId": None, "rootUri": root.as_uri(), "capabilities": {}}, request=True
        )
        await client.until(lambda m: m.get("id") == ident)
        await client.send("initialized", {})

        def is_diagnostics(message: dict[str, Any]) -> bool:
            return message.get("method") == "textDocument/publishDiagnostics" and message["params"]["uri"] == uri

        await client.send(
            "textDocument/didOpen",
            {"textDocument": {"uri": uri, "languageId": "python", "version": 0, "text": variant(-1)}},
        )
        await client.until(is_diagnostics)  # warm
        times, count = [], 0
        for round_ in range(rounds):
            started = time.perf_counter()
            change = {
                "textDocument": {"uri": uri, "version": round_ + 1},
                "contentChanges": [{"text": variant(round_)}],
            }
            await client.send("textDocument/didChange", change)
            message = await client.until(is_diagnostics)
            times.append(time.perf_counter() - started)
            count = len(message["params"]["diagnostics"])
        ident = await client.send("shutdown", None, request=True)
        await client.until(lambda m: m.get("id") == ident)
        await client.send("exit", None)
        await asyncio.wait_for(proc.wait(), 5)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    return times, count


async def main(rounds: int) -> None:
    assert len(CELL.splitlines()) == 50
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        fast, fast_count = await in_process(root, rounds)
        slow, slow_count = await over_stdio(root, rounds)
    fast_ms, slow_ms = statistics.median(fast) * 1000, statistics.median(slow) * 1000
    print(f"50-line cell, {rounds} warm rounds each")
    print(
        f"in-process (Cellwright):  median {fast_ms:7.1f} ms  (max {max(fast) * 1000:.1f} ms; {fast_count} diagnostics, style nits filtered)"
    )
    print(
        f"pylsp over stdio:         median {slow_ms:7.1f} ms  (max {max(slow) * 1000:.1f} ms; {slow_count} diagnostics, all plugins)"
    )
    print(f"ratio stdio / in-process: {slow_ms / fast_ms:.0f}x")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 10))
