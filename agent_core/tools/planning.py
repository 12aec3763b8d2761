"""Planning tools: the todo list and the final answer."""
from __future__ import annotations

from typing import Any

from ..events import make_event
from .base import ToolContext, ToolInputError, ToolOutcome, ToolSpec

TODO_STATUSES = ("pending", "in_progress", "completed")
MARKS = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}


def _todos(raw: list[Any]) -> list[dict[str, str]]:
    todos = []
    for item in raw:
        if not isinstance(item, dict) or not isinstance(item.get("content"), str):
            raise ToolInputError('each todo must be {"content": str, "status": "pending"|"in_progress"|"completed"}')
        status = item.get("status", "pending")
        if status not in TODO_STATUSES:
            raise ToolInputError(f"todo status must be one of {TODO_STATUSES}, not {status!r}")
        todos.append({"content": item["content"], "status": status})
    return todos


async def write_todos(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
    todos = _todos(args["todos"])
    ctx.emit(make_event("todos", todos=todos))
    listing = "\n".join(f"{MARKS[t['status']]} {t['content']}" for t in todos)
    return ToolOutcome("ok", f"Todo list updated:\n{listing}", state={"todos": todos})


def _next_items(raw: Any) -> list[dict[str, str]]:
    items = []
    for item in raw or []:
        if isinstance(item, str):
            item = {"title": item, "prompt": item}
        if not isinstance(item, dict) or not (item.get("title") or item.get("prompt")):
            raise ToolInputError('next_items must be a list of {"title": str, "prompt": str}')
        title = str(item.get("title") or item["prompt"])
        items.append({"title": title, "prompt": str(item.get("prompt") or title)})
    return items


async def final_answer(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
    items = _next_items(args.get("next_items"))
    ctx.emit(make_event("final", answer=args["answer"], next_items=items))
    return ToolOutcome("ok", "Answer delivered to the user.", ends_run=True)


WRITE_TODOS = ToolSpec(
    name="write_todos",
    description=(
        "Write the whole todo list for the user's request (replaces the previous list). Use it to plan "
        "multi-step work and keep statuses current: one item in_progress at a time."
    ),
    parameters={
        "type": "object",
        "properties": {
            "todos": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "content": {"type": "string"},
                        "status": {"type": "string", "enum": list(TODO_STATUSES)},
                    },
                    "required": ["content", "status"],
                },
            }
        },
        "required": ["todos"],
    },
    run=write_todos,
)

FINAL_ANSWER = ToolSpec(
    name="final_answer",
    description=(
        "Finish: give the user the answer in Markdown and 2-4 suggested next steps they can click. "
        "Call it once the request is done (or cannot be done)."
    ),
    parameters={
        "type": "object",
        "properties": {
            "answer": {"type": "string", "description": "The final answer, in Markdown."},
            "next_items": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"title": {"type": "string"}, "prompt": {"type": "string"}},
                    "required": ["title", "prompt"],
                },
            },
        },
        "required": ["answer"],
    },
    run=final_answer,
)
