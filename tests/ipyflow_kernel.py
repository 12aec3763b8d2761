"""ipyflow's stale cells on the same corpus, for comparison: its kernel (`python -m ipyflow.kernel`,
kernel name `ipyflow`) run headless through jupyter-client, as its JupyterLab extension drives it:
each execute_request carries the cell's id (`metadata.cellId`), and the `ipyflow` comm's
`compute_exec_schedule` request, given every cell's index and current content, answers which cells
are `ready` (an input changed since they ran) and `waiting` (an input is itself out of date):
together, ipyflow's stale set. Settings: `flow_direction: any_order` (a redefinition below a cell
counts too, as in the corpus's truth; its default `in_order` ignores those) and `exec_schedule:
liveness_based` (the default `dag_based` answered nothing for a redefinition in another cell).

One kernel for the whole corpus: each case's cells get ids of their own and its names are deleted
before the next case (a restart per case would cost ~4 s each)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

from jupyter_client.blocking.client import BlockingKernelClient
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager

from tests.data.stale_notebooks import Case

IPYFLOW_PYTHON_ENV = "CELLWRIGHT_IPYFLOW_PYTHON"  # an interpreter with ipyflow-core, when not this one
SETTINGS = {"interface": "jupyterlab", "flow_direction": "any_order", "exec_schedule": "liveness_based"}
REPLY_TIMEOUT = 30.0
CLEAR = "for _n in [_k for _k in globals() if not _k.startswith('_') and _k not in ('In', 'Out', 'get_ipython', 'exit', 'quit')]:\n    del globals()[_n]"


def ipyflow_python() -> str | None:
    """An interpreter that has ipyflow's kernel: this one (the test extra installs ipyflow-core), or
    the one CELLWRIGHT_IPYFLOW_PYTHON names; None when neither has it."""
    for python in (sys.executable, os.environ.get(IPYFLOW_PYTHON_ENV)):
        if python and (shutil.which(python) or Path(python).exists()):
            found = subprocess.run([python, "-c", "import ipyflow.kernel"], capture_output=True, check=False)
            if found.returncode == 0:
                return python
    return None


class IpyflowKernel:
    def __init__(self, python: str, workdir: Path) -> None:
        specs = workdir / "kernels"
        (specs / "ipyflow").mkdir(parents=True)
        spec = {
            "argv": [python, "-m", "ipyflow.kernel", "-f", "{connection_file}"],
            "display_name": "ipyflow",
            "language": "python",
        }
        (specs / "ipyflow" / "kernel.json").write_text(json.dumps(spec))
        self.manager = KernelManager(
            kernel_name="ipyflow", kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(specs)])
        )
        self.manager.start_kernel(cwd=str(workdir))
        self.client: BlockingKernelClient = self.manager.client()
        self.client.start_channels()
        self.client.wait_for_ready(60)
        self.comm_id = uuid.uuid4().hex
        self._send("comm_open", {"comm_id": self.comm_id, "target_name": "ipyflow", "data": SETTINGS})
        established = self._comm_reply()
        if not established.get("success"):
            raise RuntimeError(f"ipyflow's comm did not open: {established}")

    def _send(self, kind: str, content: dict[str, object], metadata: dict[str, object] | None = None) -> str:
        message = self.client.session.msg(kind, content, metadata=metadata or {})
        self.client.shell_channel.send(message)
        return str(message["header"]["msg_id"])

    def _comm_reply(self) -> dict[str, object]:
        end = time.monotonic() + REPLY_TIMEOUT
        while time.monotonic() < end:
            message = self.client.get_iopub_msg(timeout=end - time.monotonic())
            content = message["content"]
            if message["msg_type"] == "comm_msg" and content.get("comm_id") == self.comm_id:
                return dict(content["data"])
        raise TimeoutError("ipyflow did not answer on its comm")

    def execute(self, code: str, cell_id: str) -> None:
        request = {
            "code": code,
            "silent": False,
            "store_history": True,
            "user_expressions": {},
            "allow_stdin": False,
            "stop_on_error": False,
        }
        msg_id = self._send("execute_request", request, {"cellId": cell_id})
        while True:
            reply = self.client.get_shell_msg(timeout=REPLY_TIMEOUT)
            if reply["parent_header"].get("msg_id") == msg_id:
                return

    def stale(self, cells: list[tuple[str, str]]) -> set[str]:
        """ipyflow's ready and waiting cells among `cells` ((id, current source), notebook order)."""
        metadata = {
            cell_id: {"type": "code", "index": i, "content": source} for i, (cell_id, source) in enumerate(cells)
        }
        self._send(
            "comm_msg",
            {"comm_id": self.comm_id, "data": {"type": "compute_exec_schedule", "cell_metadata_by_id": metadata}},
        )
        answer = self._comm_reply()
        if not answer.get("success"):
            raise RuntimeError(f"ipyflow's schedule failed: {answer.get('error')}")
        found = [*answer.get("ready_cells", []), *answer.get("waiting_cells", [])]  # type: ignore[misc]
        return {str(cell_id) for cell_id in found}

    def play(self, number: int, case: Case) -> set[str]:
        """Run `case`'s steps (cell ids `<number>-c<position>`); its stale cells as positions' ids."""
        self.execute(CLEAR, f"{number}-clear")
        sources = list(case.cells)
        alive = [True] * len(sources)
        for step in case.steps:
            kind, index = step[0], step[1]
            if kind == "run":
                self.execute(sources[index], f"{number}-c{index}")
            elif kind == "edit":
                sources[index] = str(step[2])  # type: ignore[misc]
            elif kind == "delete":
                alive[index] = False
        cells = [(f"{number}-c{i}", source) for i, source in enumerate(sources) if alive[i]]
        return {cell_id.split("-", 1)[1] for cell_id in self.stale(cells)}

    def close(self) -> None:
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)
