"""Planning tools: the todo list and the final answer."""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field, model_validator

from agent_core.contract import TodoStatus, make_event
from agent_core.tools.arguments import ToolArgs, argument_error
from agent_core.tools.base import ToolContext, ToolOutcome, ToolSpec

MARKS = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}


class TodoItem(ToolArgs):
    # The schema asks for a status; a model that leaves it out gets "pending", not an error, and
    # keys a model likes to add to a todo ("id", "priority") are dropped, not refused.
    model_config = ConfigDict(extra="ignore", json_schema_extra={"required": ["content", "status"]})
    content: str
    status: TodoStatus = "pending"


class WriteTodosArgs(ToolArgs):
    todos: list[TodoItem]


class NextItemArg(ToolArgs):
    # The schema asks for both; a bare string, only one of the two, or more keys are forgiven (small
    # models do all three).
    model_config = ConfigDict(extra="ignore", json_schema_extra={"required": ["title", "prompt"]})
    title: str = Field(default="", description="A few words, shown on the suggestion.")
    prompt: str = Field(default="", description="The request sent when the user clicks it.")

    @model_validator(mode="before")
    @classmethod
    def _from_string(cls, value: object) -> Any:
        return {"title": value, "prompt": value} if isinstance(value, str) else value

    @model_validator(mode="after")
    def _both(self) -> NextItemArg:
        if not (self.title or self.prompt):
            raise argument_error('next_items must be a list of {"title": str, "prompt": str}')
        self.title, self.prompt = self.title or self.prompt, self.prompt or self.title
        return self


class FinalAnswerArgs(ToolArgs):
    answer: str = Field(description="The final answer, in Markdown.")
    next_items: list[NextItemArg] | None = Field(default=None, description="2-4 suggested next steps.")


async def write_todos(args: WriteTodosArgs, ctx: ToolContext) -> ToolOutcome:
    todos = [item.model_dump() for item in args.todos]
    ctx.emit(make_event("todos", todos=todos))
    listing = "\n".join(f"{MARKS[t['status']]} {t['content']}" for t in todos)
    return ToolOutcome("ok", f"Todo list updated:\n{listing}", state={"todos": todos})


async def final_answer(args: FinalAnswerArgs, ctx: ToolContext) -> ToolOutcome:
    items = [item.model_dump() for item in args.next_items or []]
    ctx.emit(make_event("final", answer=args.answer, next_items=items))
    return ToolOutcome("ok", "Answer delivered to the user.", ends_run=True)


WRITE_TODOS = ToolSpec(
    name="write_todos",
    description=(
        "Write the whole todo list for the user's request (replaces the previous list). Use it to plan "
        "multi-step work and keep statuses current: one item in_progress at a time."
    ),
    args=WriteTodosArgs,
    action=write_todos,
    touches="nothing",
)

FINAL_ANSWER = ToolSpec(
    name="final_answer",
    description=(
        "Finish: give the user the answer in Markdown and 2-4 suggested next steps they can click. "
        "Call it once the request is done (or cannot be done)."
    ),
    args=FinalAnswerArgs,
    action=final_answer,
    touches="nothing",
)
