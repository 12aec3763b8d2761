"""Many threads streaming at once: N runs of T tokens each through Cellwright's server, read live
(with token previews) by one asyncio client, versus the same N streams read straight from the
scripted server by the same client. Per token, delay = read by the client - written by the scripted
server (same process, same clock). Prints p50/p95 of both, and checks every run finished with its
stored seqs gapless and every token stored once, in order.

    python bench/many_threads.py [threads] [tokens] [pace_ms]     (e.g. 500 threads: python bench/many_threads.py 500)
    PROFILE=.output/many.raw python bench/many_threads.py    (py-spy's collapsed stacks of the server meanwhile)
"""
from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from devtools import fake_llm  # noqa: E402
from devtools.fake_llm import FakeLLM, text  # noqa: E402
from devtools.jupyter_process import TOKEN, JupyterProcess  # noqa: E402

sent: dict[str, float] = {}  # token text -> when the scripted server wrote it
START_DELAY = 1.0  # the scripted model waits this long, so every reader is connected before tokens flow


def _record_sends() -> None:
    fake_llm._Server.request_queue_size = 1024  # the default backlog of 5 resets a hundred connects
    original = fake_llm._Handler._write_chunk

    def write_chunk(self: fake_llm._Handler, data: bytes) -> None:
        original(self, data)
        if data.startswith(b"data: {"):
            for choice in json.loads(data[6:])["choices"]:
                content = (choice.get("delta") or {}).get("content")
                if content:
                    sent[content] = time.perf_counter()

    fake_llm._Handler._write_chunk = write_chunk  # type: ignore[method-assign]


def tokens_of(n: int, count: int) -> list[str]:
    return [f" t{n}x{i}" for i in range(count)]


def delays_from(pieces: list[tuple[float, str]], tokens: list[str]) -> list[float]:
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


async def direct_stream(client: httpx.AsyncClient, base_url: str, by_first: dict[str, list[str]]) -> list[float]:
    pieces: list[tuple[float, str]] = []
    body = {"model": "fake-model", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    async with client.stream("POST", f"{base_url}/chat/completions", json=body) as response:
        async for line in response.aiter_lines():
            if line.startswith("data: {"):
                for choice in json.loads(line[6:])["choices"]:
                    content = (choice.get("delta") or {}).get("content")
                    if content:
                        pieces.append((time.perf_counter(), content))
    return delays_from(pieces, by_first[pieces[0][1]])


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


async def run(llm: FakeLLM, server: JupyterProcess, threads: int, count: int, pace: float) -> None:
    limits = httpx.Limits(max_connections=2 * threads + 10, max_keepalive_connections=2 * threads + 10)
    async with httpx.AsyncClient(limits=limits, timeout=300) as plain, httpx.AsyncClient(
        base_url=server.url, headers={"Authorization": f"token {TOKEN}"}, limits=limits, timeout=300
    ) as client:
        scripts = [tokens_of(n, count) for n in range(threads)]
        llm.script(*[text(tokens, chunk_delay=pace, delay_before=START_DELAY) for tokens in scripts])
        started = time.perf_counter()
        direct = await asyncio.gather(*[direct_stream(plain, llm.base_url, {t[0]: t for t in scripts}) for _ in scripts])
        direct_wall = time.perf_counter() - started

        ids = [(await client.post("cellwright/api/threads", json={"notebook_path": "b.ipynb"})).json()["thread_id"] for _ in range(threads)]
        scripts = [tokens_of(threads + n, count) for n in range(threads)]  # a fresh text: send times are by text
        llm.script(*[text(tokens, chunk_delay=pace, delay_before=START_DELAY) for tokens in scripts])
        profiler = _profiler(server)
        started = time.perf_counter()
        posted = await asyncio.gather(*[client.post(f"cellwright/api/threads/{t}/runs", json={"message": "hi"}) for t in ids])
        assert all(r.status_code == 202 for r in posted), [r.text for r in posted if r.status_code != 202][:3]
        # The scripted replies go out in request order, not thread order: a thread's text is found by its first token.
        by_first = {tokens[0]: tokens for tokens in scripts}
        served = await asyncio.gather(*[served_stream(client, t, by_first) for t in ids])
        served_wall = time.perf_counter() - started
        if profiler is not None:
            profiler.send_signal(signal.SIGINT)
            profiler.wait()
    d = [x for ds in direct for x in ds]
    s = [x for ds, _, _ in served for x in ds]
    finished = sum(1 for _, _, status in served if status == "completed")
    gapless = all(seqs == list(range(seqs[0], seqs[0] + len(seqs))) for _, seqs, _ in served if seqs)
    print(f"{threads} threads x {count} tokens, one token per {pace * 1000:g} ms")
    print(f"direct (same client, straight from the scripted server): p50 {pct(d, .5):7.1f} ms  p95 {pct(d, .95):7.1f} ms  wall {direct_wall:.2f} s")
    print(f"through Cellwright (previews=1):                         p50 {pct(s, .5):7.1f} ms  p95 {pct(s, .95):7.1f} ms  wall {served_wall:.2f} s")
    print(f"p95 above the floor: {pct(s, .95) - pct(d, .95):.1f} ms; runs completed {finished}/{threads}; seqs gapless: {gapless}")


async def served_stream(client: httpx.AsyncClient, thread: str, by_first: dict[str, list[str]]) -> tuple[list[float], list[int], str]:
    """One thread's stream, read live with previews; its script is found by its first token."""
    pieces: list[tuple[float, str]] = []
    seqs: list[int] = []
    stored_text, previewed, kind, status = "", {}, "", ""
    async with client.stream("GET", f"cellwright/api/threads/{thread}/events?previews=1") as response:
        async for line in response.aiter_lines():
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
                    extra = event["text"][: len(event["text"]) - len(seen)] if event["text"].endswith(seen) else event["text"]
                    if extra:  # the row's head that no preview brought (the first token of a burst)
                        pieces.append((time.perf_counter(), extra))
    first = stored_text[: stored_text.find(" ", 1)] if stored_text.count(" ") > 1 else stored_text
    tokens = by_first.get(first)
    assert tokens is not None and stored_text == "".join(tokens), f"thread {thread}: stored tokens differ"
    return delays_from(_in_text_order(pieces, stored_text), tokens), seqs, status


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


def main(threads: int, count: int, pace_ms: float) -> None:
    _record_sends()
    with FakeLLM() as llm, tempfile.TemporaryDirectory() as tmp:
        env = {"OPENAI_BASE_URL": llm.base_url, "OPENAI_API_KEY": "k", "CELLWRIGHT_MODEL": "fake-model"}
        server = JupyterProcess(Path(tmp), env).start()
        try:
            warm = httpx.Client(base_url=server.url, headers={"Authorization": f"token {TOKEN}"}, timeout=60)
            llm.script(text("warm"))
            thread = warm.post("cellwright/api/threads", json={"notebook_path": "b.ipynb"}).json()["thread_id"]
            warm.post(f"cellwright/api/threads/{thread}/runs", json={"message": "hi"})
            warm.get(f"cellwright/api/threads/{thread}/events")
            warm.close()
            asyncio.run(run(llm, server, threads, count, pace_ms / 1000))
        finally:
            server.stop()


if __name__ == "__main__":
    args = sys.argv[1:]
    main(int(args[0]) if args else 100, int(args[1]) if len(args) > 1 else 100, float(args[2]) if len(args) > 2 else 10.0)
