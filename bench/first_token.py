"""Time to first token: through Cellwright's server (POST runs -> first `token` event on the SSE
stream) versus the openai client talking to the same endpoint directly. Prints both medians and
the ratio. The endpoint is the scripted fake LLM (a fixed, fast model), so the figure is our overhead.
Measured twice: for a notebook without a kernel, and with its kernel running (a run then first
reads the kernel's variables and its @tool functions, which the model's context carries).

    python bench/first_token.py [rounds]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
import openai

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from devtools.fake_llm import FakeLLM, text  # noqa: E402
from devtools.jupyter_process import TOKEN, JupyterProcess  # noqa: E402

REPLY = ["Hello", " there", ", this", " is", " a", " streamed", " answer."]


def direct(llm: FakeLLM) -> float:
    llm.script(text(REPLY))
    client = openai.OpenAI(base_url=llm.base_url, api_key="k", max_retries=0)
    started = time.perf_counter()
    stream = client.chat.completions.create(
        model="fake-model", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            elapsed = time.perf_counter() - started
            break
    stream.close()
    return elapsed


def through_server(llm: FakeLLM, client: httpx.Client, notebook: str = "b.ipynb", kernel: str | None = None) -> float:
    """POST runs, then read the SSE stream to the first token, on a kept-alive client (as a browser
    does: the baseline's openai client is also made before its clock starts)."""
    llm.script(text(REPLY))
    thread = client.post("cellwright/api/threads", json={"notebook_path": notebook}).json()["thread_id"]
    started = time.perf_counter()
    client.post(
        f"cellwright/api/threads/{thread}/runs", json={"message": "hi", **({"kernel_id": kernel} if kernel else {})}
    )
    with client.stream("GET", f"cellwright/api/threads/{thread}/events") as response:
        for line in response.iter_lines():
            if line == "event: token":
                return time.perf_counter() - started
    raise RuntimeError("no token event")


def main(rounds: int) -> None:
    with FakeLLM() as llm, tempfile.TemporaryDirectory() as tmp:
        env = {"OPENAI_BASE_URL": llm.base_url, "OPENAI_API_KEY": "k", "CELLWRIGHT_MODEL": "fake-model"}
        server = JupyterProcess(Path(tmp), env).start()
        client = httpx.Client(base_url=server.url, headers={"Authorization": f"token {TOKEN}"}, timeout=30)
        try:
            through_server(llm, client)  # warm: first use opens the checkpointer and imports langgraph
            kernel = server.open_notebook("k.ipynb")
            through_server(llm, client, "k.ipynb", kernel)
            served, with_kernel = [], []
            for _ in range(rounds):  # interleaved: both see the same load on the machine
                served.append(through_server(llm, client))
                with_kernel.append(through_server(llm, client, "k.ipynb", kernel))
        finally:
            client.close()
            server.stop()
        direct(llm)
        raw = [direct(llm) for _ in range(rounds)]
    ms = 1000
    print(f"rounds: {rounds}")
    print(f"direct openai client, first token:   median {statistics.median(raw) * ms:7.1f} ms")
    print(f"through Cellwright (POST -> SSE):    median {statistics.median(served) * ms:7.1f} ms")
    print(
        f"ratio server / direct: {statistics.median(served) / statistics.median(raw):.1f}x, "
        f"overhead {(statistics.median(served) - statistics.median(raw)) * ms:.1f} ms"
    )
    print(
        f"with the notebook's kernel running:  median {statistics.median(with_kernel) * ms:7.1f} ms, "
        f"overhead {(statistics.median(with_kernel) - statistics.median(raw)) * ms:.1f} ms"
    )
    # The kernel's part: one execute_request on a kept client asks for the context and the @tool
    # functions together (target: within 5 ms of the run without a kernel).
    print(
        f"the kernel's part (with - without): {(statistics.median(with_kernel) - statistics.median(served)) * ms:.1f} ms, "
        f"ratio with / without {statistics.median(with_kernel) / statistics.median(served):.2f}x"
    )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10)
