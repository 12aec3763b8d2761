"""Inline completion: how long after typing stops the first ghost text can show, against the
endpoint's own first token measured directly in the same run, and what a typist costs in requests
and tokens per 100 typed characters, with and without the server's cache.

Latency: POST completions (a fresh prefix each round, so no cache) -> its first `delta` line,
versus the openai SDK's own /v1/completions stream of the same prompt -> its first text chunk,
interleaved. The panel
waits DEBOUNCE_MS of quiet before it asks; that wait is printed apart (it is a choice, not a cost).
Measured for a Python file and for a notebook with its kernel running (the kernel's names are read
once, then again only when the notebook's execution count changes, as the panel sends it).

Cost: a typist types TYPED (a few lines of pandas) character by character and pauses after every
word (each pause asks, as the panel does after its debounce); the scripted model suggests the rest
of the line. With the cache, a pause whose prefix was typed ahead into a suggestion makes no request.

    python bench/completion_latency.py [rounds]                              # the scripted model
    python bench/completion_latency.py [rounds] --base-url URL --model NAME  # a real endpoint (latency)
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import openai

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from devtools.fake_llm import FakeLLM, Reply, text  # noqa: E402
from devtools.jupyter_process import TOKEN, JupyterProcess  # noqa: E402

DEBOUNCE_MS = 150  # labextension_src/completion/lines.ts
MODEL_DELAY = 0.02  # the scripted model's time to its first token
TYPED = (
    "import pandas as pd\n"
    "sales = pd.read_csv('sales.csv')\n"
    "by_city = sales.groupby('city')['amount'].sum()\n"
    "top = by_city.sort_values(ascending=False).head(10)\n"
    "print(top.to_string())\n"
)


def p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def direct(client: openai.OpenAI, model: str, prefix: str) -> float:
    started = time.perf_counter()
    stream = client.completions.create(model=model, prompt=prefix, max_tokens=32, temperature=0, stream=True)
    try:
        for chunk in stream:
            if chunk.choices and chunk.choices[0].text:
                return time.perf_counter() - started
    finally:
        stream.close()
    raise RuntimeError("the endpoint streamed no text")


def routed(client: httpx.Client, body: dict[str, Any]) -> float:
    started = time.perf_counter()
    with client.stream("POST", "cellwright/api/completions", json=body) as response:
        assert response.status_code == 200, response.read()
        for line in response.iter_lines():
            chunk = json.loads(line)
            if chunk["type"] == "delta" or (chunk["type"] == "done" and chunk["text"]):
                return time.perf_counter() - started
            if chunk["type"] == "error":
                raise RuntimeError(chunk["message"])
    raise RuntimeError("the route streamed no text")


def captured_headers(http: httpx.Client, kernel: str) -> tuple[str, str]:
    """What the route puts before the prefix in its prompt, for a file and for the notebook (its kernel's
    names included), read from the scripted model it is pointed at first: the direct baseline then sends
    the very same prompt, so a real endpoint's prompt-processing time counts on both sides."""
    with FakeLLM() as capture:
        capture.script(text("x"), text("x"))
        http.put("cellwright/api/config", json={"base_url": capture.base_url}).raise_for_status()
        http.post("cellwright/api/completions", json={"path": "work.py", "prefix": "PREFIX"}).raise_for_status()
        body = {"path": "k.ipynb", "kernel_id": kernel, "execution_count": 1, "prefix": "PREFIX"}
        http.post("cellwright/api/completions", json=body).raise_for_status()
        file_prompt, notebook_prompt = (request["prompt"] for request in capture.requests)
    return file_prompt.removesuffix("PREFIX"), notebook_prompt.removesuffix("PREFIX")


def latency(base_url: str, model: str, rounds: int, llm: FakeLLM | None) -> None:
    if llm is not None:
        llm.script(*[text(["ice", " * 2", " + tax"], delay_before=MODEL_DELAY)] * (rounds * 4 + 10))
    with tempfile.TemporaryDirectory() as tmp:
        env = {"OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "", "CELLWRIGHT_MODEL": model}
        server = JupyterProcess(Path(tmp), env).start()
        http = httpx.Client(base_url=server.url, headers={"Authorization": f"token {TOKEN}"}, timeout=60)
        sdk = openai.OpenAI(base_url=base_url, api_key="none", max_retries=0)
        try:
            kernel = server.open_notebook("k.ipynb")
            file_head, notebook_head = captured_headers(http, kernel)
            http.put("cellwright/api/config", json={"base_url": base_url}).raise_for_status()
            http.post("cellwright/api/completions", json={"path": "warm.py", "prefix": "x = "})  # detection
            raw_file: list[float] = []
            raw_notebook: list[float] = []
            file: list[float] = []
            notebook: list[float] = []
            body = {"path": "k.ipynb", "kernel_id": kernel, "execution_count": 1}
            for i in range(rounds):  # interleaved: all four see the same load on the machine
                file_prefix, notebook_prefix = f"value_{i} = pr", f"total_{i} = pr"
                pairs = [
                    (
                        (raw_file, partial(direct, sdk, model, file_head + file_prefix)),
                        (file, partial(routed, http, {"path": "work.py", "prefix": file_prefix})),
                    ),
                    (
                        (raw_notebook, partial(direct, sdk, model, notebook_head + notebook_prefix)),
                        (notebook, partial(routed, http, {**body, "prefix": notebook_prefix})),
                    ),
                ]
                for first, second in pairs:
                    # Which goes first alternates: an endpoint that reuses the previous prompt's common start
                    # (llama.cpp does) favours the second of the two, each side as often.
                    for sink, measure in (first, second) if i % 2 else (second, first):
                        sink.append(measure())
        finally:
            http.close()
            sdk.close()
            server.stop()
    ms = 1000
    endpoint = f"the scripted model, {MODEL_DELAY * ms:.0f} ms to its first token" if llm else base_url
    print(f"rounds: {rounds}; endpoint: {endpoint}; the same prompts directly and through the route")
    for name, raw, values in [("a .py file", raw_file, file), ("notebook + kernel", raw_notebook, notebook)]:
        print(f"{name}:")
        print(
            f"  endpoint directly (openai SDK), first token: p50 {p(raw, 0.5) * ms:6.1f} ms   p95 {p(raw, 0.95) * ms:6.1f} ms"
        )
        print(
            f"  through the route, first piece:             p50 {p(values, 0.5) * ms:6.1f} ms   "
            f"p95 {p(values, 0.95) * ms:6.1f} ms   overhead at p95 {(p(values, 0.95) - p(raw, 0.95)) * ms:+6.1f} ms "
            "(goal: within +20 ms)"
        )
    print(
        f"keystroke-idle -> first ghost text = the panel's debounce ({DEBOUNCE_MS} ms, after the last key) + the "
        f"route's first piece: p95 {DEBOUNCE_MS + p(notebook, 0.95) * ms:.0f} ms in a notebook"
    )


def typing_cost(cache_seconds: float) -> tuple[int, int, int, int]:
    """(requests, prompt tokens, completion tokens, cached answers) for typing TYPED once."""
    state = {"rest": ""}

    def suggest(body: dict[str, Any]) -> Reply:
        return text(state["rest"] or " ")

    with FakeLLM() as llm, tempfile.TemporaryDirectory() as tmp:
        llm.script(*[suggest] * (len(TYPED) + 10))
        env = {"OPENAI_BASE_URL": llm.base_url, "OPENAI_API_KEY": "", "CELLWRIGHT_MODEL": "fake-model"}
        server = JupyterProcess(Path(tmp), env, extra_args=[f"--Cellwright.completion_cache_seconds={cache_seconds}"])
        server.start()
        http = httpx.Client(base_url=server.url, headers={"Authorization": f"token {TOKEN}"}, timeout=60)
        try:
            for end in range(1, len(TYPED) + 1):
                if TYPED[end - 1].isalnum() or TYPED[end - 1] == "_":
                    continue  # mid-word: the typist does not pause
                prefix = TYPED[:end]
                state["rest"] = TYPED[end:].split("\n", 1)[0]
                with http.stream("POST", "cellwright/api/completions", json={"path": "t.py", "prefix": prefix}) as r:
                    r.read()
            usage = http.get("cellwright/api/completions/usage").json()
        finally:
            http.close()
            server.stop()
    return usage["requests"], usage["prompt_tokens"], usage["completion_tokens"], usage["cached"]


def cost() -> None:
    per = 100 / len(TYPED)
    print(f"typing {len(TYPED)} characters, a pause after each word:")
    rows = [("without the cache", typing_cost(0)), ("with the cache", typing_cost(60))]
    for name, (requests, prompt, completion, cached) in rows:
        print(
            f"  {name:18s} per 100 typed characters: {requests * per:5.1f} requests, "
            f"{prompt * per:7.0f} prompt + {completion * per:5.0f} completion tokens ({cached} pauses answered by the cache)"
        )
    (base, _, _, _), (cached, _, _, _) = rows[0][1], rows[1][1]
    print(f"  the cache sends {cached / base:.2f}x the requests")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("rounds", type=int, nargs="?", default=60)
    parser.add_argument("--base-url")
    parser.add_argument("--model", default="fake-model")
    args = parser.parse_args()
    if args.base_url:
        latency(args.base_url, args.model, args.rounds, None)
        return
    with FakeLLM() as llm:
        latency(llm.base_url, "fake-model", args.rounds, llm)
    cost()


if __name__ == "__main__":
    main()
