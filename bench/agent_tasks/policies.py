"""Scripted models for the benchmark: the fake OpenAI-compatible server (devtools/fake_llm.py)
answering every request from a policy instead of a script, in a process of its own (as
devtools/model_process.py runs it), so the runner's reads never slow its stream.

- reference: proposes the task's reference code as run_cell, then answers with final_answer holding
  the `@name[value]` lines the cell printed (found in the tool result it was sent).
- wrong: answers at once with final_answer, every expected value changed (the checkers must fail it).
- shell-first: as reference, but first asks to install a package with execute_command (for the
  reject-first-shell approval policy: rejected, it carries on in the notebook).
- exploring: as reference, but first looks at the data as real models do, with `explore` (a sandboxed
  fork of the kernel: issue 37): head, info, a summary, the counts of the column the question is
  about, a quick plot for a plot task (looks.py), each built from what earlier results showed. Where
  explore is not offered (multi-agent mode's python_developer) it solves at once, as reference.

In multi-agent mode the planner delegates the whole task to python_developer, which plays the policy
and reports in text; the planner answers from that report. The model name of the request chooses
the policy, so one server switches between them with PUT config {"model"}.

The task is recognised by its question, which the runner's message contains. Native tool calls when
the request offers tools; otherwise the prompt protocol's `Action:` / `Final Answer:` text."""

from __future__ import annotations

import json
import multiprocessing
import re
from multiprocessing.connection import Connection
from typing import Any

from bench.agent_tasks.checker import ANSWER
from bench.agent_tasks.looks import next_look
from bench.agent_tasks.tasks import Task
from devtools.fake_llm import FakeLLM
from devtools.fake_llm_script import Reply, Shown, reading, text, tool_call

POLICIES = ("reference", "wrong", "shell-first", "exploring")
ACTION = re.compile(r"Action:\s*`?(\w+)")


def changed(value: str) -> str:
    """A wrong value near the right one: a number moved well outside any tolerance, a name altered,
    a list with one item more."""
    if "," in value:
        return ", ".join([*(changed(v.strip()) for v in value.split(",")), "0"])
    try:
        return f"{float(value) * 1.5 + 3:g}"
    except ValueError:
        return f"not_{value}"


def _printed(messages: list[dict[str, Any]]) -> str:
    """The `@name[value]` lines of the last tool result (a cell's output, a sub-agent's report)."""
    results = [m for m in messages if m.get("role") == "tool" or str(m.get("content", "")).startswith("Observation:")]
    found = ANSWER.findall(str(results[-1].get("content") or "")) if results else []
    return " ".join(f"@{n}[{v}]" for n, v in found) or "(no answer was printed)"


def _called(messages: list[dict[str, Any]]) -> list[str]:
    """The tools the model called so far: native tool calls, or the prompt protocol's `Action:` lines."""
    names = []
    for message in messages:
        if message.get("role") != "assistant":
            continue
        names += [call["function"]["name"] for call in message.get("tool_calls") or []]
        names += ACTION.findall(str(message.get("content") or ""))
    return names


class PolicyLLM(FakeLLM):
    """A FakeLLM whose every reply comes from the policy the request's model names."""

    def __init__(self, tasks: list[Task], expected: dict[str, dict[str, str]]) -> None:
        super().__init__()
        self.tasks = tasks
        self.expected = expected

    def _next_reply(
        self, body: dict, headers: dict[str, str], raw: bytes = b"", path: str = "/v1/chat/completions"
    ) -> Reply:  # FakeLLM's, whose arguments it keeps: what the request handlers pass
        with self._lock:
            self._requests.append({"n": len(self._requests)})  # counted, not kept: a run is long
        try:
            return self.reply(body)
        except Exception as exc:  # a policy bug shows as the model's error, not a hang
            return text(f"policy error: {exc!r}")

    def _task(self, messages: list[dict[str, Any]]) -> Task | None:
        asked = " ".join(str(m.get("content") or "") for m in messages if m.get("role") == "user")
        return next((t for t in self.tasks if t.question in asked), None)

    def reply(self, body: dict[str, Any]) -> Reply:
        messages = body.get("messages") or []
        native = bool(body.get("tools"))
        offered = {tool["function"]["name"] for tool in body.get("tools") or []}
        task = self._task(messages)
        policy = body.get("model")
        if task is None or policy not in POLICIES:
            return self._final(f"I cannot tell which task this is, or model {policy!r} is no policy.", native)
        if policy == "wrong":
            answers = " ".join(f"@{n}[{changed(v)}]" for n, v in self.expected[task.id].items())
            return self._final(f"The answer: {answers}", native)
        called = _called(messages)
        if "task" in offered and "task" not in called:  # the planner (multi-agent mode) delegates the task
            asked = next(
                str(m.get("content"))
                for m in messages
                if m.get("role") == "user" and task.question in str(m.get("content"))
            )
            return self._call("task", {"agent": "python_developer", "description": asked}, native)
        if "task" in offered:  # the developer's report came back
            return self._final(f"The answer: {_printed(messages)}", native)
        if policy == "shell-first" and not called:
            # A command that changes something (a look such as `ls data` now runs sandboxed, unasked).
            return self._call("execute_command", {"command": "pip install tabulate"}, native)
        offers_explore = "explore" in offered or not native  # prompt mode's tools are in the system prompt
        if policy == "exploring" and offers_explore and "run_cell" not in called:
            return self._look_or_solve(body, task, called.count("explore"), native)
        if "run_cell" not in called:
            return self._solve(task, native)
        return self._final(f"The answer: {_printed(messages)}", native, offered)

    def _look_or_solve(self, body: dict[str, Any], task: Task, looked: int, native: bool) -> Reply:
        """The next look at the data, made from what the request showed, else the solution; a look
        that needs a value no result showed answers with an error (reading's), which fails the run."""

        def policy(seen: Shown) -> Reply:
            code = next_look(seen, looked)
            return self._solve(task, native) if code is None else self._call("explore", {"code": code}, native)

        reply = reading(policy)(body)
        return reply if isinstance(reply, Reply) else text(reply)

    @classmethod
    def _solve(cls, task: Task, native: bool) -> Reply:
        return cls._call("run_cell", {"code": task.code, "description": f"Solve {task.id}"}, native)

    @staticmethod
    def _call(name: str, args: dict[str, Any], native: bool) -> Reply:
        if native:
            return tool_call(name, args)
        return text(f"Action: {name}\nAction Input: {json.dumps(args)}")

    @staticmethod
    def _final(answer: str, native: bool, offered: set[str] | None = None) -> Reply:
        if native and (offered is None or "final_answer" in offered):
            return tool_call("final_answer", {"answer": answer})
        return text(answer if native else f"Final Answer: {answer}")  # a sub-agent reports in text


def _serve(control: Connection, tasks: list[Task], expected: dict[str, dict[str, str]]) -> None:
    with PolicyLLM(tasks, expected) as llm:
        control.send(llm.base_url)
        while control.recv() is not None:  # asked how many requests came
            control.send(len(llm._requests))


class PolicyProcess:
    """The scripted model's process: `base_url` to point a server at, `requests()` it answered."""

    def __init__(self, tasks: list[Task], expected: dict[str, dict[str, str]]) -> None:
        context = multiprocessing.get_context("fork")
        self._control, child = context.Pipe()
        self._process = context.Process(target=_serve, args=(child, tasks, expected), daemon=True)
        self._process.start()
        self.base_url: str = self._control.recv()

    def requests(self) -> int:
        self._control.send(True)
        return int(self._control.recv())

    def close(self) -> None:
        if self._process.is_alive():
            self._control.send(None)
            self._process.join(10)

    def __enter__(self) -> PolicyProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
