"""One task through a real Cellwright server, over HTTP and SSE as the panel drives it: a notebook
and its kernel session, a thread, a run, the approvals as they come (by the approval policy), the
final answer checked; then the agent's cells written into the notebook (as the panel's reconcile
writes them), the notebook verified in a shadow kernel, and a plot task's figure read from the kernel."""

from __future__ import annotations

import ast
import json
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

import httpx
from jupyter_client.jsonutil import json_default
from jupyter_client.session import Session

from bench.agent_tasks.checker import same_data, wrong_answers
from bench.agent_tasks.expected import Expected
from bench.agent_tasks.tasks import Task
from devtools.kernel_websocket import connect

APPROVAL_POLICIES = ("approve-all", "reject-first-shell")
SHELL_REASON = "Please do not use shell commands here: do it in Python in the notebook instead."
API = "cellwright/api"
KEPT = "notebooks"  # each task's notebook as the task left it


@dataclass
class TaskResult:
    id: str
    level: str
    correct: bool = False
    wrong: list[str] = field(default_factory=list)  # answer names missing or wrong; "figure" for the plot
    answer: str = ""
    status: str = ""  # the last run_finished status, or "timeout"
    model_calls: int = 0
    approvals_asked: int = 0
    approvals_rejected: int = 0
    tool_calls: dict[str, int] = field(default_factory=dict)  # by tool name
    approvals_by_tool: dict[str, int] = field(default_factory=dict)  # the approvals asked, by tool name
    sandboxed: int = 0  # tool calls that ran in the sandbox, unasked (issue 37: explore, read-only commands)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    wall_s: float = 0.0  # from POST runs to the last run_finished, approvals included
    first_token_s: float | None = None  # to the first token or tool call of the model
    reruns: str | None = None  # verify_notebook's status; None when no agent cell ran
    rerun_at_cell: int | None = None
    overhead_s: float = 0.0  # the runner's own time: notebook, session, thread, writing cells, teardown
    verify_s: float = 0.0
    error: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class Server:
    """A Cellwright server's routes, token-authenticated (as a panel's requests are)."""

    def __init__(self, url: str, token: str) -> None:
        self.url, self.token = url.rstrip("/"), token
        self.http = httpx.Client(base_url=self.url, headers={"Authorization": f"token {token}"}, timeout=120)

    def call(self, method: str, path: str, body: Any = None, expect: tuple[int, ...] = (200, 201, 202, 204)) -> Any:
        response = self.http.request(method, path, content=json.dumps(body) if body is not None else None)
        if response.status_code not in expect:
            raise RuntimeError(f"{method} {path}: {response.status_code} {response.text[:500]}")
        return response.json() if response.content and "json" in response.headers.get("content-type", "") else None

    def events(self, thread_id: str, after: int, deadline: float) -> Iterator[tuple[bool, dict[str, Any] | None]]:
        """The thread's events after `after` as they come, until the server closes the stream: (stored,
        event); a ping gives (False, None), so a reader can give up at `deadline` (time.monotonic())."""
        timeout = httpx.Timeout(max(1.0, deadline - time.monotonic()) + 20, connect=30)  # pings come every 15 s
        with self.http.stream(
            "GET", f"{API}/threads/{thread_id}/events", params={"after": after}, timeout=timeout
        ) as r:
            fields: dict[str, str] = {}
            for line in r.iter_lines():
                if line.startswith(":"):
                    yield False, None
                    continue
                if line:
                    key, _, value = line.partition(": ")
                    fields[key] = value
                    continue
                if "data" in fields:
                    yield "id" in fields, json.loads(fields["data"])  # live-only events have no id
                fields = {}

    def close(self) -> None:
        self.http.close()


def figure_data(server: Server, kernel_id: str, expression: str) -> Any:
    """`expression` evaluated in the kernel as a user expression: silent, no execution count, no new
    names; the JSON value, or an error string."""
    ws = connect(server.url, kernel_id, server.token)
    try:
        wrapped = f"__import__('json').dumps({expression})"
        content = {"code": "", "silent": True, "store_history": False, "user_expressions": {"data": wrapped}}
        message = Session(username="bench").msg("execute_request", {**content, "allow_stdin": False})
        ws.send(json.dumps({**message, "channel": "shell"}, default=json_default))
        while True:
            frame = json.loads(ws.recv())
            if frame.get("channel") == "shell" and frame["parent_header"].get("msg_id") == message["header"]["msg_id"]:
                value = frame["content"].get("user_expressions", {}).get("data", {})
                if value.get("status") != "ok":
                    return f"error: {value.get('ename')}: {value.get('evalue')}"
                return json.loads(ast.literal_eval(value["data"]["text/plain"]))
    finally:
        ws.close()


def _blank_notebook() -> dict[str, Any]:
    return {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        "cells": [],
    }


def write_agent_cells(server: Server, path: str, thread_id: str) -> dict[str, Any]:
    """What the panel does on binding a notebook: the agent cells of the thread (POST agent_cells
    lists every thread of the notebook's) written into it, in order, with their outputs and
    provenance. The notebook as saved."""
    notebook = server.call("GET", f"api/contents/{path}")["content"]
    cells: list[dict[str, Any]] = notebook["cells"]
    offset: int | None = 0
    while offset is not None:
        page = server.call("POST", f"{API}/agent_cells", {"notebook_path": path, "offset": offset})
        for cell in page["cells"]:
            if cell.get("undone") or cell["thread_id"] != thread_id:
                continue
            meta = {"cellwright": {k: cell[k] for k in ("thread_id", "run_id", "tool_call_id")}}
            if cell.get("edit"):
                target = next((c for c in cells if c.get("id") == cell["cell_id"]), None)
                if target is not None:
                    target.update(
                        source=cell["source"], outputs=cell["outputs"], execution_count=cell.get("execution_count")
                    )
                continue
            entry: dict[str, Any] = {
                "cell_type": cell["cell_type"],
                "id": cell["cell_id"],
                "metadata": meta,
                "source": cell["source"],
            }
            if cell["cell_type"] == "code":
                entry.update(outputs=cell["outputs"], execution_count=cell.get("execution_count"))
            cells.append(entry)
        offset = page["next_offset"]
    notebook["cells"] = cells
    server.call("PUT", f"api/contents/{path}", {"type": "notebook", "format": "json", "content": notebook})
    return dict(notebook)


def _count(counts: dict[str, int], name: str) -> None:
    counts[name] = counts.get(name, 0) + 1


def _decide(
    server: Server, thread_id: str, kernel_id: str, event: dict[str, Any], policy: str, result: TaskResult
) -> None:
    result.approvals_asked += 1
    _count(result.approvals_by_tool, event["name"])
    reject = policy == "reject-first-shell" and event["name"] == "execute_command" and not result.approvals_rejected
    body: dict[str, Any] = {"decision": "reject", "reason": SHELL_REASON} if reject else {"decision": "approve"}
    result.approvals_rejected += int(reject)
    server.call("POST", f"{API}/threads/{thread_id}/approvals/{event['id']}", {**body, "kernel_id": kernel_id})


def _drive(
    server: Server,
    task: Task,
    thread_id: str,
    kernel_id: str,
    path: str,
    mode: str,
    policy: str,
    limit_s: float,
    result: TaskResult,
) -> None:
    started = time.monotonic()
    server.call(
        "POST",
        f"{API}/threads/{thread_id}/runs",
        {"message": task.prompt(), "notebook_path": path, "kernel_id": kernel_id, "mode": mode},
    )
    after = 0
    deadline = started + limit_s
    while True:
        pending: dict[str, Any] | None = None
        if time.monotonic() >= deadline:
            server.call("POST", f"{API}/threads/{thread_id}/cancel", expect=(202, 409))
            result.status = "timeout"
            break
        for stored, event in server.events(thread_id, after, deadline):
            if time.monotonic() >= deadline:
                break
            if event is None:
                continue
            after = max(after, event["seq"]) if stored else after
            kind = event.get("type")
            if kind in ("token", "tool_call") and result.first_token_s is None:
                result.first_token_s = round(time.monotonic() - started, 3)
            if kind == "usage":
                result.model_calls += 1
                result.prompt_tokens += event["call"]["prompt_tokens"]
                result.completion_tokens += event["call"]["completion_tokens"]
            elif kind == "tool_call" and stored:
                _count(result.tool_calls, event["name"])
            elif kind == "tool_result" and event.get("sandboxed"):
                result.sandboxed += 1
            elif kind == "approval_required":
                pending = event
            elif kind == "final":
                result.answer = event["answer"]
            elif kind == "error" and not result.error:
                result.error = f"{event.get('kind')}: {event.get('message')}"[:300]
            elif kind == "run_finished":
                result.status = event["status"]
        if result.status == "awaiting_approval" and pending is not None:
            _decide(server, thread_id, kernel_id, pending, policy, result)
            result.status = ""
            continue
        if result.status:
            break
        time.sleep(0.2)  # the stream closed before the run's end (a server restart?): reconnect, not at once
    result.wall_s = round(time.monotonic() - started, 3)


def run_task(
    server: Server,
    task: Task,
    expected: Expected,
    path: str,
    mode: str = "single",
    policy: str = "approve-all",
    limit_s: float = 300.0,
    verify: bool = True,
) -> TaskResult:
    """Run `task` in the notebook `path` (made anew, with a kernel of its own) and check its answer;
    the notebook it leaves is kept as notebooks/<task id>.ipynb. Never raises for the task's failure.

    A worker runs its tasks in one notebook path, so the system prompt (which names the notebook)
    is the same from task to task: an endpoint's prefix cache then serves it (llama.cpp's server
    re-evaluated a 3,900-token prompt for every task otherwise)."""
    began = time.monotonic()
    result = TaskResult(task.id, task.level)
    session_id = None
    try:
        server.call("PUT", f"api/contents/{path}", {"type": "notebook", "format": "json", "content": _blank_notebook()})
        session = server.call(
            "POST", "api/sessions", {"path": path, "name": path, "type": "notebook", "kernel": {"name": "python3"}}
        )
        session_id, kernel_id = session["id"], session["kernel"]["id"]
        thread_id = server.call("POST", f"{API}/threads", {"notebook_path": path})["thread_id"]
        _drive(server, task, thread_id, kernel_id, path, mode, policy, limit_s, result)
        result.wrong = wrong_answers(expected.answers, result.answer, task.tolerance)
        if task.figure:
            try:
                drawn = figure_data(server, kernel_id, task.figure)
            except Exception as exc:  # the kernel died or never answered (websocket time-out): no figure
                drawn = f"error: {type(exc).__name__}: {exc}"
            if not same_data(expected.figure, drawn, task.tolerance):
                result.wrong.append("figure")
        result.correct = not result.wrong and result.status == "completed"
        notebook = write_agent_cells(server, path, thread_id)
        kept = {"type": "notebook", "format": "json", "content": notebook}
        server.call("PUT", f"api/contents/{KEPT}/{task.id}.ipynb", kept)
        if verify and any(c["cell_type"] == "code" for c in notebook["cells"]):
            checked = time.monotonic()
            found = server.call("POST", f"{API}/verify", {"path": path})
            result.verify_s = round(time.monotonic() - checked, 3)
            result.reruns, result.rerun_at_cell = found["status"], found.get("at_cell")
    except (RuntimeError, httpx.HTTPError, OSError) as exc:
        result.error = result.error or f"{type(exc).__name__}: {exc}"[:300]
    finally:
        if session_id is not None:
            try:
                server.call("DELETE", f"api/sessions/{session_id}")
            except (RuntimeError, httpx.HTTPError) as exc:
                result.error = result.error or f"session not deleted: {exc}"[:300]
    result.overhead_s = round(time.monotonic() - began - result.wall_s - result.verify_s, 3)
    return result
