"""An outside ACP agent's first token through the panel versus the same agent driven directly over
stdio, same run (issue 40). The agent is the SDK-written test agent (tests/acp/sdk_agent.py), which
answers at once: what is measured is what hosting adds (our ACP client, the event log, the stream).

1. Direct: the official SDK's client spawns the agent; from `session/prompt` sent to its first
   `session/update` (a message chunk) received.
2. Through the panel: POST threads/{id}/runs on a thread hosted for that agent, to the first `token`
   event on the thread's event stream, as the panel reads it.

Each after a warm-up turn (the process started and its session open), median of `rounds`.

    python bench/acp_first_token.py [rounds]
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

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.mcp_calls import last_seq, stream_until  # noqa: E402
from devtools.jupyter_process import TOKEN, JupyterProcess  # noqa: E402

AGENT = {"command": sys.executable, "args": ["-m", "tests.acp.sdk_agent"], "env": {"PYTHONPATH": str(ROOT)}}


async def direct(rounds: int) -> list[float]:
    from acp import PROTOCOL_VERSION, text_block
    from acp.stdio import spawn_agent_process

    first: asyncio.Future[float] | None = None

    class Client:
        def on_connect(self, conn: Any) -> None:
            pass

        async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
            if first is not None and not first.done():
                first.set_result(time.perf_counter())

    times = []
    env = {**AGENT["env"]}  # type: ignore[dict-item]
    async with spawn_agent_process(Client(), sys.executable, *AGENT["args"], env=env, cwd=str(ROOT)) as (conn, _):
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        session = (await conn.new_session(cwd=str(ROOT), mcp_servers=[])).session_id
        for turn in range(rounds + 1):
            first = asyncio.get_running_loop().create_future()
            started = time.perf_counter()
            await conn.prompt(session_id=session, prompt=[text_block(f"hello {turn}")])
            if turn:  # the first is the warm-up
                times.append(await first - started)
    return times


async def through_panel(server: JupyterProcess, rounds: int) -> list[float]:
    headers = {"Authorization": f"token {TOKEN}"}
    times = []
    async with httpx.AsyncClient(base_url=f"{server.url}/", headers=headers, timeout=120) as http:
        thread = (await http.post("cellwright/api/threads", json={"agent": "sdk"})).json()["thread_id"]
        for turn in range(rounds + 1):
            after = await last_seq(http, thread)
            started = time.perf_counter()
            answer = await http.post(f"cellwright/api/threads/{thread}/runs", json={"message": f"hello {turn}"})
            assert answer.status_code == 202, answer.text
            arrived, seq = await stream_until(http, thread, after, "token")
            await stream_until(http, thread, seq, "run_finished")
            if turn:
                times.append(arrived - started)
    return times


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "config"
        config.mkdir(parents=True)
        (config / "jupyter_server_config.json").write_text(json.dumps({"Cellwright": {"acp_agents": {"sdk": AGENT}}}))
        server = JupyterProcess(Path(tmp), {}).start()
        try:
            hosted = asyncio.run(through_panel(server, rounds))
        finally:
            server.stop()
    raw = asyncio.run(direct(rounds))
    ms = lambda values: statistics.median(values) * 1000  # noqa: E731
    print(f"first token, median of {rounds} turns after a warm-up:")
    print(f"  directly over stdio (SDK client): {ms(raw):7.1f} ms")
    print(f"  through the panel (POST runs -> first token event): {ms(hosted):7.1f} ms")
    print(f"  ratio: {ms(hosted) / ms(raw):.1f}x")


if __name__ == "__main__":
    main()
