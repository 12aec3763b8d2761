"""Approve -> `cell_finished` for a cell of `pass` on a gateway kernel through Cellwright (a real
Jupyter server started with `--gateway-url` to a real Jupyter Kernel Gateway), versus the same kernel
driven directly through the gateway's websocket (an execute_request for `pass`, until its
execute_reply and the kernel's idle), as a browser's tab does it and with every frame acknowledged
at once (the gateway leaves Nagle's algorithm on: a client that delays its acknowledgements waits
~40 ms for the second message of an answer; Cellwright's client acknowledges at once, so this is its
floor). Interleaved in one run; prints p50/p95 of each and the ratios.

    python bench/gateway_cell.py [rounds]
"""

from __future__ import annotations

import sys
import tempfile
import time
from contextlib import closing
from pathlib import Path

import httpx
import websocket

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.cell_roundtrip import through_server  # noqa: E402
from bench.many_threads import pct  # noqa: E402
from devtools import kernel_websocket  # noqa: E402
from devtools.fake_llm import FakeLLM  # noqa: E402
from devtools.jupyter_process import TOKEN, JupyterProcess, KernelGatewayProcess  # noqa: E402


def direct(ws: websocket.WebSocket, code: str = "pass", quick_acks: bool = False) -> float:
    """A notebook's execute straight to the gateway: a websocket opened once, as a browser tab's.
    `quick_acks`: as Cellwright's client reads it (the gateway's Nagle stall avoided: the floor)."""
    started = time.perf_counter()
    msg_id = kernel_websocket.send_execute(ws, code)
    if quick_acks:
        kernel_websocket.acks_at_once(ws)
    kernel_websocket.until_done(ws, msg_id, quick_acks)
    return time.perf_counter() - started


def main(rounds: int) -> None:
    with FakeLLM() as llm, tempfile.TemporaryDirectory() as tmp:
        env = {"OPENAI_BASE_URL": llm.base_url, "OPENAI_API_KEY": "k", "CELLWRIGHT_MODEL": "fake-model"}
        gateway = KernelGatewayProcess(Path(tmp) / "gateway").start()
        server = JupyterProcess(Path(tmp) / "server", env, extra_args=[f"--gateway-url={gateway.url}"])
        try:
            server.start()
            kernel = server.open_notebook("b.ipynb")
            assert kernel in [k["id"] for k in gateway.kernels()], "the notebook's kernel is not the gateway's"
            with (
                httpx.Client(base_url=server.url, headers={"Authorization": f"token {TOKEN}"}, timeout=600) as http,
                closing(kernel_websocket.connect(gateway.url, kernel)) as ws,
            ):
                through_server(llm, http, kernel, 0)  # warm: the checkpointer, langgraph, the kernel's channels
                direct(ws)
                served, raw, floor = [], [], []
                for n in range(1, rounds + 1):  # interleaved, so all see the same load on the machine
                    raw.append(direct(ws))
                    floor.append(direct(ws, quick_acks=True))
                    served.append(through_server(llm, http, kernel, n))
        finally:
            server.stop()
            gateway.stop()
    print(f"rounds: {rounds}")
    print(f"direct to the gateway's websocket, `pass`:     p50 {pct(raw, 0.5):7.1f} ms   p95 {pct(raw, 0.95):7.1f} ms")
    print(
        f"  the same, acknowledged at once (the floor):  p50 {pct(floor, 0.5):7.1f} ms   p95 {pct(floor, 0.95):7.1f} ms"
    )
    print(
        f"through Cellwright (approve -> cell_finished): p50 {pct(served, 0.5):7.1f} ms   "
        f"p95 {pct(served, 0.95):7.1f} ms"
    )
    print(
        f"ratio Cellwright / direct: p50 {pct(served, 0.5) / pct(raw, 0.5):.1f}x, p95 {pct(served, 0.95) / pct(raw, 0.95):.1f}x; "
        f"difference at p50 {(pct(served, 0.5) - pct(raw, 0.5)):.1f} ms (issue 41's target <= 1.2x: "
        f"{'meets' if pct(served, 0.5) <= 1.2 * pct(raw, 0.5) else 'MISSES'})"
    )
    print(
        f"ratio Cellwright / the floor: p50 {pct(served, 0.5) / pct(floor, 0.5):.1f}x; "
        f"difference at p50 {(pct(served, 0.5) - pct(floor, 0.5)):.1f} ms"
    )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 30)
