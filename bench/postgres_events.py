"""The event log on PostgreSQL (two servers, one database) versus SQLite (one server).

1. Appends per second at the store: 50 threads appending at once, through the real EventLog
   (group commit, per-thread seq). SQLite: one process. PostgreSQL: two processes ("servers"),
   25 threads each, on one database.
2. SSE delivery delay through real Jupyter servers: 50 runs streaming at once (one token per
   `pace` ms, stored coalesced); per stored token row, delay = read by the client - written by the
   scripted model (same process, same clock). SQLite: one server drives and serves every thread.
   PostgreSQL: two servers each drive half the runs, and each thread is read on the OTHER server
   (every event crosses servers: NOTIFY, then a read). Prints p50/p95 and the ratios.

Needs Debian's postgresql (the throwaway cluster of devtools/postgres_cluster.py).

    python bench/postgres_events.py [threads] [events_per_thread] [tokens] [pace_ms]
"""

from __future__ import annotations

import asyncio
import multiprocessing
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.many_threads import delays_from, pct, tokens_of  # noqa: E402
from devtools.jupyter_process import TOKEN, JupyterProcess  # noqa: E402
from devtools.model_process import ModelProcess  # noqa: E402
from devtools.postgres_cluster import PostgresCluster, unavailable  # noqa: E402

START_DELAY = 1.5  # the scripted model waits: every reader is connected before tokens flow


# -- 1. appends per second at the store


async def _append(path: str, url: str, threads: int, events: int, ready: Any, go: Any) -> float:
    from agent_core.storage.thread_store import ThreadStore

    store = ThreadStore(Path(path), owner="bench", database_url=url)
    await store.open()
    ids = [(await store.create("b.ipynb", "t")).thread_id for _ in range(threads)]
    ready.set()
    go.wait()
    started = time.perf_counter()

    async def one(thread: str) -> None:
        for i in range(events):
            await store.events.append(thread, {"type": "token", "text": f" w{i}"})

    await asyncio.gather(*[one(t) for t in ids])
    elapsed = time.perf_counter() - started
    await store.close()
    return elapsed


def _appender(path: str, url: str, threads: int, events: int, ready: Any, go: Any, out: Any) -> None:
    out.put(asyncio.run(_append(path, url, threads, events, ready, go)))


def appends_per_second(path: str, url: str, processes: int, threads: int, events: int) -> float:
    ctx = multiprocessing.get_context("spawn")
    go, out = ctx.Event(), ctx.Queue()
    readies = [ctx.Event() for _ in range(processes)]
    workers = [
        ctx.Process(target=_appender, args=(path, url, threads // processes, events, r, go, out)) for r in readies
    ]
    for worker in workers:
        worker.start()
    for ready in readies:
        ready.wait(120)
    go.set()
    slowest = max(out.get(timeout=600) for _ in workers)
    for worker in workers:
        worker.join()
    return threads // processes * processes * events / slowest


# -- 2. SSE delivery through real servers


async def _read(client: httpx.AsyncClient, thread: str) -> tuple[list[tuple[float, str]], str, bool]:
    """One thread's stored token rows as they arrive: (when each row was read and its text, the
    whole text, the run completed)."""
    import json

    pieces: list[tuple[float, str]] = []
    kind, completed, stored = "", False, ""
    while not completed:
        async with client.stream("GET", f"cellwright/api/threads/{thread}/events", params={"after": 0}) as response:
            pieces, stored = [], ""
            async for line in response.aiter_lines():
                if line.startswith("event: "):
                    kind = line[7:]
                elif line.startswith("data: "):
                    event = json.loads(line[6:])
                    if kind == "token":
                        pieces.append((time.perf_counter(), event["text"]))
                        stored += event["text"]
                    completed = completed or kind == "run_finished"
        if not completed:
            await asyncio.sleep(0.05)  # not started yet on the driving server: ask again
    return pieces, stored, completed


async def delivery(
    model: ModelProcess,
    drivers: list[JupyterProcess],
    readers: list[JupyterProcess],
    threads: int,
    count: int,
    pace: float,
) -> list[float]:
    headers = {"Authorization": f"token {TOKEN}"}
    limits = httpx.Limits(max_connections=4 * threads, max_keepalive_connections=4 * threads)
    clients = [
        httpx.AsyncClient(base_url=s.url, headers=headers, limits=limits, timeout=300) for s in drivers + readers
    ]
    try:
        drive, read = clients[: len(drivers)], clients[len(drivers) :]
        ids = [
            (await drive[n % len(drive)].post("cellwright/api/threads", json={"notebook_path": "b.ipynb"})).json()[
                "thread_id"
            ]
            for n in range(threads)
        ]
        scripts = [tokens_of(n, count) for n in range(threads)]
        model.script(scripts, pace, START_DELAY)
        model.sends()  # forget the warm-up's
        by_first = {tokens[0]: tokens for tokens in scripts}
        posted = await asyncio.gather(
            *[
                drive[n % len(drive)].post(f"cellwright/api/threads/{t}/runs", json={"message": "hi"})
                for n, t in enumerate(ids)
            ]
        )
        assert all(r.status_code == 202 for r in posted), [r.text for r in posted if r.status_code != 202][:3]
        # Each thread is read on the server that does not drive it (with one server: that one).
        results = await asyncio.gather(*[_read(read[(n + 1) % len(read)], t) for n, t in enumerate(ids)])
        assert all(done for _, _, done in results)
        sent = model.sends()
        return [
            delay
            for pieces, stored, _ in results
            for delay in delays_from(pieces, by_first[stored[: stored.find(" ", 1)]], sent)
        ]
    finally:
        for client in clients:
            await client.aclose()


def _servers(base: Path, env: dict[str, str], count: int) -> list[JupyterProcess]:
    servers = [JupyterProcess(base / f"s{n}", env).start() for n in range(count)]
    for server in servers:  # warm: the graph and the pool open on the first run
        with httpx.Client(base_url=server.url, headers={"Authorization": f"token {TOKEN}"}, timeout=60) as warm:
            thread = warm.post("cellwright/api/threads", json={"notebook_path": "b.ipynb"}).json()["thread_id"]
            warm.post(f"cellwright/api/threads/{thread}/runs", json={"message": "hi"})
            warm.get(f"cellwright/api/threads/{thread}/events")
    return servers


def main(threads: int, events: int, count: int, pace_ms: float) -> None:
    reason = unavailable()
    if reason:
        sys.exit(reason)
    # The model's process forks first: before this one has threads of its own (the appenders' queues)
    with ModelProcess() as model:
        cluster = PostgresCluster().start()
        try:
            with tempfile.TemporaryDirectory() as tmp:
                sqlite_rate = appends_per_second(str(Path(tmp) / "threads.sqlite"), "", 1, threads, events)
                pg_url = cluster.new_database()
                pg_rate = appends_per_second(str(Path(tmp) / "unused.sqlite"), pg_url, 2, threads, events)
            print(f"appends: {threads} threads x {events} events")
            print(f"  SQLite, 1 process:             {sqlite_rate:9.0f} events/s")
            print(f"  PostgreSQL, 2 processes:       {pg_rate:9.0f} events/s   ratio {pg_rate / sqlite_rate:.2f}x")
            figures = {
                name: _delivery_through(model, url, count_servers, threads, count, pace_ms)
                for name, url, count_servers in (("sqlite", "", 1), ("postgres", cluster.new_database(), 2))
            }
        finally:
            cluster.stop()
    s, p = figures["sqlite"], figures["postgres"]
    print(f"SSE delivery: {threads} runs x {count} tokens, one per {pace_ms:g} ms (rows coalesced per 50 ms)")
    print(f"  SQLite, 1 server:                      p50 {pct(s, 0.5):7.1f} ms  p95 {pct(s, 0.95):7.1f} ms")
    print(
        f"  PostgreSQL, 2 servers, read elsewhere: p50 {pct(p, 0.5):7.1f} ms  p95 {pct(p, 0.95):7.1f} ms   "
        f"p95 ratio {pct(p, 0.95) / max(pct(s, 0.95), 0.001):.2f}x"
    )


def _delivery_through(
    model: ModelProcess, url: str, count_servers: int, threads: int, count: int, pace_ms: float
) -> list[float]:
    env = {"OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": "k", "CELLWRIGHT_MODEL": "fake-model"}
    if url:
        env["CELLWRIGHT_DATABASE_URL"] = url
    model.script([[" warm"]] * count_servers)
    with tempfile.TemporaryDirectory() as tmp:
        servers = _servers(Path(tmp), env, count_servers)
        try:
            return asyncio.run(delivery(model, servers, servers, threads, count, pace_ms / 1000))
        finally:
            for server in servers:
                server.stop()


if __name__ == "__main__":
    args = sys.argv[1:]
    main(*(int(a) for a in args[:3]), *(float(a) for a in args[3:4])) if args else main(50, 200, 60, 20.0)
