"""The kernel executor against a real ipykernel (the `also_gateway` tests also on a Kernel Gateway's)."""

from __future__ import annotations

import asyncio
import os
from contextlib import suppress
from pathlib import Path
from typing import Any

import pytest

from agent_core.deadlines import within
from devtools.polling import wait_for
from jupyter_ext.kernel_clients import KernelClients
from jupyter_ext.kernel_evaluations import KernelEvaluations
from jupyter_ext.kernel_executor import KernelEnvironment
from tests.conftest import NOTEBOOK


def _env(jp_serverapp: Any, kernel_id: str | None = None, notebook: str = NOTEBOOK) -> KernelEnvironment:
    return KernelEnvironment(
        jp_serverapp.kernel_manager, jp_serverapp.session_manager, Path(jp_serverapp.root_dir), notebook, kernel_id
    )


@pytest.mark.also_gateway
async def test_evaluate_json_leaves_no_trace(jp_serverapp: Any, notebook_kernel: str) -> None:
    env = _env(jp_serverapp)
    events: list[dict[str, Any]] = []
    await env.run_cell("c1", "secret = 41", events.append)
    before = await env.evaluate_json("__import__('json').dumps(sorted(k for k in globals() if not k.startswith('_')))")
    value = await env.evaluate_json("__import__('json').dumps({'answer': secret + 1})")
    assert value == {"answer": 42}
    after = await env.evaluate_json("__import__('json').dumps(sorted(k for k in globals() if not k.startswith('_')))")
    assert before == after and "secret" in after
    count = await env.evaluate_json("__import__('json').dumps(get_ipython().execution_count)")
    assert count == 2  # only the one real cell counted


@pytest.mark.also_gateway
async def test_cell_outputs_errors_and_images(jp_serverapp: Any, notebook_kernel: str) -> None:
    env = _env(jp_serverapp)
    events: list[dict[str, Any]] = []
    ok = await env.run_cell("c1", "from IPython.display import Image, display\nprint('a')\n1 + 1", events.append)
    assert ok.status == "ok" and [o["output_type"] for o in ok.outputs] == ["stream", "execute_result"]
    failed = await env.run_cell("c2", "1 / 0", events.append)
    assert failed.status == "error" and failed.outputs[0]["ename"] == "ZeroDivisionError"
    # A kernel still busy starting up adds a waiting_for_kernel cell_started first (seen under load).
    types = [e["type"] for e in events if not e.get("waiting_for_kernel")]
    assert types.count("cell_started") == 2 and types.count("cell_finished") == 2


async def test_kernel_found_through_the_session_when_the_id_is_stale(jp_serverapp: Any, notebook_kernel: str) -> None:
    env = _env(jp_serverapp, kernel_id="dead-kernel-id")
    assert await env.resolve_kernel() == notebook_kernel


async def test_dead_kernel_ends_the_cell_with_a_clear_error(jp_serverapp: Any, notebook_kernel: str) -> None:
    env = _env(jp_serverapp)
    events: list[dict[str, Any]] = []
    cell = await env.run_cell("c1", "import os, time\nprint('bye', flush=True)\nos._exit(1)", events.append)
    assert cell.status == "error"
    assert any("died" in str(o.get("evalue", "")) for o in cell.outputs)
    assert events[-1]["type"] == "cell_finished" and events[-1]["status"] == "error"


# Counts the execute_requests the kernel handles from now on (the kernel's own dispatch table).
COUNT_EXECUTE_REQUESTS = """
def _cellwright_count():
    import inspect
    kernel = get_ipython().kernel
    handle = kernel.shell_handlers["execute_request"]
    kernel.cellwright_requests = 0

    async def counting(*args):
        kernel.cellwright_requests += 1
        result = handle(*args)
        return await result if inspect.isawaitable(result) else result

    kernel.shell_handlers["execute_request"] = counting
_cellwright_count()
del _cellwright_count
"""
REQUESTS = "__import__('json').dumps(get_ipython().kernel.cellwright_requests)"


async def test_evaluations_asked_together_travel_in_one_request(jp_serverapp: Any, notebook_kernel: str) -> None:
    """A run's start asks for its context and its @tool functions at once: one execute_request, on a kept client."""
    env = _env(jp_serverapp)
    cell = await env.run_cell("setup", COUNT_EXECUTE_REQUESTS, lambda event: None)
    assert cell.status == "ok", cell.outputs
    env.evaluations = KernelEvaluations()
    try:
        together = await asyncio.gather(*(env.evaluate_json(f"__import__('json').dumps({n})") for n in range(3)))
        assert together == [0, 1, 2]
        assert await env.evaluate_json(REQUESTS) == 2  # the three above, then this one
        assert await env.evaluate_json(REQUESTS) == 3  # one after the other: one each
    finally:
        env.evaluations.close()


async def _sent(evaluations: KernelEvaluations, kernel_id: str) -> None:
    """A turn of the loop or two, nobody awaiting: then the batch gathering on that kernel has left."""
    for _ in range(100):
        await asyncio.sleep(0)
        if not evaluations.joinable(kernel_id):
            return


async def test_evaluations_asked_ahead_leave_at_once_and_are_taken_once(
    jp_serverapp: Any, notebook_kernel: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run's first probes are asked ahead, before anyone awaits them: the request leaves on the
    loop's next turn, before an evaluation asked after that, and the run's own evaluations of the same expressions take its answer (no
    request of their own), once each; a later one, or one asked after AHEAD_SECONDS, asks anew."""
    from jupyter_ext import kernel_evaluations

    env = _env(jp_serverapp, notebook_kernel)
    cell = await env.run_cell("setup", COUNT_EXECUTE_REQUESTS, lambda event: None)
    assert cell.status == "ok", cell.outputs
    env.evaluations = KernelEvaluations()
    later = REQUESTS + " "  # another expression with the same value: asked after, it leaves after
    tools = "__import__('json').dumps('tools')"
    try:
        assert await env.kernel_busy() is False  # a kernel that runs a cell is not asked ahead
        env.ask_ahead([REQUESTS, tools])
        await _sent(env.evaluations, notebook_kernel)
        after = await env.evaluate_json(later)
        assert await env.evaluate_json(REQUESTS) == after - 1  # counted before `later`: sent ahead of it
        assert await env.evaluate_json(tools) == "tools"
        assert await env.evaluate_json(later) == after + 1  # the two above made no request
        assert await env.evaluate_json(REQUESTS) == after + 2  # taken once: asked anew

        monkeypatch.setattr(kernel_evaluations, "AHEAD_SECONDS", 0.0)
        before = await env.evaluate_json(later)
        assert await env.kernel_busy() is False
        env.ask_ahead([REQUESTS])
        await _sent(env.evaluations, notebook_kernel)
        assert await env.evaluate_json(REQUESTS) == before + 2  # too old to take: its own request
    finally:
        env.evaluations.close()


async def test_an_evaluation_of_ours_waiting_behind_a_users_cell_makes_the_kernel_busy(
    jp_serverapp: Any, notebook_kernel: str, tmp_path: Path
) -> None:
    """An evaluation sent just before the user's cell started waits behind that cell: the next probe
    hears "busy" after the grace, instead of queueing behind ours for its whole time limit."""
    from agent_core.kernel_probes.introspection import namespace_snapshot

    env = _env(jp_serverapp)
    env.evaluations = KernelEvaluations()
    release = tmp_path / "release"
    manager = jp_serverapp.kernel_manager.get_kernel(notebook_kernel)
    user = manager.client()  # the user's own client, as a browser tab's
    user.start_channels()
    try:
        await user.wait_for_ready(timeout=30)  # its iopub is connected: it sees the cell's "started"
        # The user's cell says it started, then runs until the test releases it.
        wait = f"while not os.path.exists({str(release)!r}): time.sleep(0.05)"
        user.execute(f"import os, time\nprint('started', flush=True)\n{wait}")
        while (await user.get_iopub_msg(timeout=10))["msg_type"] != "stream":
            pass
        # Ours, with no busy check of its own: its batch is made now, sent once the loop turns.
        expression = "__import__('json').dumps(7)"
        ours = asyncio.ensure_future(env.evaluations.evaluate(notebook_kernel, manager, env.kernel_manager, expression))
        await _sent(env.evaluations, notebook_kernel)
        started = asyncio.get_running_loop().time()
        assert await env.kernel_busy() is True
        snapshot = await namespace_snapshot(env)
        assert "busy" in snapshot.note, snapshot
        assert asyncio.get_running_loop().time() - started < 3  # the grace twice, not a probe's time limit
        assert not ours.done()
        release.touch()
        assert (await asyncio.wait_for(ours, 10))["status"] == "ok"  # answered once the cell ended
        assert await env.kernel_busy() is False
    finally:
        release.touch()
        user.stop_channels()
        env.evaluations.close()


@pytest.mark.also_gateway
async def test_a_cell_the_kernel_does_not_begin_at_once_is_said_to_wait(
    jp_serverapp: Any, notebook_kernel: str, tmp_path: Path
) -> None:
    """A kernel's idle can be old news: on a gateway, the busy of another client's cell reaches the kept
    websocket a moment after the gateway's own state says busy (CI's gateway test met it), so a cell can
    be sent to a kernel that looked idle and queue there. Here the kernel blocks its loop after its cell
    went idle, busy for any request, with no status saying so (it reads a FIFO that the test writes to
    once the cell says it waits): the cell's first cell_started says it waits (sent: with its request's
    id), the second that it runs."""
    clients = KernelClients()
    env = KernelEnvironment(
        jp_serverapp.kernel_manager,
        jp_serverapp.session_manager,
        Path(jp_serverapp.root_dir),
        NOTEBOOK,
        clients=clients,
    )
    blocked, release = tmp_path / "blocked", tmp_path / "release"
    os.mkfifo(release)
    events: list[dict[str, Any]] = []

    def unblock() -> None:  # the kernel has the FIFO open for reading: this open does not wait
        with suppress(OSError), open(os.open(release, os.O_WRONLY | os.O_NONBLOCK), "w") as fifo:
            fifo.write("go")

    def seen(event: dict[str, Any]) -> None:
        events.append(event)
        if event["type"] == "cell_started" and event["waiting_for_kernel"]:
            unblock()

    try:
        await env.run_cell("c0", "pass", [].append)  # the kept client proves itself: later cells go at once
        block = (
            "import asyncio, pathlib\n"
            "def hold():\n"
            f"    pathlib.Path({str(blocked)!r}).touch()\n"
            f"    open({str(release)!r}).read()\n"
            "asyncio.get_event_loop().call_later(0.1, hold)"
        )
        await env.run_cell("c1", block, [].append)
        await asyncio.to_thread(wait_for, blocked.exists, "the kernel's loop to block", 10)
        try:
            async with within(10):
                cell = await env.run_cell("c2", "print('ran')", seen)
        except asyncio.TimeoutError:
            pytest.fail(f"the cell never said it waits, so the kernel was never let go: {events}")
    finally:
        unblock()
        clients.close()
    started = [e for e in events if e["type"] == "cell_started"]
    assert [e["waiting_for_kernel"] for e in started] == [True, False], started
    assert started[0]["kernel_msg_id"] == started[1]["kernel_msg_id"]
    assert [e["type"] for e in events].index("cell_output") > events.index(started[1])
    assert cell.status == "ok" and cell.outputs[0]["text"] == "ran\n"
