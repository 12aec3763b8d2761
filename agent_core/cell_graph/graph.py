"""The notebook's dependency graph and its stale cells, from the cells' sources and execution
counts (plus, where the kernel can tell, the source each count ran and the names it holds).

The cells are replayed in the order they ran (their last execution counts): which cell last wrote
each name when a cell ran is what that cell read. A cell that ran is stale when a name it read was
written again after it ran, when its source changed since, or when a cell it read from is stale;
it shows hidden state when it reads a name that no cell wrote before it but the kernel has (its
cell was deleted or changed). A function's body counts where the function is called: the cell that
calls `f()` reads what `f` reads. Pure logic; each build re-analyses only sources it has not seen
(agent_core.cell_graph.names caches them), so a rebuild after one edit is the incremental update."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from agent_core.cell_graph.names import CellNames, cell_names

MAX_CELLS = 5000  # cells past this are not in the graph (a notebook that long is read in parts)
NAME_CHARS = 60  # a name shown in a reason, cut (a hostile notebook's names are model input)
LISTED = 8  # names or cells listed in one sentence

StaleKind = Literal["redefined", "source_changed", "dependency", "hidden_state"]


@dataclass(frozen=True)
class CellRecord:
    """One code cell as the notebook has it. `index` is its position among all the notebook's cells
    (0-based, as read_notebook shows it); `ran_source` the source its execution count ran, when the
    kernel's history tells (None: not known, taken to be `source`)."""

    index: int
    cell_id: str
    source: str
    execution_count: int | None = None
    ran_source: str | None = None


@dataclass(frozen=True)
class StaleReason:
    kind: StaleKind
    text: str  # "reads df, redefined by cell 3 at [12]"
    name: str | None = None
    cell_index: int | None = None  # the cell that caused it (the writer, or the stale dependency)
    cell_id: str | None = None
    execution_count: int | None = None


@dataclass(frozen=True)
class CellNode:
    index: int
    cell_id: str
    execution_count: int | None
    reads: tuple[str, ...]  # what it read when it ran, through the functions it called too
    writes: tuple[str, ...]
    stale: tuple[StaleReason, ...] = ()

    @property
    def is_stale(self) -> bool:
        return any(reason.kind != "hidden_state" for reason in self.stale)

    @property
    def hidden_state(self) -> bool:
        return any(reason.kind == "hidden_state" for reason in self.stale)

    def reason_text(self) -> str:
        return "; ".join(reason.text for reason in self.stale)


class _Write(NamedTuple):  # a NamedTuple: made once per name a cell writes, 500 cells in < 20 ms
    ran_at: int  # its execution count
    position: int  # its notebook index
    cell_id: str
    kind: Literal["write", "mutate", "delete"]


def shown_name(name: str) -> str:
    """A name as a reason or an answer shows it: cut at NAME_CHARS (a hostile notebook's names)."""
    return name if len(name) <= NAME_CHARS else name[: NAME_CHARS - 1] + "…"


def listing(items: Sequence[str]) -> str:
    """`a, b, c` (and how many more past LISTED)."""
    shown = ", ".join(items[:LISTED])
    return shown + (f" and {len(items) - LISTED} more" if len(items) > LISTED else "")


@dataclass
class _Replay:
    """The state of the kernel's names while the cells are replayed in run order."""

    last: dict[str, _Write] = field(default_factory=dict)
    functions: dict[str, CellNames] = field(default_factory=dict)  # name -> the cell that defined it
    unknown_binders: list[_Write] = field(default_factory=list)
    final: dict[str, _Write] = field(default_factory=dict)  # the last write of each name, a delete too
    final_value: dict[str, _Write] = field(default_factory=dict)  # ... not counting deletes

    def effects(self, names: CellNames) -> tuple[set[str], set[str]]:
        """The names a cell reads and writes, the bodies of the functions it calls included."""
        reads, writes = set(names.reads), set(names.writes)
        pending, seen = list(names.reads), set()
        while pending:
            name = pending.pop()
            if name in seen:
                continue
            seen.add(name)
            definer = self.functions.get(name)
            deferred = definer.deferred.get(name) if definer is not None else None
            if deferred is not None:
                reads |= deferred.reads
                writes |= deferred.writes
                pending.extend(deferred.reads)
        return reads, writes

    def record(self, write: _Write, names: Iterable[str], definer: CellNames | None) -> None:
        for name in names:
            self.last[name] = write
            self.final[name] = write
            if write.kind != "delete":
                self.final_value[name] = write
            if definer is not None and name in definer.deferred:
                self.functions[name] = definer
            elif write.kind != "mutate":
                self.functions.pop(name, None)


class NotebookGraph:
    """The graph of one notebook's code cells. Build a new one after any change: the analysis of
    unchanged sources is reused."""

    def __init__(self, cells: Sequence[CellRecord], kernel_names: frozenset[str] | None = None) -> None:
        self.cells = list(cells[:MAX_CELLS])
        self.kernel_names = kernel_names
        self.nodes = self._build()
        self._by_id = {node.cell_id: node for node in self.nodes}

    def node(self, cell_id: str) -> CellNode | None:
        return self._by_id.get(cell_id)

    def stale(self) -> list[CellNode]:
        """The cells that are stale or show hidden state, in notebook order."""
        return [node for node in self.nodes if node.stale]

    def rerun_order(self) -> list[CellNode]:
        """The stale cells (hidden state alone is not fixed by a re-run) in the order that brings
        them up to date: the order they ran in, which is the order they read from each other."""
        chain = [node for node in self.nodes if node.is_stale]
        return sorted(chain, key=lambda node: (node.execution_count or 0, node.index))

    def after_change(self, cell_id: str | None, source: str, index: int) -> ChangeEffect:
        """What running `source` (in cell `cell_id`, or a new cell at `index`) would make stale."""
        top = max((c.execution_count or 0 for c in self.cells), default=0) + 1
        cells = [c for c in self.cells if c.cell_id != cell_id]
        new_id = cell_id or "(new cell)"
        cells.append(CellRecord(index=index, cell_id=new_id, source=source, execution_count=top, ran_source=source))
        cells.sort(key=lambda c: c.index)
        after = NotebookGraph(cells, self.kernel_names)
        before = {node.cell_id for node in self.nodes if node.is_stale}
        newly = [
            node for node in after.nodes if node.is_stale and node.cell_id not in before and node.cell_id != new_id
        ]
        names = cell_names(source)
        readers = {
            name: [node.index for node in newly if name in node.reads]
            for name in sorted(names.writes | names.deletes | set(names.deferred))
        }
        return ChangeEffect(writes=tuple(sorted(names.writes)), newly_stale=tuple(newly), readers=readers)

    # -- the replay ---------------------------------------------------------------------------
    def _build(self) -> list[CellNode]:
        ran = sorted(
            (c for c in self.cells if c.execution_count is not None), key=lambda c: (c.execution_count, c.index)
        )
        replay = _Replay()
        seen: dict[str, dict[str, _Write | None]] = {}
        effects: dict[str, tuple[set[str], set[str]]] = {}
        unknown_before: dict[str, bool] = {}
        for cell in ran:
            names = cell_names(cell.ran_source if cell.ran_source is not None else cell.source)
            reads, writes = replay.effects(names)
            seen[cell.cell_id] = {name: replay.last.get(name) for name in reads}
            unknown_before[cell.cell_id] = bool(replay.unknown_binders)
            effects[cell.cell_id] = (reads, writes)
            at = (cell.execution_count or 0, cell.index, cell.cell_id)
            write = _Write(*at, "write")
            replay.record(write, writes - names.mutates if names.mutates else writes, names)
            if names.mutates:
                replay.record(_Write(*at, "mutate"), writes & names.mutates, None)
            if names.deletes:
                replay.record(_Write(*at, "delete"), names.deletes, None)
            if names.binds_unknown:
                replay.unknown_binders.append(write)
        own: dict[str, list[StaleReason]] = {}
        for cell in ran:
            own[cell.cell_id] = self._own_reasons(cell, seen[cell.cell_id], replay, unknown_before[cell.cell_id])
        self._propagate(ran, seen, own)
        nodes = []
        for cell in self.cells:
            reads, writes = effects.get(cell.cell_id, (set(), set()))
            if cell.execution_count is None:
                names = cell_names(cell.source)
                reads, writes = set(names.reads), set(names.writes)
            nodes.append(
                CellNode(
                    index=cell.index,
                    cell_id=cell.cell_id,
                    execution_count=cell.execution_count,
                    reads=tuple(sorted(reads)),
                    writes=tuple(sorted(writes)),
                    stale=tuple(own.get(cell.cell_id, ())),
                )
            )
        return nodes

    def _own_reasons(
        self, cell: CellRecord, seen: Mapping[str, _Write | None], replay: _Replay, unknown_before: bool
    ) -> list[StaleReason]:
        count = cell.execution_count or 0
        reasons: list[StaleReason] = []
        if cell.ran_source is not None and cell.ran_source != cell.source:
            reasons.append(StaleReason("source_changed", f"its source changed since it ran at [{count}]"))
        for name in sorted(seen):
            # Counts only grow along the replay, and a cell has one: a write with a higher count is
            # another cell's, after this one ran. The last one is the one to name.
            last = replay.final_value.get(name)
            if last is not None and last.ran_at > count:
                how = "changed in place" if last.kind == "mutate" else "redefined"
                reasons.append(
                    StaleReason(
                        "redefined",
                        f"reads {shown_name(name)}, {how} by cell {last.position} at [{last.ran_at}]",
                        name,
                        last.position,
                        last.cell_id,
                        last.ran_at,
                    )
                )
            elif seen[name] is None and not unknown_before and self._kernel_has(name) and name not in replay.final:
                reasons.append(
                    StaleReason(
                        "hidden_state",
                        f"reads {shown_name(name)}, which no cell defines: the kernel has it from a deleted or changed cell",
                        name,
                    )
                )
        return reasons

    def _kernel_has(self, name: str) -> bool:
        return self.kernel_names is None or name in self.kernel_names

    @staticmethod
    def _propagate(
        ran: list[CellRecord], seen: dict[str, dict[str, _Write | None]], own: dict[str, list[StaleReason]]
    ) -> None:
        """A cell that read a name from a stale cell is stale too; in run order, so a chain carries."""
        stale = {cid for cid, reasons in own.items() if any(r.kind != "hidden_state" for r in reasons)}
        for cell in ran:
            if cell.cell_id in stale:
                continue
            for name, writer in sorted(seen[cell.cell_id].items()):
                if writer is not None and writer.cell_id in stale and writer.cell_id != cell.cell_id:
                    own[cell.cell_id].append(
                        StaleReason(
                            "dependency",
                            f"reads {shown_name(name)} from cell {writer.position}, which is stale",
                            name,
                            writer.position,
                            writer.cell_id,
                            writer.ran_at,
                        )
                    )
                    stale.add(cell.cell_id)
                    break


@dataclass(frozen=True)
class ChangeEffect:
    """What one proposed run would make stale: the approval card's line."""

    writes: tuple[str, ...]
    newly_stale: tuple[CellNode, ...]
    readers: dict[str, list[int]]  # name -> the cells it makes stale by reading it

    def text(self) -> str:
        """ "redefines df, read by cells 4, 7, 9" ('' when it makes nothing stale)."""
        parts = []
        for name, cells in self.readers.items():
            if cells:
                parts.append(
                    f"redefines {shown_name(name)}, read by cell{'s' if len(cells) > 1 else ''} {listing([str(c) for c in cells])}"
                )
        others = [n for n in self.newly_stale if not any(n.index in cells for cells in self.readers.values())]
        if others:
            parts.append(f"cells that depend on those: {listing([str(n.index) for n in others])}")
        return "; ".join(parts[:LISTED])
