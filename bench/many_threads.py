"""Many threads streaming at once: N runs of T tokens each through Cellwright's server, read live
(with token previews) by one asyncio client, versus the same N streams read straight from the
scripted server by the same client. Per token, delay = read by the client - written by the scripted
server (CLOCK_MONOTONIC, one clock for every process). Prints p50/p95 of both, and checks every run
finished with its stored seqs gapless and every token stored once, in order. Each round is printed,
then the round with the median p95 above the floor (one round's p95 moves by tens of ms).

The scripted server runs in a process of its own (devtools/model_process.py): in the client's
process, its hundred writer threads took the GIL from the client, whose reads then lagged by up to
300 ms from the second round on (a loop-lag probe showed it), which was counted as the server's delay.

    python bench/many_threads.py [threads] [tokens] [pace_ms] [rounds]  (e.g. 500 threads: python bench/many_threads.py 500)
    PROFILE=.output/many.raw python bench/many_threads.py    (py-spy's collapsed stacks of the server meanwhile)
    SPLIT_CPUS=1 python bench/many_threads.py    (the server on a CPU of its own, the harness on the other:
                                                  devtools/cpu_split.py; by default they share the machine)
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import httpx
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from devtools.cpu_split import split_cpus  # noqa: E402
from devtools.jupyter_process import TOKEN, JupyterProcess  # noqa: E402
from devtools.model_process import ModelProcess  # noqa: E402

START_DELAY = 1.0  # the scripted model waits this long, so every reader is connected before tokens flow


class ScriptedModel:
    """Fresh token texts for each round's replies, scripted into the model's process."""

    def __init__(self, model: ModelProcess) -> None:
        self._model = model
        self.base_url = model.base_url
        self._next = 0

    def script(self, threads: int, count: int, pace: float) -> list[list[str]]:
        scripts = [tokens_of(self._next + n, count) for n in range(threads)]
        self._next += threads
        self._model.script(scripts, pace, START_DELAY if pace else 0.0)
        return scripts

    def sends(self) -> dict[str, float]:
        return self._model.sends()


def tokens_of(n: int, count: int) -> list[str]:
    return [f" t{n}x{i}" for i in range(count)]


def delays_from(pieces: list[tuple[float, str]], tokens: list[str], sent: dict[str, float]) -> list[float]:
    """Per token, when its last character reached the reader minus when it was written."""
    text, out, k = "", [], 0
    ends, total = [], 0
    for token in tokens:
        total += len(token)
        ends.append(total)
    for at, piece in pieces:
        text += piece
        while k < len(tokens) and len(text) >= ends[k]:
            out.append(at - sent[tokens[k]])
            k += 1
    return out


async def direct_stream(client: aiohttp.ClientSession, base_url: str) -> list[tuple[float, str]]:
    pieces: list[tuple[float, str]] = []
    body = {"model": "fake-model", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    async with client.post(f"{base_url}/chat/completions", json=body) as response:
        async for raw in response.content:
            line = raw.decode().rstrip("\r\n")
            if line.startswith("data: {"):
                for choice in json.loads(line[6:])["choices"]:
                    content = (choice.get("delta") or {}).get("content")
                    if content:
                        pieces.append((time.perf_counter(), content))
    return pieces


def _profiler(server: JupyterProcess) -> subprocess.Popen[bytes] | None:
    """With PROFILE=<file>: py-spy samples the server while the threads stream (collapsed stacks)."""
    out = os.environ.get("PROFILE")
    if not out or server.proc is None:
        return None
    args = ["py-spy", "record", "-p", str(server.proc.pid), "-r", "250", "--format", "raw", "-o", out, "--nonblocking"]
    return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(p * len(values)))] * 1000


async def run(model: ScriptedModel, server: JupyterProcess, threads: int, count: int, pace: float) -> Round:
    # aiohttp, not httpx: httpx's pool held a hundred concurrent GETs for up to 2 s before sending
    # them (its request queue is walked for every connection change), which read as the server's delay.
    connector = lambda: aiohttp.TCPConnector(limit=2 * threads + 10)  # noqa: E731
    timeout = aiohttp.ClientTimeout(total=300)
    async with (
        aiohttp.ClientSession(connector=connector(), timeout=timeout) as plain,
        aiohttp.ClientSession(
            server.url, headers={"Authorization": f"token {TOKEN}"}, connector=connector(), timeout=timeout
        ) as client,
    ):
        scripts = model.script(threads, count, pace)
        started = time.perf_counter()
        direct = await asyncio.gather(*[direct_stream(plain, model.base_url) for _ in scripts])
        direct_wall = time.perf_counter() - started
        by_first = {
            tokens[0]: tokens for tokens in scripts
        }  # replies go out in request order: a text is found by its first token
        sent = model.sends()
        d = [x for pieces in direct for x in delays_from(pieces, by_first[pieces[0][1]], sent)]

        ids = [
            await _post(client, "cellwright/api/threads", {"notebook_path": "b.ipynb"}, "thread_id")
            for _ in range(threads)
        ]
        scripts = model.script(threads, count, pace)
        profiler = _profiler(server)
        cpu = psutil.Process(server.proc.pid) if server.proc else None
        cpu_before = cpu.cpu_times()[:2] if cpu else (0.0, 0.0)
        started = time.perf_counter()
        await asyncio.gather(
            *[_post(client, f"cellwright/api/threads/{t}/runs", {"message": "hi"}, "run_id") for t in ids]
        )
        by_first = {tokens[0]: tokens for tokens in scripts}
        served = await asyncio.gather(*[served_stream(client, t, by_first) for t in ids])
        served_wall = time.perf_counter() - started
        user, system = (a - b for a, b in zip(cpu.cpu_times()[:2] if cpu else (0.0, 0.0), cpu_before, strict=False))
        server_cpu = user + system
        if profiler is not None:
            profiler.send_signal(signal.SIGINT)
            profiler.wait()
    sent = model.sends()
    s = [x for pieces, tokens, _, _ in served for x in delays_from(pieces, tokens, sent)]
    finished = sum(1 for *_, status in served if status == "completed")
    gapless = all(seqs == list(range(seqs[0], seqs[0] + len(seqs))) for _, _, seqs, _ in served if seqs)
    result = Round(pct(d, 0.5), pct(d, 0.95), pct(s, 0.5), pct(s, 0.95), server_cpu, finished, gapless)
    print(
        f"direct (same client, straight from the scripted server): p50 {result.direct_p50:7.1f} ms  p95 {result.direct_p95:7.1f} ms  wall {direct_wall:.2f} s"
    )
    print(
        f"through Cellwright (previews=1):                         p50 {result.served_p50:7.1f} ms  p95 {result.served_p95:7.1f} ms  wall {served_wall:.2f} s"
    )
    print(
        f"p95 above the floor: {result.above:.1f} ms; server CPU {server_cpu:.2f} s (system {system:.2f} s; "
        f"{server_cpu / (threads * count) * 1e6:.0f} us a token, whole runs); runs completed {finished}/{threads}; seqs gapless: {gapless}"
    )
    return result


@dataclass
class Round:
    direct_p50: float
    direct_p95: float
    served_p50: float
    served_p95: float
    server_cpu: float  # seconds, all the server's threads, from the POSTs to the last stream's end
    finished: int
    gapless: bool

    @property
    def above(self) -> float:
        return self.served_p95 - self.direct_p95


async def _post(client: aiohttp.ClientSession, path: str, body: dict[str, str], field: str) -> str:
    async with client.post(path, json=body) as response:
        assert response.status in (201, 202), await response.text()
        return (await response.json())[field]


async def served_stream(
    client: aiohttp.ClientSession, thread: str, by_first: dict[str, list[str]]
) -> tuple[list[tuple[float, str]], list[str], list[int], str]:
    """One thread's stream, read live with previews; its script is found by its first token."""
    pieces: list[tuple[float, str]] = []
    seqs: list[int] = []
    stored_text, previewed, kind, status = "", {}, "", ""
    async with client.get(f"cellwright/api/threads/{thread}/events?previews=1") as response:
        async for raw in response.content:
            line = raw.decode().rstrip("\r\n")
            if line.startswith("event: "):
                kind = line[7:]
            elif line.startswith("data: "):
                event = json.loads(line[6:])
                if "seq" in event and not event.get("live_only") and kind != "caught_up":  # caught_up repeats a seq
                    seqs.append(event["seq"])
                if kind == "run_finished":
                    status = event["status"]
                if kind != "token":
                    continue
                if event.get("live_only"):
                    previewed[event["stored_as"]] = previewed.get(event["stored_as"], "") + event["text"]
                    pieces.append((time.perf_counter(), event["text"]))
                else:
                    stored_text += event["text"]
                    seen = previewed.pop(event["seq"], "")
                    extra = (
                        event["text"][: len(event["text"]) - len(seen)]
                        if event["text"].endswith(seen)
                        else event["text"]
                    )
                    if extra:  # the row's head that no preview brought (the first token of a burst)
                        pieces.append((time.perf_counter(), extra))
    first = stored_text[: stored_text.find(" ", 1)] if stored_text.count(" ") > 1 else stored_text
    tokens = by_first.get(first)
    assert tokens is not None and stored_text == "".join(tokens), f"thread {thread}: stored tokens differ"
    return _in_text_order(pieces, stored_text), tokens, seqs, status


def _in_text_order(pieces: list[tuple[float, str]], text: str) -> list[tuple[float, str]]:
    """Pieces as they build the text: a row's unpreviewed head arrives after its previews but precedes them in the text."""
    out: list[tuple[float, str]] = []
    built = ""
    remaining = list(pieces)
    while remaining and len(built) < len(text):
        for i, (at, piece) in enumerate(remaining):
            if text.startswith(piece, len(built)):
                built += piece
                out.append((max([at] + [a for a, _ in out[-1:]]), piece))
                del remaining[i]
                break
        else:
            break
    return out


def main(threads: int, count: int, pace_ms: float, rounds: int) -> None:
    with ModelProcess() as process, tempfile.TemporaryDirectory() as tmp:
        model = ScriptedModel(process)
        env = {"OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": "k", "CELLWRIGHT_MODEL": "fake-model"}
        server = JupyterProcess(Path(tmp), env).start()
        if os.environ.get("SPLIT_CPUS"):
            print(split_cpus(server.proc.pid, [os.getpid(), process.pid]))
        try:
            warm = httpx.Client(base_url=server.url, headers={"Authorization": f"token {TOKEN}"}, timeout=60)
            model.script(1, 1, 0)
            thread = warm.post("cellwright/api/threads", json={"notebook_path": "b.ipynb"}).json()["thread_id"]
            warm.post(f"cellwright/api/threads/{thread}/runs", json={"message": "hi"})
            warm.get(f"cellwright/api/threads/{thread}/events")
            warm.close()
            print(f"{threads} threads x {count} tokens, one token per {pace_ms:g} ms, {rounds} rounds")
            results = []
            for n in range(rounds):
                print(f"-- round {n + 1}")
                results.append(asyncio.run(run(model, server, threads, count, pace_ms / 1000)))
        finally:
            server.stop()
    middle = sorted(results, key=lambda r: r.above)[len(results) // 2]
    print(
        f"median round: p95 above the floor {middle.above:.1f} ms (floor p95 {middle.direct_p95:.1f} ms, served p95 {middle.served_p95:.1f} ms); "
        f"server CPU median {statistics.median(r.server_cpu for r in results):.2f} s; "
        f"all runs completed: {all(r.finished == threads for r in results)}; seqs gapless: {all(r.gapless for r in results)}"
    )


if __name__ == "__main__":
    args = sys.argv[1:]
    main(
        int(args[0]) if args else 100,
        int(args[1]) if len(args) > 1 else 100,
        float(args[2]) if len(args) > 2 else 10.0,
        int(args[3]) if len(args) > 3 else 3,
    )
