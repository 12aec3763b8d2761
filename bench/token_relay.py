"""A 300-token answer through Cellwright's server versus the same scripted stream read directly by
the openai client, in one run. Prints, as medians over rounds:

- total time (request -> last token) for a burst (the model sends as fast as it can), and the ratio;
- per-token relay delay: when a token reached the reader minus when the scripted server wrote it
  (CLOCK_MONOTONIC; the model runs in its own process, devtools/model_process.py), for a paced stream (one token per `pace_ms`), direct and through
  the server; the relay's overhead is the difference. The server's reader asks for token previews
  (`previews=1`); without them a token waits for its coalesced row (up to 50 ms).

The server runs on a CPU of its own, the client and the model on the other (devtools/cpu_split.py).

    python bench/token_relay.py [rounds] [pace_ms]
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
import openai

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from devtools.cpu_split import split_cpus  # noqa: E402
from devtools.jupyter_process import TOKEN, JupyterProcess  # noqa: E402
from devtools.model_process import ModelProcess  # noqa: E402

TOKENS = [f" w{i:03d}" for i in range(300)]  # distinct: a token is found in the text by its offset
ENDS = [sum(len(t) for t in TOKENS[: i + 1]) for i in range(len(TOKENS))]


def _arrivals(stamps: list[tuple[float, int]]) -> list[float]:
    """Per token, the first time the reader had all of its characters (stamps: time, chars so far)."""
    out, k = [], 0
    for end in ENDS:
        while stamps[k][1] < end:
            k += 1
        out.append(stamps[k][0])
    return out


def _sent(model: ModelProcess) -> list[float]:
    """When the model wrote each token of the last answer."""
    sends = model.sends()
    return [sends[token] for token in TOKENS]


def direct(model: ModelProcess, client: openai.OpenAI, pace: float) -> tuple[float, list[float]]:
    model.script([TOKENS], pace)
    started = time.perf_counter()
    stamps, chars = [], 0
    stream = client.chat.completions.create(
        model="fake-model", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            chars += len(chunk.choices[0].delta.content)
            stamps.append((time.perf_counter(), chars))
    arrivals = _arrivals(stamps)
    return arrivals[-1] - started, [a - s for a, s in zip(arrivals, _sent(model), strict=False)]


def through_server(
    model: ModelProcess, client: httpx.Client, pace: float, previews: bool = True
) -> tuple[float, list[float]]:
    model.script([TOKENS], pace)
    thread = client.post("cellwright/api/threads", json={"notebook_path": "b.ipynb"}).json()["thread_id"]
    started = time.perf_counter()
    client.post(f"cellwright/api/threads/{thread}/runs", json={"message": "hi"})
    # As a reader that asks for previews keeps text: stored tokens, plus previews of the row not yet stored.
    stamps, stored, previewed, kind = [], 0, {}, ""
    with client.stream("GET", f"cellwright/api/threads/{thread}/events?previews={int(previews)}") as response:
        for line in response.iter_lines():
            if line.startswith("event: "):
                kind = line[7:]
            elif line.startswith("data: ") and kind == "token":
                event = json.loads(line[6:])
                if event.get("live_only"):
                    previewed[event["stored_as"]] = previewed.get(event["stored_as"], 0) + len(event["text"])
                else:
                    stored += len(event["text"])
                    previewed = {seq: n for seq, n in previewed.items() if seq > event["seq"]}
                chars = stored + sum(previewed.values())
                if not stamps or chars > stamps[-1][1]:
                    stamps.append((time.perf_counter(), chars))
                if stored >= ENDS[-1]:
                    break
    arrivals = _arrivals(stamps)
    return arrivals[-1] - started, [a - s for a, s in zip(arrivals, _sent(model), strict=False)]


def main(rounds: int, pace_ms: float) -> None:
    pace = pace_ms / 1000
    with ModelProcess() as model, tempfile.TemporaryDirectory() as tmp:
        env = {"OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": "k", "CELLWRIGHT_MODEL": "fake-model"}
        server = JupyterProcess(Path(tmp), env).start()
        print(split_cpus(server.proc.pid, [os.getpid(), model.pid]))
        http = httpx.Client(base_url=server.url, headers={"Authorization": f"token {TOKEN}"}, timeout=60)
        sdk = openai.OpenAI(base_url=model.base_url, api_key="k", max_retries=0)
        results: dict[str, list[tuple[float, list[float]]]] = {
            "direct burst": [],
            "server burst": [],
            "direct paced": [],
            "server paced": [],
        }
        try:
            through_server(model, http, 0)  # warm: the first run opens the checkpointer and imports langgraph
            direct(model, sdk, 0)
            for _ in range(rounds):  # interleaved, so both see the same load on the machine
                results["direct burst"].append(direct(model, sdk, 0))
                results["server burst"].append(through_server(model, http, 0))
                results["direct paced"].append(direct(model, sdk, pace))
                results["server paced"].append(through_server(model, http, pace))
        finally:
            http.close()
            server.stop()
    ms = 1000

    def total(key: str) -> float:
        return statistics.median(t for t, _ in results[key])

    def delays(key: str) -> list[float]:
        return sorted(d for _, ds in results[key] for d in ds)

    def pct(values: list[float], p: float) -> float:
        return values[min(len(values) - 1, int(p * len(values)))] * ms

    print(f"rounds: {rounds}, {len(TOKENS)} tokens; paced: one token per {pace_ms:g} ms")
    print(f"burst total, direct:             median {total('direct burst') * ms:7.1f} ms")
    print(f"burst total, through Cellwright: median {total('server burst') * ms:7.1f} ms")
    print(f"  ratio {total('server burst') / total('direct burst'):.2f}x")
    print(
        f"paced total, direct {total('direct paced') * ms:.1f} ms, through Cellwright {total('server paced') * ms:.1f} ms, "
        f"ratio {total('server paced') / total('direct paced'):.2f}x"
    )
    d, s = delays("direct paced"), delays("server paced")
    print(
        f"paced per-token delay (written by the model -> read by the client), direct:  p50 {pct(d, 0.5):6.2f} ms  p95 {pct(d, 0.95):6.2f} ms"
    )
    print(
        f"paced per-token delay, through Cellwright:                                  p50 {pct(s, 0.5):6.2f} ms  p95 {pct(s, 0.95):6.2f} ms"
    )
    print(f"per-token relay overhead: p50 {pct(s, 0.5) - pct(d, 0.5):.2f} ms, p95 {pct(s, 0.95) - pct(d, 0.95):.2f} ms")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5, float(sys.argv[2]) if len(sys.argv) > 2 else 1.0)
