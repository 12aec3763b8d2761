"""The kernel's quick path for read-only probes (agent_core.kernel_probes.quick_answers), against a
real ipykernel (and a Kernel Gateway's): what it answers is what IPython answers, it is installed by
the server's first read-only request and again after a restart, and every other request still goes
through IPython's cell machinery."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_core.environment import ToolInputError
from agent_core.kernel_probes.introspection import namespace_snapshot
from agent_core.kernel_probes.probe import ReadOnlyExpression
from jupyter_ext.kernel_evaluations import KernelEvaluations
from jupyter_ext.kernel_executor import KernelEnvironment
from tests.conftest import NOTEBOOK

# Counts the cells IPython runs (its post_execute event fires for a silent request's empty cell too),
# in a private module: nothing lands in the user's namespace, so the snapshots stay comparable.
COUNT_CELLS = """
def _cellwright_count():
    import sys, types
    counter = sys.modules["_cellwright_cells"] = types.ModuleType("_cellwright_cells")
    counter.n = 0
    def count():
        counter.n += 1
    get_ipython().events.register("post_execute", count)
_cellwright_count()
del _cellwright_count
"""
CELLS = "__import__('json').dumps(__import__('sys').modules['_cellwright_cells'].n)"


def _env(jp_serverapp: Any) -> KernelEnvironment:
    env = KernelEnvironment(
        jp_serverapp.kernel_manager, jp_serverapp.session_manager, Path(jp_serverapp.root_dir), NOTEBOOK, None
    )
    env.evaluations = KernelEvaluations()
    return env


async def _cells_run(env: KernelEnvironment) -> int:
    """The cells IPython has run so far; this evaluation, a plain one, counts itself."""
    return int(await env.evaluate_json(CELLS)) - 1


async def _count_cells(env: KernelEnvironment) -> None:
    cell = await env.run_cell("count", COUNT_CELLS, lambda event: None)
    assert cell.status == "ok", cell.outputs


@pytest.mark.also_gateway
async def test_read_only_probes_are_answered_without_running_a_cell(jp_serverapp: Any, notebook_kernel: str) -> None:
    env = _env(jp_serverapp)
    try:
        await env.run_cell("setup", "rows = [1, 2, 3]\nlabel = 'sales'", lambda event: None)
        await _count_cells(env)
        start = await _cells_run(env)
        first = await namespace_snapshot(env)  # goes through IPython, and installs the quick path
        assert [v["name"] for v in first.variables] == ["rows", "label"], first
        assert await _cells_run(env) == start + 2
        again = [await namespace_snapshot(env) for _ in range(3)]
        assert await _cells_run(env) == start + 3  # only the counting evaluation ran a cell
        assert all(snapshot == first for snapshot in again)
        # The same expression answered both ways gives the same value.
        expression = "__import__('json').dumps({'rows': rows, 'label': label, 'n': len(rows)})"
        assert await env.evaluate_json(ReadOnlyExpression(expression)) == await env.evaluate_json(expression)
    finally:
        assert env.evaluations is not None
        env.evaluations.close()


async def test_errors_read_as_ipythons_and_the_users_names_change_nothing(
    jp_serverapp: Any, notebook_kernel: str
) -> None:
    """A user's variables named like the builtins the quick path uses (eval, compile, repr, str, type,
    get_ipython) neither break it nor are called by it."""
    env = _env(jp_serverapp)
    try:
        await _count_cells(env)
        shadows = "def boom(*a, **k):\n    raise RuntimeError('user code ran')\n"
        shadows += "eval = compile = repr = str = type = get_ipython = json = sys = boom\nvalue = 7"
        assert (await env.run_cell("shadows", shadows, lambda event: None)).status == "ok"
        start = await _cells_run(env)
        snapshot = await namespace_snapshot(env)  # installs
        assert "value" in [v["name"] for v in snapshot.variables], snapshot
        assert await namespace_snapshot(env) == snapshot  # answered on the quick path
        assert await _cells_run(env) == start + 1 + 1  # the installing request and the counting one
        with pytest.raises(ToolInputError) as quick:
            await env.evaluate_json(ReadOnlyExpression("1 / 0"))
        with pytest.raises(ToolInputError) as plain:
            await env.evaluate_json("1 / 0")
        assert str(quick.value) == str(plain.value) and "ZeroDivisionError: division by zero" in str(quick.value)
    finally:
        assert env.evaluations is not None
        env.evaluations.close()


@pytest.mark.also_gateway
async def test_a_restarted_kernel_gets_the_quick_path_again(jp_serverapp: Any, notebook_kernel: str) -> None:
    env = _env(jp_serverapp)
    try:
        await namespace_snapshot(env)
        await jp_serverapp.kernel_manager.restart_kernel(notebook_kernel)
        await _count_cells(env)
        start = await _cells_run(env)
        assert (await namespace_snapshot(env)).note == ""  # answered by IPython: installs again
        assert (await namespace_snapshot(env)).note == ""
        assert await _cells_run(env) == start + 2
    finally:
        assert env.evaluations is not None
        env.evaluations.close()


async def test_other_clients_requests_still_run_as_cells(jp_serverapp: Any, notebook_kernel: str) -> None:
    """Only a silent request with empty code whose every expression key is the quick path's own is
    answered there: a user's client asking for expressions, or running code, runs a cell."""
    env = _env(jp_serverapp)
    manager = jp_serverapp.kernel_manager.get_kernel(notebook_kernel)
    user = manager.client()
    user.start_channels()
    try:
        await _count_cells(env)
        await namespace_snapshot(env)  # installed
        start = await _cells_run(env)

        async def ask(code: str, expressions: dict[str, str]) -> dict[str, Any]:
            msg_id = user.execute(code, silent=True, store_history=False, user_expressions=expressions)
            while (reply := await user.get_shell_msg(timeout=10))["parent_header"].get("msg_id") != msg_id:
                pass
            return dict(reply["content"]["user_expressions"])

        assert (await ask("", {"mine": "1 + 1"}))["mine"]["data"]["text/plain"] == "2"
        mixed = await ask("", {"cellwright_quick_0": "1", "mine": "2"})
        assert mixed["mine"]["status"] == "ok"
        code_too = await ask("seen = 5", {"cellwright_quick_0": "3"})  # its code must run
        assert code_too["cellwright_quick_0"]["data"]["text/plain"] == "3"
        assert await env.evaluate_json("__import__('json').dumps(seen)") == 5
        # since `start`: the counting evaluation, the user's three requests, the plain one above
        assert await _cells_run(env) == start + 1 + 3 + 1
    finally:
        user.stop_channels()
        assert env.evaluations is not None
        env.evaluations.close()


async def _statuses_until_idle(client: Any, msg_id: str) -> list[str]:
    """The parent msg_ids of the status messages `client` reads on iopub until `msg_id`'s idle."""
    seen = []
    while True:
        msg = await client.get_iopub_msg(timeout=10)
        if msg["msg_type"] != "status":
            continue
        parent = msg["parent_header"].get("msg_id")
        seen.append(parent)
        if parent == msg_id and msg["content"]["execution_state"] == "idle":
            return seen


async def test_a_probe_answered_on_the_quick_path_says_nothing_on_iopub(
    jp_serverapp: Any, notebook_kernel: str
) -> None:
    """Every iopub client (the server's activity watch, each open tab) read a busy and an idle for each
    probe the user never asked for; the quick path now answers before the kernel's dispatcher
    publishes them. A request it does not answer still has both."""
    env = _env(jp_serverapp)
    user = jp_serverapp.kernel_manager.get_kernel(notebook_kernel).client()
    user.start_channels()
    try:
        await user.wait_for_ready(timeout=30)  # its iopub subscription is live: nothing published is missed
        await namespace_snapshot(env)  # installs the quick path (through IPython: busy and idle)
        before = user.execute("pass")
        await _statuses_until_idle(user, before)
        assert (await namespace_snapshot(env)).note == ""  # answered on the quick path
        assert await env.evaluate_json(ReadOnlyExpression("__import__('json').dumps(6 * 7)")) == 42
        after = user.execute("pass")
        assert await _statuses_until_idle(user, after) == [after, after]  # its busy and idle, nothing before
        plain = await env.evaluate_json("__import__('json').dumps(1)")  # not read-only: IPython answers it
        marker = user.execute("pass")
        statuses = await _statuses_until_idle(user, marker)
        assert plain == 1 and len(statuses) == 4 and statuses[2:] == [marker, marker], statuses
    finally:
        user.stop_channels()
        assert env.evaluations is not None
        env.evaluations.close()


async def test_a_probe_request_with_a_wrong_signature_is_not_answered(jp_serverapp: Any, notebook_kernel: str) -> None:
    """A probes-only request signed with another key (someone who can reach the kernel's port but does
    not hold its key) gets no answer, and the kernel goes on answering signed ones. ipykernel's shell
    thread checks the signature before any dispatcher sees the request; the quick path checks it again
    as it deserializes, for a kernel whose dispatcher gets it first."""
    from jupyter_client.session import Session

    env = _env(jp_serverapp)
    user = jp_serverapp.kernel_manager.get_kernel(notebook_kernel).client()
    user.start_channels()
    try:
        await namespace_snapshot(env)  # installed
        forged = Session(key=b"not the kernel's key", username="attacker")
        content = {
            "code": "",
            "silent": True,
            "store_history": False,
            "user_expressions": {"cellwright_quick_0": "__import__('os').getcwd()"},
            "allow_stdin": False,
        }
        sent = forged.send(user.shell_channel.socket, "execute_request", content)
        marker = user.execute("", silent=True)  # the main shell answers in order: the forged one's would come first
        reply = await user.get_shell_msg(timeout=10)
        assert reply["parent_header"]["msg_id"] == marker != sent["header"]["msg_id"], reply
        assert (await namespace_snapshot(env)).note == ""
    finally:
        user.stop_channels()
        assert env.evaluations is not None
        env.evaluations.close()
