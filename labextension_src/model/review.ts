/**
 * Review and undo, as pure helpers (no Lumino, no I/O): the approval
 * card's impact chips, the rule a rejection suggests, the provenance the
 * notebook keeps in a cell's metadata (`cellwright`), and which steps of a
 * thread are still undoable.
 */
import type { TranslationBundle } from '@jupyterlab/translation';

import { CellStartedEvent, Impact, ImpactItem, MakesStale } from '../contract.gen';
import { ConversationItem, IToolItem, IUndoState } from './view';

type ImpactKind = Extract<
  keyof Impact,
  'assigns' | 'mutates' | 'deletes' | 'reads' | 'files_written' | 'network' | 'installs' | 'shell' | 'unknown'
>;

/** The finding kinds of `impact`, in the card's order. */
export const IMPACT_KINDS: readonly ImpactKind[] = [
  'assigns',
  'mutates',
  'deletes',
  'reads',
  'files_written',
  'network',
  'installs',
  'shell',
  'unknown'
];

/** A finding kind as the card's chip says it. */
export function impactLabel(trans: TranslationBundle, kind: ImpactKind): string {
  switch (kind) {
    case 'assigns':
      return trans.__('assigns');
    case 'mutates':
      return trans.__('changes in place');
    case 'deletes':
      return trans.__('deletes');
    case 'reads':
      return trans.__('reads');
    case 'files_written':
      return trans.__('writes file');
    case 'network':
      return trans.__('network');
    case 'installs':
      return trans.__('installs');
    case 'shell':
      return trans.__('shell');
    case 'unknown':
      return trans.__('unknown');
  }
}

export interface IChip {
  kind: string;
  label: string;
  name: string;
  line: number;
}

/** One chip per finding, each with the line it comes from. */
export function impactChips(trans: TranslationBundle, impact: Impact | null | undefined): IChip[] {
  if (!impact) {
    return [];
  }
  const chips: IChip[] = [];
  for (const kind of IMPACT_KINDS) {
    const label = impactLabel(trans, kind);
    const items = (impact as unknown as Record<string, ImpactItem[] | undefined>)[kind];
    for (const item of Array.isArray(items) ? items : []) {
      chips.push({ kind, label, name: String(item.name), line: Number(item.line) });
    }
  }
  return chips;
}

/**
 * The rule a rejection suggests (editable before it is saved): what the
 * user wrote, else what the server derived from the rejected code.
 */
export function suggestedRule(impact: Impact | null | undefined, reason: string): string {
  return reason.trim() || impact?.suggested_rule || '';
}

/** The cell metadata `cellwright` of an agent-written cell. */
export interface ICellProvenance {
  thread_id: string;
  run_id: string;
  tool_call_id: string;
  model?: string;
  agent?: string;
  decision?: string;
  edited_from?: string;
  undoable?: boolean;
  /** edit_cell: the cell's source before the agent's edit (what Undo restores). */
  previous_source?: string;
  undone?: boolean;
}

/** What the notebook keeps of a `cell_started`: the event's stamps and its provenance. */
export function provenanceMetadata(
  event: Pick<CellStartedEvent, 'thread_id' | 'run_id' | 'id' | 'provenance'>,
  previousSource: string | null = null
): ICellProvenance {
  const p = event.provenance;
  const meta: ICellProvenance = { thread_id: event.thread_id, run_id: event.run_id, tool_call_id: event.id };
  if (p) {
    meta.model = p.model;
    meta.agent = p.agent;
    meta.decision = p.decision;
    meta.undoable = p.undoable;
    if (typeof p.edited_from === 'string') {
      meta.edited_from = p.edited_from;
    }
  }
  if (previousSource !== null) {
    meta.previous_source = previousSource;
  }
  return meta;
}

/** Every tool step of a view, sub-agents' too, in order. */
export function allTools(items: readonly ConversationItem[]): IToolItem[] {
  const found: IToolItem[] = [];
  for (const item of items) {
    if (item.kind === 'tool') {
      found.push(item);
    } else if (item.kind === 'subtask') {
      found.push(...allTools(item.items));
    }
  }
  return found;
}

/** Whether Undo is offered for a step: it kept a snapshot and was not undone. */
export function canUndo(item: IToolItem): boolean {
  return !!item.undo && item.undo.undoable && !item.undo.undone;
}

/** The steps "Undo run" undoes for `item`'s run: the undoable ones, newest first. */
export function runStepsToUndo(items: readonly ConversationItem[], item: IToolItem): string[] {
  const runId = item.undo?.runId;
  if (!runId) {
    return canUndo(item) ? [item.id] : [];
  }
  return allTools(items)
    .filter(tool => tool.undo?.runId === runId && canUndo(tool))
    .map(tool => tool.id)
    .reverse();
}

/** A cell step's undo state as its `cell_started` says. */
export function undoStateOf(event: CellStartedEvent): IUndoState {
  const p = event.provenance;
  return {
    runId: event.run_id,
    undoable: !!p?.undoable,
    reason: p?.not_undoable_reason ?? null,
    undone: false
  };
}

/** A step's undo state once `step_undone` came for it. */
export function undoneState(item: IToolItem, runId: string): IUndoState {
  return { runId: item.undo?.runId ?? runId, undoable: false, reason: null, undone: true };
}

/** Whether a card offers "Approve and re-run dependents": a cell call that leaves cells stale. */
export function offersRerun(pending: { name: string; makes_stale?: MakesStale | null }): boolean {
  return (
    (pending.name === 'run_cell' || pending.name === 'edit_cell') &&
    Array.isArray(pending.makes_stale?.cells) &&
    (pending.makes_stale?.cells.length ?? 0) > 0
  );
}
