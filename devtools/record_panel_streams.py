"""Record the event streams that the panel's reducer tests replay (labextension_src/__tests__/
fixtures/): real runs of a real server with a kernel and the scripted fake LLM.

    python -m devtools.record_panel_streams [output folder]

Rerun it when the event contract changes; the tests then check the panel against what the server
sends now. Ids that vary per run (threads, runs, kernels) are replaced by stable ones."""

from __future__ import annotations

import json
import re
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from .fake_llm import FakeLLM, Reply, text, tool_call
from .jupyter_process import REPO, TOKEN, JupyterProcess

OUT = REPO / "labextension_src" / "__tests__" / "fixtures"
NOTEBOOK = "analysis.ipynb"


def sse_messages(lines: Iterator[str]) -> Iterator[dict[str, Any]]:
    """The SSE messages of a body as the wire has them: `id` (None without an `id:` line), `event`, `data`."""
    fields: dict[str, str] = {}
    for line in lines:
        if line == "":
            if "data" in fields:
                yield {
                    "id": fields.get("id"),
                    "event": fields.get("event", "message"),
                    "data": json.loads(fields["data"]),
                }
            fields = {}
        elif not line.startswith(":"):
            name, _, value = line.partition(": ")
            fields[name] = value


class Recorder:
    def __init__(self, lab: JupyterProcess) -> None:
        self.lab = lab
        self.kernel_id = lab.open_notebook(NOTEBOOK)

    def api(self, method: str, path: str, body: Any = None) -> Any:
        response = self.lab.request(method, f"cellwright/api/{path}", body)
        assert response.status_code < 300, response.text
        return response.json() if response.content else None

    def start(self, message: str, mode: str) -> str:
        thread_id = self.api("POST", "threads", {"notebook_path": NOTEBOOK})["thread_id"]
        self.api(
            "POST",
            f"threads/{thread_id}/runs",
            {"message": message, "notebook_path": NOTEBOOK, "kernel_id": self.kernel_id, "mode": mode},
        )
        return thread_id

    def wait_for(self, thread_id: str, status: str, after: int = 0, timeout: float = 60) -> list[dict[str, Any]]:
        """The events up to the `run_finished` with `status`."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            events = self.lab.events(thread_id)
            if any(e["type"] == "run_finished" and e["status"] == status and e["seq"] > after for e in events):
                return events
            time.sleep(0.2)
        raise TimeoutError(f"no run_finished {status!r} in {thread_id}")

    def approve(self, thread_id: str, events: list[dict[str, Any]]) -> None:
        pending = [e for e in events if e["type"] == "approval_required"][-1]
        self.api(
            "POST",
            f"threads/{thread_id}/approvals/{pending['id']}",
            {"decision": "approve", "kernel_id": self.kernel_id},
        )

    def finish(self, thread_id: str) -> list[dict[str, Any]]:
        """Approve every pending call until the run completes; the whole log."""
        after = 0
        while True:
            events = self.wait_for_any_end(thread_id, after)
            last = events[-1]
            if last["status"] != "awaiting_approval":
                return events
            after = last["seq"]
            self.approve(thread_id, events)

    def wait_for_any_end(self, thread_id: str, after: int, timeout: float = 60) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            events = self.lab.events(thread_id)
            if events and events[-1]["type"] == "run_finished" and events[-1]["seq"] > after:
                return events
            time.sleep(0.2)
        raise TimeoutError(f"the run of {thread_id} did not end")

    def follow(self, thread_id: str, last_event_id: int | None, stop: Any = None) -> list[dict[str, Any]]:
        """One connection's messages, read as they come; `stop(messages so far)` true drops it there."""
        headers = {"Authorization": f"token {TOKEN}"}
        if last_event_id is not None:
            headers["Last-Event-ID"] = str(last_event_id)
        url = f"{self.lab.url}/cellwright/api/threads/{thread_id}/events"
        messages = []
        with httpx.stream("GET", url, headers=headers, timeout=60) as response:
            for message in sse_messages(response.iter_lines()):
                messages.append(message)
                if stop and stop(messages):
                    break
        return messages


def stable(value: Any, names: dict[str, str]) -> Any:
    """Replace per-run ids (threads, runs, kernels, generated call ids) with stable names."""
    if isinstance(value, dict):
        return {key: stable(item, names) for key, item in value.items()}
    if isinstance(value, list):
        return [stable(item, names) for item in value]
    if isinstance(value, str):
        return re.sub("|".join(map(re.escape, names)) or "^$", lambda m: names[m.group(0)], value) if names else value
    return value


def id_names(events: list[dict[str, Any]], kernel_id: str) -> dict[str, str]:
    names = {kernel_id: "kernel-1"}
    runs = 0
    for event in events:
        names.setdefault(event["thread_id"], "thread-1")
        if event["run_id"] not in names:
            runs += 1
            names[event["run_id"]] = f"run-{runs}"
    return names


def record_single(recorder: Recorder, fake: FakeLLM) -> dict[str, Any]:
    fake.script(
        tool_call(
            "write_todos",
            {
                "todos": [
                    {"content": "Load data.csv", "status": "in_progress"},
                    {"content": "Report its shape", "status": "pending"},
                ]
            },
        ),
        Reply(
            content=["Loading ", "the file first."],
            tool_calls=[
                (
                    "run_cell",
                    {
                        "code": "rows = open('data.csv').read().splitlines()[1:]\nprint('shape', (len(rows), 2))",
                        "description": "Load the CSV",
                    },
                    "call_load",
                )
            ],
        ),
        tool_call(
            "final_answer",
            {
                "answer": "The data has **3 rows** and 2 columns.",
                "next_items": [{"title": "Plot it", "prompt": "plot the data"}],
            },
        ),
    )
    (recorder.lab.root / "data.csv").write_text("a,b\n1,2\n3,4\n5,6\n")
    thread_id = recorder.start("load data.csv and show its shape", "single")
    events = recorder.finish(thread_id)
    return {
        "description": "A single-agent run: todos, streamed text, a cell approved and run in the kernel, the final answer.",
        "events": stable(events, id_names(events, recorder.kernel_id)),
    }


def record_multi(recorder: Recorder, fake: FakeLLM) -> dict[str, Any]:
    fake.script(  # in request order: planner, researcher x2, planner, developer x2, planner
        Reply(
            content=["I will ask the researcher first."],
            tool_calls=[("task", {"agent": "researcher", "description": "Find the sales file."}, "call_p1")],
        ),
        tool_call("list_files", {"path": "."}, id="call_r1"),
        text(["The file is ", "sales.csv."]),
        tool_call("task", {"agent": "python_developer", "description": "Print the total of sales.csv."}, id="call_p2"),
        tool_call(
            "run_cell",
            {"code": "print(sum(int(l.split(',')[1]) for l in open('sales.csv').read().splitlines()[1:]))"},
            id="call_d1",
        ),
        text(["Total amount ", "is 42."]),
        tool_call("final_answer", {"answer": "Total sales: **42**."}),
    )
    (recorder.lab.root / "sales.csv").write_text("day,amount\nmon,20\ntue,22\n")
    thread_id = recorder.start("What are total sales?", "multi")
    events = recorder.finish(thread_id)
    return {
        "description": "A multi-agent run: the planner delegates to the researcher, then to the Python developer, whose cell waits for approval.",
        "events": stable(events, id_names(events, recorder.kernel_id)),
    }


def record_overlap(recorder: Recorder, fake: FakeLLM) -> dict[str, Any]:
    """A panel that reloads mid-run: connection 1 replays the backlog, goes live and drops during the
    cell; connection 2 starts from an older point than the panel has seen, so it overlaps."""
    fake.script(
        tool_call(
            "run_cell",
            {"code": "import time\nfor i in range(4):\n    print('step', i, flush=True)\n    time.sleep(0.4)"},
            id="call_loop",
        ),
        text(["Counted ", "to three."]),
    )
    thread_id = recorder.start("count slowly", "single")
    recorder.approve(thread_id, recorder.wait_for(thread_id, "awaiting_approval"))

    first = recorder.follow(thread_id, None, lambda messages: sum(m["event"] == "cell_output" for m in messages) >= 2)
    stored = [int(m["id"]) for m in first if m["id"] is not None]
    overlap_from = stored[-4]  # a resume point older than what connection 1 delivered
    second = recorder.follow(thread_id, overlap_from)
    events = recorder.lab.events(thread_id)
    names = id_names(events, recorder.kernel_id)
    return {
        "description": "Two connections to one run: the first replays the backlog, goes live and drops during the cell; the second resumes from an older seq than the first delivered, so its backlog overlaps live events already applied.",
        "resumed_after": overlap_from,
        "connections": stable([first, second], names),
        "events": stable(events, names),
    }


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else OUT
    out.mkdir(parents=True, exist_ok=True)
    scenarios = {
        "single_agent.json": record_single,
        "multi_agent.json": record_multi,
        "replay_overlap.json": record_overlap,
    }
    for name, scenario in scenarios.items():
        with tempfile.TemporaryDirectory() as tmp, FakeLLM() as fake:
            env = {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "", "CELLWRIGHT_MODEL": "fake-model"}
            lab = JupyterProcess(Path(tmp), env).start()
            try:
                recording = scenario(Recorder(lab), fake)
            finally:
                lab.stop()
        (out / name).write_text(json.dumps(recording, indent=1) + "\n")
        print(f"{out / name}: {len(recording['events'])} events")


if __name__ == "__main__":
    main()
