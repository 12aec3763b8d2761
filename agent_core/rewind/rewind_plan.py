"""What a rewind does to each later step, decided before anything changes (the card's preview and
the rewind itself read the same plan): its kernel variables restored from the undo snapshot
(agent_core.undo.steps), its notebook cell removed or kept, its file put back from the pre-image
(agent_core.undo.preimages) or kept, and what cannot go back, named per step. Each of these is read
from the step's ToolSpec (touches, cell, undone_by, rewind_leaves)."""

from __future__ import annotations

from dataclasses import dataclass, field

from agent_core.config.mcp_servers import is_mcp_tool_name
from agent_core.contract.rewind import RewindChoice, RewindStep
from agent_core.messages import PREIMAGE_KEY, Message, Preimage
from agent_core.tools import TOOLS
from agent_core.undo.book import UndoBook
from agent_core.undo.preimages import check

NO_SNAPSHOT = (
    "kernel variables: no snapshot of this step is known here (it was not undoable, it ran before the server "
    "restarted, or it was dropped to save memory)"
)
KERNEL_RESTARTED = (
    "kernel variables: the kernel restarted (or is not running) since this step ran, and its snapshot went with it"
)


@dataclass(frozen=True)
class LaterStep:
    """A tool call after the rewind's point, with what its tool message kept."""

    call_id: str
    name: str
    status: str | None  # the ledger's outcome status; None: unknown
    preimage: Preimage | None
    answered: bool = True  # it has a tool message (a call still pending approval has none)


@dataclass
class Planned:
    call_id: str
    name: str
    restores: list[str] = field(default_factory=list)
    cannot: list[str] = field(default_factory=list)
    undo_kernel: bool = False
    remove_cell: bool = False
    preimage: Preimage | None = None

    def card(self) -> RewindStep:
        return RewindStep(tool_call_id=self.call_id, name=self.name, restores=self.restores, cannot=self.cannot)


def later_steps(messages: list[Message], statuses: dict[str, str | None]) -> list[LaterStep]:
    """The tool calls of `messages`, newest first."""
    results = {m.get("tool_call_id"): m for m in messages if m.get("role") == "tool"}
    steps = []
    for message in messages:
        for call in message.get("tool_calls") or []:
            call_id = str(call.get("id"))
            result = results.get(call_id) or {}
            name = str((call.get("function") or {}).get("name", ""))[:200]  # the model's text: bounded
            steps.append(LaterStep(call_id, name, statuses.get(call_id), result.get(PREIMAGE_KEY), call_id in results))
    return steps[::-1]


@dataclass(frozen=True)
class Situation:
    """What the plan is decided against."""

    thread_id: str
    book: UndoBook
    kernel_now: str | None
    kernel_then: str | None  # the kernel the thread's last cell ran in (graph state), for steps the book lacks
    notebook: RewindChoice
    files: RewindChoice


def plan(steps: list[LaterStep], here: Situation) -> list[Planned]:
    return [_plan_step(step, here) for step in steps]


def _plan_step(step: LaterStep, here: Situation) -> Planned:
    planned = Planned(step.call_id, step.name)
    if step.status == "rejected" or not step.answered:  # rejected, stopped or pending: nothing of it happened
        return planned
    spec = TOOLS.get(step.name)
    if spec is None:  # a tool from outside (an MCP server's, a notebook's @tool) or one that is gone
        planned.cannot.append(
            "an MCP server's tool ran outside Cellwright: what it did stays"
            if is_mcp_tool_name(step.name)
            else f"{step.name} is not one Cellwright can undo: what it did (if anything) stays"
        )
        return planned
    if spec.undone_by == "kernel_snapshot":
        _kernel(planned, here)
    if spec.cell == "adds":
        if here.notebook == "revert":
            planned.restores.append("its notebook cell is removed")
            planned.remove_cell = True
        else:
            planned.restores.append("its notebook cell stays (notebook: keep)")
    elif spec.cell == "edits" and here.notebook == "revert":
        # The panel gives an edited cell its source back as the one-step undo does (notebook.ts).
        planned.restores.append("the cell it edited gets its source from before back")
        planned.remove_cell = True
    if spec.undone_by == "file_preimage":
        _file(planned, step, here)
    elif spec.rewind_leaves:
        planned.cannot.append(spec.rewind_leaves)
    return planned


def writes_files(name: str) -> bool:
    """Whether a call of tool `name` writes a file that a rewind puts back from its pre-image."""
    spec = TOOLS.get(name)
    return spec is not None and spec.undone_by == "file_preimage"


def _kernel(planned: Planned, here: Situation) -> None:
    record = here.book.steps.get((here.thread_id, planned.call_id))
    if record is None:
        restarted = here.kernel_then is not None and here.kernel_now != here.kernel_then
        planned.cannot.append(KERNEL_RESTARTED if restarted else NO_SNAPSHOT)
        return
    if record.refused is not None:
        planned.cannot.append(f"kernel variables: no snapshot was kept ({record.refused})")
    elif record.undone:
        planned.restores.append("kernel variables: already undone")
    elif record.kernel is not None and record.kernel != here.kernel_now:
        planned.cannot.append(KERNEL_RESTARTED)
    else:
        planned.restores.append("the kernel variables it changed or created, from its snapshot")
        planned.undo_kernel = True
    planned.cannot += [f"not undone by its snapshot: {line}" for line in record.not_undone]


def _file(planned: Planned, step: LaterStep, here: Situation) -> None:
    image = step.preimage
    if image is None:
        if step.status not in (None, "ok"):
            return  # the write failed: nothing was written
        planned.cannot.append(
            "its file: no copy from before the step was kept (it ran before Cellwright kept them, or its result was "
            "replayed after a crash)"
        )
        return
    path = str(image.get("path"))
    if here.files == "keep":
        planned.restores.append(f"{path} stays as the step left it (files: keep)")
        return
    problem = check(image)
    if problem:
        planned.cannot.append(problem)
        return
    planned.restores.append(f"{path} is put back as before the step" if image.get("existed") else f"{path} is deleted")
    planned.preimage = image
