"""What a `%agent` cell shows and asks: the agent's events printed as plain text (model text made
visible, never rendered), and the approval prompt, which shows every argument that affects what
runs with its control characters marked."""

from __future__ import annotations

import json
import re
import sys
from typing import Any

from IPython.core.error import StdinNotImplementedError
from IPython.display import display

from agent_core.contract.bodies import Decision
from agent_core.display_text import visible
from agent_core.tools import TOOLS

RED, DIM, RESET = "\x1b[31m", "\x1b[90m", "\x1b[0m"  # 90: grey, which JupyterLab renders (2 it ignores)

EDITABLE_ARG = {"run_cell": "code", "execute_command": "command", "write_file": "content"}  # edited as text
# The argument shown as the body of the approval prompt; every other argument is listed under it.
MAIN_ARG = {"run_cell": "code", "execute_command": "command", "write_file": "content", "edit_file": "edits"}
NOT_RUN_ARGS = {"run_cell": ("description",)}  # shown in the prompt's heading already; changes nothing that runs


class ApprovalUnavailable(Exception):
    """This frontend cannot answer input()."""


class ApprovalPrompt:
    """Asks for a decision on the main thread: a text prompt, answered in the notebook."""

    def __init__(self, printer: Printer, approve_all: bool) -> None:
        self.printer = printer
        self.approve_all = approve_all

    def ask(self, pending: dict[str, Any]) -> Decision:
        self.printer.approval(pending)
        if self.approve_all:
            print("Approved (--yes).", flush=True)
            return Decision(decision="approve")
        try:
            return self._decide(pending)
        except StdinNotImplementedError:
            raise ApprovalUnavailable(
                f"{pending['name']} needs your approval, but this frontend cannot answer input(). It did not run. "
                "Use `%agent --yes ...` to approve the agent's calls, or the Cellwright panel."
            ) from None
        except EOFError:
            raise ApprovalUnavailable(f"No answer came (end of input): {pending['name']} did not run.") from None

    def _decide(self, pending: dict[str, Any]) -> Decision:
        field = EDITABLE_ARG.get(pending["name"])
        question = "Approve? [y]es / [e]dit / [n]o: " if field else "Approve? [y]es / [n]o: "
        while True:
            answer = input(question).strip().lower()
            if answer in ("y", "yes"):
                return Decision(decision="approve")
            if answer in ("n", "no"):
                reason = input("Reason, for the agent (optional): ").strip()
                return Decision(decision="reject", reason=reason[:20_000])
            if field and answer in ("e", "edit"):
                print(f"Type the new {field} line by line; a line with only a dot (.) ends it.", flush=True)
                lines = []
                while (line := input()) != ".":
                    lines.append(line)
                args = {**pending["args"], field: "\n".join(lines)}
                problem = TOOLS[pending["name"]].check_args(args)
                if problem is None:
                    return Decision(decision="edit", args=args)
                self.printer.line(f"Not usable: {problem}.")


class Printer:
    """Shows a run's events in the `%agent` cell (main thread only): tokens inline, a line per tool
    call, todos as a checklist, the final answer as text.

    Whatever it prints goes through `visible` (our own colours are added afterwards): the model
    writes nearly all of it, and JupyterLab honours `\\r`, backspaces and ANSI escapes in a stream."""

    def __init__(self) -> None:
        self._open_line = False  # tokens printed without a newline yet
        self._streamed = ""  # the text streamed since the last other event

    def show(self, event: dict[str, Any]) -> None:
        kind = event["type"]
        if kind == "token":
            sys.stdout.write(visible(event["text"]))
            sys.stdout.flush()
            self._streamed += event["text"]
            self._open_line = not event["text"].endswith("\n")
            return
        if kind == "usage":  # bookkeeping between a streamed answer and its `final`: nothing to print
            return
        streamed, self._streamed = self._streamed, ""
        if (
            kind == "tool_call"
            and event["name"] not in ("final_answer", "write_todos")
            and not event.get("needs_approval")
        ):
            self.line(f"→ {_call_line(event['name'], event.get('args') or {})}")
        elif kind == "tool_result" and event["name"] not in ("final_answer", "write_todos"):
            if event["status"] != "ok":
                if event["name"] != "run_cell" or event["status"] == "rejected":  # a cell's traceback is shown already
                    self.line(f"✗ {event['name']}: {event['summary']}")
            elif event["name"] != "run_cell":
                self.note(f"  {_shortened(event['summary'])}")
        elif kind == "todos":
            marks = {"completed": "[x]", "in_progress": "[~]"}
            todos = [f"  {marks.get(t.get('status'), '[ ]')} {_one_line(t.get('content', ''))}" for t in event["todos"]]
            self.line("\n".join(["Todo:", *todos]))
        elif kind == "agent_switch":
            self.line(f"⇄ {_one_line(event['to'])}: {_shortened(event.get('task', ''))}")
        elif kind == "final":
            self.final(
                event["answer"],
                event.get("next_items") or [],
                already_shown=streamed.strip() == event["answer"].strip(),
            )
        elif kind == "error":
            if event.get("kind") == "llm_retrying":
                self.note(event["message"])
            else:
                self.error(event["message"])

    def final(self, answer: str, next_items: list[dict[str, Any]], already_shown: bool) -> None:
        self.end_line()
        if answer and not already_shown:  # an answer streamed as tokens is on screen once already
            # Plain text only: this cell is trusted, so Markdown or HTML from the model would run its
            # <img onerror=...> in the Jupyter page and fetch its ![](https://...) images unasked.
            display({"text/plain": visible(answer)}, raw=True)
        if next_items:
            items = [
                f"  • {_one_line(i.get('title', ''))}: %agent {_one_line(i.get('prompt', ''))}" for i in next_items
            ]
            self.line("\n".join(["Next:", *items]))

    def approval(self, pending: dict[str, Any]) -> None:
        """Everything that decides what would run, each character visible: the main argument (or
        the file diff) as a block, then every other argument, then the diagnostics."""
        name = str(pending.get("name", ""))
        args = pending.get("args") or {}
        if not isinstance(args, dict):
            args = {"args": args}
        # The step's id: what `%agent --rewind <tool call id>` takes, shown where the step is decided.
        step = _one_line(pending.get("id", ""))
        self.line(f"── {name} needs approval (step {step}): {_one_line(pending.get('description', ''))}")
        main = MAIN_ARG.get(name)
        shown = {main, "path", *NOT_RUN_ARGS.get(name, ())}
        if "path" in args:
            self.line(_argument("path", args["path"]))
        diff = pending.get("diff")
        if name in ("write_file", "edit_file") and isinstance(diff, str) and diff.strip():
            self.line(_block(diff))  # the content or the edits, as they change the file
        elif main is not None and main in args:
            value = args[main]
            self.line(_block(value, python=name == "run_cell") if isinstance(value, str) else _edits_block(value))
        for key in sorted(k for k in args if k not in shown):
            self.line(_argument(key, args[key]))
        if name == "execute_command":
            if "cwd" not in args:
                self.line("cwd: . (the workspace root)")
            if "timeout" not in args:
                self.line("timeout: the default from the settings")
        self.line("──")
        for d in pending.get("diagnostics") or []:
            self.note(f"line {d.get('line')}: {d.get('severity')} {d.get('code')} {_one_line(d.get('message', ''))}")

    def line(self, text: str, style: str = "") -> None:
        self.end_line()
        print(f"{style}{visible(text)}{RESET}" if style else visible(text), flush=True)

    def note(self, text: str) -> None:
        self.line(text, DIM)

    def error(self, text: str) -> None:
        self.end_line()
        print(f"{RED}{visible(text)}{RESET}", file=sys.stderr, flush=True)

    def end_line(self) -> None:
        if self._open_line:
            print(flush=True)
            self._open_line = False


BAR = "│ "  # before each line of a block, so that no line of it can pass for the prompt's own lines


def _block(text: str, python: bool = False) -> str:
    if python:  # Python ends a line at a lone \r too: show the lines it will run, each \r still marked
        text = re.sub(r"\r(?!\n)", "\r\n", str(text))
    lines = str(text).split("\n")
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()  # the usual final newline; one that matters shows as an empty block line
    return "\n".join(BAR + visible(line, keep="\t") for line in lines)


def _edits_block(edits: object) -> str:
    if not isinstance(edits, list):
        return _block(json.dumps(edits, ensure_ascii=False, indent=1))
    parts = []
    for number, edit in enumerate(edits, 1):
        if isinstance(edit, dict) and set(edit) <= {"old", "new"}:
            parts += [f"edit {number}, replace:", _block(edit.get("old", "")), "with:", _block(edit.get("new", ""))]
        else:
            parts += [f"edit {number}:", _block(json.dumps(edit, ensure_ascii=False))]
    return "\n".join(parts)


def _argument(key: str, value: object) -> str:
    """One argument as `key: value`, in JSON so that quotes, spaces and newlines show exactly; a long
    text of several lines (stdin) as a block under its name."""
    label = _one_line(key)
    if isinstance(value, str) and "\n" in value.rstrip("\n") and len(value) > 200:
        return f"{label} ({len(value.splitlines())} lines):\n{_block(value)}"
    return f"{label}: {json.dumps(value, ensure_ascii=False)}"


def _one_line(text: object) -> str:
    """Model text for a place that must stay one line: its newlines show as markers too."""
    return visible(str(text), keep="")


def _call_line(name: str, args: dict[str, Any]) -> str:
    if args.get("description"):
        return f"{name}: {_one_line(args['description'])}"
    return f"{name} {_shortened(json.dumps(args, ensure_ascii=False))}"


def _shortened(text: str, limit: int = 160) -> str:
    line = " ".join(str(text).split())
    line = line if len(line) <= limit else line[: limit - 3] + "..."
    return visible(line, keep="")
