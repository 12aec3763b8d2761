"""The paths a user waits on, each against its own floor in the same run, stage by stage, with its
ratio against issue 41's target (printed, not asserted: the machines are noisy). One Jupyter server,
one kernel, the scripted model; rounds interleaved so both sides of a ratio see the same load.

    python -m bench.paths [rounds]     # default 30: about a minute on the 2-core machine

1. First token as the panel waits for it (POST runs answered with the thread's stream,
   previews=1&waiting=1), without and with the notebook's kernel, vs the openai SDK straight to the
   same model (a kept client). A stream held open before the POST is not the panel's pattern: an
   idle thread's stream closes at once; the held-open stream is the approve path's (3).
2. The kernel's requests per turn with a kernel that its dispatcher served (counted on its iopub: a
   run's probes, answered on the kernel's quick path before the dispatcher, publish no status, so 0).
3. Approve -> cell_finished for `pass` on a stream held open while the card waits (waiting=1, as the
   panel holds it) vs a raw jupyter-client execute on the same kernel. Beside it, a run's two kernel
   probes on the raw client, as IPython runs them and on the kernel's quick path.
4. MCP tools/call read_notebook vs the same tool in our own tools node (tool_call -> tool_result).
5. Inline completion with an instant model: the route's first piece vs the endpoint's whole reply.

The gateway path (bench/gateway_cell.py, run after this one by the test command) and many servers
on PostgreSQL (bench/team_database.py, bench/postgres_events.py) start servers of their own and are
run apart.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import nbformat
import openai
from jupyter_client import BlockingKernelClient

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent_core.json_types import JsonObject  # noqa: E402
from agent_core.kernel_probes.introspection import snapshot_expression  # noqa: E402
from agent_core.tools.notebook_functions import discovery_expression  # noqa: E402
from bench.cell_roundtrip import raw as raw_execute  # noqa: E402
from bench.path_mcp import mcp_rounds  # noqa: E402
from bench.path_stages import Clock, KernelObserver, Stages  # noqa: E402
from devtools.fake_llm import FakeLLM, text, tool_call  # noqa: E402
from devtools.jupyter_process import TOKEN, JupyterProcess  # noqa: E402
from jupyter_ext.kernel_evaluations import expression_key, with_quick_installer  # noqa: E402

REPLY = ["Hello", " there", ", this", " is", " a", " streamed", " answer."]
SETTLE_SECONDS = 1.5  # > heap_settling.SETTLE_DELAY_SECONDS
PANEL_STREAM = {"previews": "1", "waiting": "1"}  # labextension_src/stream.ts


@dataclass
class Server:
    llm: FakeLLM
    http: httpx.Client
    decisions: httpx.Client  # a second kept connection: the panel's fetches beside its stream
    sdk: openai.OpenAI
    url: str
    kernel: str
    kc: BlockingKernelClient  # the raw client of the floor
    observer: KernelObserver
    rounds: dict[str, Stages] = field(default_factory=dict)
    requests_per_turn: list[int] = field(default_factory=list)

    def stages(self, name: str) -> Stages:
        return self.rounds.setdefault(name, Stages(name))


def used_up(s: Server, what: str) -> None:
    """Every scripted reply was asked for: a path that asked the model more or less than it was
    scripted for would hand the next path the wrong reply."""
    if s.llm.pending:
        raise RuntimeError(f"{what}: {s.llm.pending} scripted replies were not asked for; paths {s.llm.paths[-3:]}")


def new_thread(s: Server, notebook: str) -> str:
    return str(s.http.post("cellwright/api/threads", json={"notebook_path": notebook}).json()["thread_id"])


def read_stream(
    s: Server, thread: str, clock: Clock, wanted: dict[str, str], waiting: bool = True, run: JsonObject | None = None
) -> int:
    """Read the thread's stream as the panel does until it closes, marking the first event of each
    type in `wanted` (type -> stage); the last stored seq. Not `waiting`: it closes at a card. With
    `run`, the stream is the answer of the POST that starts it (the panel's send)."""
    params = PANEL_STREAM if waiting else {"previews": "1"}
    after = 0
    if run is None:
        request = s.http.stream("GET", f"cellwright/api/threads/{thread}/events", params=params)
    else:
        url = f"cellwright/api/threads/{thread}/runs"
        request = s.http.stream("POST", url, params=params, json=run, headers={"Accept": "text/event-stream"})
    with request as r:
        if r.status_code != 200:
            raise RuntimeError(f"{r.status_code} {r.read()[:300]!r}")
        clock.mark("stream open")
        kind = ""
        for line in r.iter_lines():
            if line.startswith("event: "):
                kind = line[7:]
                if kind in wanted:
                    clock.mark(wanted[kind])
            elif line.startswith("id: "):
                after = int(line[4:])
    return after


def direct_first_token(s: Server, stages: Stages) -> None:
    clock = Clock()
    s.llm.script(clock.stamped("model asked", text(REPLY)))
    stream = s.sdk.chat.completions.create(
        model="fake-model", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            clock.mark("first token")
            break
    stream.close()
    stages.add(clock)
    used_up(s, "direct_first_token")


def served_first_token(s: Server, stages: Stages, notebook: str, kernel: str | None) -> None:
    """The panel's pattern: POST runs answered with the thread's events (no stream is open: an idle
    thread's closes), read until the run ends."""
    thread = new_thread(s, notebook)
    clock = Clock()
    s.llm.script(clock.stamped("model asked", text(REPLY)))
    run: JsonObject = {"message": "hi", **({"kernel_id": kernel} if kernel else {})}
    read_stream(s, thread, clock, {"token": "first token", "run_finished": "run_finished"}, run=run)
    if kernel:
        s.requests_per_turn.append(s.observer.settle(clock, time.perf_counter(), s.kc.session.session))
    stages.add(clock)
    used_up(s, "served_first_token")


def approve_to_cell(s: Server, stages: Stages, n: int) -> None:
    """A card for `pass` waits; a stream held open on it (waiting=1, the panel's); POST approve from a
    connection of its own (the panel's fetch), on a thread, while this one reads the stream."""
    thread = new_thread(s, "k.ipynb")
    s.llm.script(tool_call("run_cell", {"code": "pass"}, id=f"c{n}"), tool_call("final_answer", {"answer": "ok"}))
    s.http.post(f"cellwright/api/threads/{thread}/runs", json={"message": "run it", "kernel_id": s.kernel})
    seq = read_stream(s, thread, Clock(), {}, waiting=False)  # to the card: the segment ends there
    clock = Clock()
    url = f"cellwright/api/threads/{thread}/approvals/c{n}"
    body = {"decision": "approve", "kernel_id": s.kernel}
    headers = {"Last-Event-ID": str(seq)}
    with s.http.stream("GET", f"cellwright/api/threads/{thread}/events", params=PANEL_STREAM, headers=headers) as r:
        lines = r.iter_lines()
        for line in lines:  # held: the backlog (none) is replayed once caught_up comes
            if line == "event: caught_up":
                break
        clock.start = time.perf_counter()
        answer: list[httpx.Response] = []

        def approve() -> None:
            answer.append(s.decisions.post(url, json=body))
            clock.mark("POST answered")

        poster = threading.Thread(target=approve)
        poster.start()
        seen = []
        for line in lines:
            seen.append(line)
            if line == "event: cell_finished":
                clock.mark("cell_finished on the stream")
                break
        poster.join()
        if "cell_finished on the stream" not in clock.marks:
            raise RuntimeError(f"no cell_finished: {answer[0].status_code} {answer[0].text[:300]} {seen[:20]}")
        for _ in lines:  # to the run's end, outside the clock
            pass
    s.observer.settle(clock, clock.start + clock.marks["cell_finished on the stream"], s.kc.session.session)
    stages.add(clock)
    used_up(s, "approve_to_cell")


def raw_cell(s: Server, stages: Stages) -> None:
    clock = Clock()
    clock.mark("cell done", clock.start + raw_execute(s.kc))
    stages.add(clock)


def run_probes(s: Server, stages: Stages, quick: bool) -> None:
    """The two evaluations a run's start asks its kernel for (namespace snapshot, @tool discovery) in
    one request on the raw client: as IPython runs them (plain keys) or on the kernel's quick path."""
    expressions = [snapshot_expression(), discovery_expression()]
    if quick:
        request = with_quick_installer({expression_key(e, n): e for n, e in enumerate(expressions)})
    else:
        request = {f"e{n}": str(e) for n, e in enumerate(expressions)}
    clock = Clock()
    msg_id = s.kc.execute("", silent=True, store_history=False, user_expressions=request)
    while s.kc.get_shell_msg(timeout=10)["parent_header"].get("msg_id") != msg_id:
        pass
    clock.mark("answered")
    stages.add(clock)


def direct_completion(s: Server, stages: Stages, prefix: str) -> None:
    """The endpoint's whole one-line reply, streamed, by the openai SDK (a kept client)."""
    clock = Clock()
    s.llm.script(text(["ice", " * 2", " + tax"]))
    stream = s.sdk.completions.create(model="fake-model", prompt=prefix, max_tokens=32, temperature=0, stream=True)
    for chunk in stream:
        if chunk.choices and chunk.choices[0].text:
            clock.mark("first piece")
    clock.mark("whole reply")
    stages.add(clock)
    used_up(s, "direct_completion")


def routed_completion(s: Server, stages: Stages, prefix: str) -> None:
    clock = Clock()
    s.llm.script(clock.stamped("model asked", text(["ice", " * 2", " + tax"])))
    with s.http.stream("POST", "cellwright/api/completions", json={"path": "work.py", "prefix": prefix}) as response:
        clock.mark("response open")
        for line in response.iter_lines():
            chunk = json.loads(line)
            if chunk["type"] == "delta" or (chunk["type"] == "done" and chunk["text"]):
                clock.mark("first piece")
            if chunk["type"] == "error":
                raise RuntimeError(chunk["message"])
    clock.mark("whole answer")
    stages.add(clock)
    used_up(s, "routed_completion")


def _ratio_lines(s: Server, mcp: Stages, node: Stages) -> list[str]:
    r = s.rounds
    rows = []

    def over(name: str, value: float, target: float, unit: str = "ms") -> None:
        verdict = "meets" if value <= target else "MISSES"
        sign = "+" if unit == "ms" else ""
        rows.append(f"  {name:58s} {sign}{value:6.1f} {unit}  target <= {sign}{target:g} {unit}: {verdict}")

    direct = r["direct SDK, first token"].p50("first token")
    over("first token, no kernel: served - direct (p50)", r["served, no kernel"].p50("first token") - direct, 5)
    over("first token, with kernel: served - direct (p50)", r["served, with kernel"].p50("first token") - direct, 7)
    over(
        "approve -> cell_finished `pass` - raw jupyter-client (p50)",
        r["approve -> cell_finished (held stream)"].p50("cell_finished on the stream") - r["raw"].p50("cell done"),
        5,
    )
    over("MCP read_notebook / tools node (p50)", mcp.p50("answered") / node.p50("answered"), 1.5, "x")
    probes = r["a run's kernel probes, on the quick path"].p50("answered")
    ipython = r["a run's kernel probes, as IPython runs them"].p50("answered")
    rows.append(f"  {'(no target) kernel probes: quick path / IPython (p50)':58s} {probes / ipython:6.2f} x")
    over(
        "first inline suggestion - endpoint's whole reply (p50)",
        r["completion route"].p50("first piece") - r["completion direct"].p50("whole reply"),
        5,
    )
    return rows


def main(rounds: int) -> None:
    load = os.getloadavg()
    started = time.perf_counter()
    with FakeLLM() as llm, tempfile.TemporaryDirectory() as tmp:
        env = {"OPENAI_BASE_URL": llm.base_url, "OPENAI_API_KEY": "k", "CELLWRIGHT_MODEL": "fake-model"}
        server = JupyterProcess(Path(tmp), env).start()
        auth = {"Authorization": f"token {TOKEN}"}
        http = httpx.Client(base_url=server.url, headers=auth, timeout=60)
        decisions = httpx.Client(base_url=server.url, headers=auth, timeout=60)
        sdk = openai.OpenAI(base_url=llm.base_url, api_key="k", max_retries=0)
        kernel = server.open_notebook("k.ipynb")
        nbformat.write(nbformat.v4.new_notebook(), str(server.root / "b.ipynb"))  # the MCP path reads it
        connection = Path(tmp) / "runtime" / f"kernel-{kernel}.json"
        kc = BlockingKernelClient(connection_file=str(connection))
        kc.load_connection_file()
        kc.start_channels(hb=False)
        # A kernel_info reply, not wait_for_ready: that one also wants the heartbeat, which a loaded
        # machine misses for a second at times ("Kernel died before replying to kernel_info").
        kc.kernel_info(reply=True, timeout=30)
        s = Server(llm, http, decisions, sdk, server.url, kernel, kc, KernelObserver(connection))
        try:
            warm = Stages("warm-up, not printed")
            for w in range(2):  # the checkpointer, langgraph, the kernel's channels, the SDK's pools
                served_first_token(s, warm, "b.ipynb", None)
                served_first_token(s, warm, "k.ipynb", kernel)
                approve_to_cell(s, warm, -(w + 1))
                direct_first_token(s, warm)
                raw_cell(s, warm)
                run_probes(s, warm, quick=True)  # installs the quick path on the first
                direct_completion(s, warm, f"w{w} = pr")
                routed_completion(s, warm, f"v{w} = pr")
            s.requests_per_turn.clear()
            # The server collects and freezes its heap once, a second after a run ends with none active
            # (jupyter_ext/heap_settling.py): let that land here, not in the middle of a measured round.
            time.sleep(SETTLE_SECONDS)
            for n in range(1, rounds + 1):  # interleaved: every path sees the same load
                direct_first_token(s, s.stages("direct SDK, first token"))
                served_first_token(s, s.stages("served, no kernel"), "b.ipynb", None)
                served_first_token(s, s.stages("served, with kernel"), "k.ipynb", kernel)
                raw_cell(s, s.stages("raw"))
                run_probes(s, s.stages("a run's kernel probes, as IPython runs them"), quick=False)
                run_probes(s, s.stages("a run's kernel probes, on the quick path"), quick=True)
                approve_to_cell(s, s.stages("approve -> cell_finished (held stream)"), n)
                direct_completion(s, s.stages("completion direct"), f"value_{n} = pr")
                routed_completion(s, s.stages("completion route"), f"total_{n} = pr")
            mcp, node = mcp_rounds(server.url, llm, rounds)
        finally:
            s.observer.close()
            kc.stop_channels()
            http.close()
            decisions.close()
            sdk.close()
            server.stop()
    print(f"bench.paths: {rounds} rounds, load average at start {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print("stages (offsets from the round's start):")
    for stages in [*s.rounds.values(), mcp, node]:
        print("\n".join(stages.lines()))
    turns = s.requests_per_turn
    print(
        f"  kernel requests per turn with a kernel through its dispatcher (iopub; the quick path's say nothing): "
        f"median {sorted(turns)[len(turns) // 2]}, max {max(turns)}"
    )
    print("against issue 41's targets (same run; printed, not asserted):")
    print("\n".join(_ratio_lines(s, mcp, node)))
    print(f"bench.paths took {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 30)
