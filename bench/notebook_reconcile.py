"""Reconcile on open (issue 23): the time to bind a notebook that lacks 50 agent cells (JupyterLab in
Debian's chromium opens it, the panel asks POST agent_cells and inserts the 50 cells with their
outputs), against opening the same notebook with all 50 already in it (the reconcile finds nothing),
measured in the same run, in the same browser, alternately. The 50 cells come from a real run
(scripted model, auto-approved run_cell, a real kernel) driven through the HTTP API. Also prints
the route's own time for the 50 cells.

    python bench/notebook_reconcile.py [rounds]
"""

from __future__ import annotations

import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import nbformat  # noqa: E402

from devtools.fake_llm import FakeLLM, text, tool_call  # noqa: E402
from devtools.jupyter_process import QUIET_LAB_ARGS, TOKEN, JupyterProcess, quiet_lab_settings  # noqa: E402
from tests.ui.conftest import browser_page  # noqa: E402

CELLS = 50
NOTEBOOK = "bench.ipynb"
# In the page: ms since navigation when the notebook has been reconciled and shows `want` cells.
# With it, the reconcile's own time (from the notebook loaded to the cells inserted into its model).
BOUND = """([want]) => {
  const panel = document.querySelector('.jp-NotebookPanel');
  const cells = document.querySelectorAll('.jp-Notebook .jp-Cell').length;
  const measured = performance.getEntriesByName('cellwright:reconcile');
  return panel && panel.dataset.cwReconciled && cells === want && measured.length
    ? [performance.now(), measured[0].duration]
    : null;
}"""


def _api(lab: JupyterProcess, method: str, path: str, body: Any = None) -> Any:
    response = lab.request(method, f"cellwright/api/{path}", body)
    assert response.status_code < 300, response.text
    return response.json() if response.content else None


def _run(lab: JupyterProcess, llm: FakeLLM) -> None:
    """One auto-approved run of CELLS cells in the notebook's kernel, through the API."""
    llm.script(
        *(
            tool_call("run_cell", {"code": f"v{i} = {i} * 2\nprint('cell', {i}, v{i})"}, id=f"c{i}")
            for i in range(CELLS)
        ),
        text("Done."),
    )
    _api(lab, "PUT", "config", {"auto_approve": ["run_cell"]})
    lab.open_notebook(NOTEBOOK)
    thread = _api(lab, "POST", "threads", {"notebook_path": NOTEBOOK})["thread_id"]
    _api(lab, "POST", f"threads/{thread}/runs", {"message": "go", "notebook_path": NOTEBOOK})
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if any(e["type"] == "run_finished" for e in lab.events(thread)):
            return
        time.sleep(0.2)
    raise SystemExit("the run did not finish")


def _open(page: Any, lab: JupyterProcess, want: int) -> tuple[float, float]:
    """(ms from navigation to the notebook bound with `want` cells shown, ms of the reconcile itself)."""
    page.goto(f"{lab.url}/lab/tree/{NOTEBOOK}?reset&token={TOKEN}")
    handle = page.wait_for_function(BOUND, arg=[want], timeout=120_000, polling="raf")
    shown, reconcile = handle.json_value()
    return float(shown), float(reconcile)


def _save(page: Any, lab: JupyterProcess) -> None:
    page.locator(".jp-Notebook .jp-Cell .jp-InputPrompt").first.click()
    page.keyboard.press("Escape")
    page.keyboard.press("Control+s")
    for _ in range(100):
        if len(nbformat.read(str(lab.root / NOTEBOOK), 4).cells) == CELLS + 1:
            return
        time.sleep(0.1)
    raise SystemExit("the notebook was not saved")


def main(rounds: int) -> None:
    base = Path(tempfile.mkdtemp(prefix="cw-bench-reconcile-"))
    with FakeLLM() as llm:
        env = {"OPENAI_BASE_URL": llm.base_url, "OPENAI_API_KEY": "sk-bench", "CELLWRIGHT_MODEL": "fake-model"}
        quiet_lab_settings(base / "config")
        (base / "config" / "jupyter_server_config.json").write_text(
            json.dumps({"Cellwright": {"max_model_calls": CELLS + 10}})
        )
        lab = JupyterProcess(base, env, app="lab", extra_args=QUIET_LAB_ARGS).start()
        try:
            nbformat.write(
                nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("mine = 1")]), str(lab.root / NOTEBOOK)
            )
            _run(lab, llm)
            lacking = (lab.root / NOTEBOOK).read_bytes()
            route = []
            for _ in range(10):
                started = time.perf_counter()
                answer = _api(lab, "POST", "agent_cells", {"notebook_path": NOTEBOOK})
                route.append((time.perf_counter() - started) * 1000)
            assert len(answer["cells"]) == CELLS, len(answer["cells"])
            with browser_page() as page:
                _open(page, lab, CELLS + 1)  # warm-up: the browser's cache, the kernel's session
                _save(page, lab)
                complete = (lab.root / NOTEBOOK).read_bytes()
                missing, present = [], []
                for _ in range(rounds):
                    (lab.root / NOTEBOOK).write_bytes(lacking)
                    missing.append(_open(page, lab, CELLS + 1))
                    (lab.root / NOTEBOOK).write_bytes(complete)
                    present.append(_open(page, lab, CELLS + 1))
        finally:
            lab.stop()
            shutil.rmtree(base, ignore_errors=True)
    print(f"POST agent_cells, {CELLS} cells: median {statistics.median(route):.1f} ms")
    for index, what in (
        (1, "the reconcile itself (health, agent_cells, insert)"),
        (0, "navigation -> bound, cells shown"),
    ):
        m = statistics.median(x[index] for x in missing)
        p = statistics.median(x[index] for x in present)
        print(f"{what}:")
        print(
            f"  {CELLS} agent cells missing (inserted): median {m:.0f} ms  {sorted(round(x[index]) for x in missing)}"
        )
        print(f"  nothing to reconcile (baseline):      median {p:.0f} ms  {sorted(round(x[index]) for x in present)}")
        print(f"  ratio missing / baseline: {m / p:.2f}  ({m - p:+.0f} ms)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
