"""The records undo keeps in this process (agent_core/undo/steps.py): one per step, and the notes an
undo leaves for the thread's next run. Owned by the thread's driver (ThreadRunner.undo) and handed
to the tools through the run's RunContext; kept apart from steps.py so that the graph and the
driver name the book without loading the impact analysis and the kernel calls."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

STEPS_KEPT = 2000  # step records in this process (each is a few hundred bytes)
NOTES_KEPT = 20  # undo notes waiting for a thread's next run
REWINDS_KEPT = 100  # threads whose last rewind can put its files back when undone


@dataclass
class StepRecord:
    thread_id: str
    call_id: str
    token: str  # the kernel's snapshot must carry it: a cell cannot forge a snapshot for this step ("": none kept)
    kernel: str | None  # the kernel process it was taken in (a restart loses it)
    not_undone: list[str]
    cell_id: str | None = None
    edit: bool = False
    undone: bool = False
    refused: str | None = None  # no snapshot was kept: why (an undo says so, never that it restored anything)


@dataclass(frozen=True)
class FileBefore:
    """A file as a rewind found it (None: absent) and the digest of what the rewind left there."""

    path: str
    data: bytes | None
    left: str | None


@dataclass
class RewindRecord:
    """A thread's last rewind (agent_core/rewind/rewind.py), so undoing it can put its files back too."""

    branch: str  # the head the rewind made: the undo applies while it is still the head
    files: list[FileBefore]
    kernel_steps: list[str]  # the steps whose kernel variables it restored (they cannot be redone)


@dataclass
class UndoBook:
    """This process's step records and the notes for the next runs, both bounded."""

    steps: OrderedDict[tuple[str, str], StepRecord] = field(default_factory=OrderedDict)
    notes: dict[str, list[str]] = field(default_factory=dict)
    rewinds: dict[str, RewindRecord] = field(default_factory=dict)

    def keep(self, record: StepRecord) -> None:
        self.steps[(record.thread_id, record.call_id)] = record
        while len(self.steps) > STEPS_KEPT:
            self.steps.popitem(last=False)

    def knows(self, thread_id: str, call_id: str) -> bool:
        return (thread_id, call_id) in self.steps

    def note(self, thread_id: str, text: str) -> None:
        self.notes[thread_id] = [*self.notes.get(thread_id, []), text][-NOTES_KEPT:]

    def take_notes(self, thread_id: str) -> list[str]:
        return self.notes.pop(thread_id, [])

    def rewound(self, thread_id: str, record: RewindRecord) -> None:
        self.rewinds.pop(thread_id, None)
        self.rewinds[thread_id] = record
        while len(self.rewinds) > REWINDS_KEPT:
            del self.rewinds[next(iter(self.rewinds))]

    def forget_thread(self, thread_id: str) -> None:
        for key in [key for key in self.steps if key[0] == thread_id]:
            del self.steps[key]
        self.notes.pop(thread_id, None)
        self.rewinds.pop(thread_id, None)
