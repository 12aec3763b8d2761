/**
 * The agent's cells as the notebook gets them, pure (no Lumino): one
 * shape (`AgentCell`, the answer of POST agent_cells) for the live bridge
 * and the reconcile on bind, and the plan that says which of a notebook's
 * missing agent cells to insert or edits to apply.
 *
 * A notebook remembers which agent cells were ever placed in it (notebook
 * metadata `cellwright.placed`: tool call ids, saved with the file, the same
 * for every browser that opens it). A placed cell the notebook no longer has
 * was deleted by the user, and stays deleted.
 */
import type { TranslationBundle } from '@jupyterlab/translation';

import { AgentCell, CellStartedEvent, ToolCallEvent } from '../contract.gen';
import { ICellProvenance, provenanceMetadata } from './review';

/** The key of Cellwright's metadata, in a cell (provenance) and in the notebook (what was placed). */
export const METADATA_KEY = 'cellwright';
/** How many placed ids a notebook keeps: the oldest go first (they are long settled). */
export const MAX_PLACED = 5000;

/** The cell of a live `cell_started` (run_cell, or edit_cell with `edit`). */
export function agentCellOfStarted(event: CellStartedEvent): AgentCell {
  return {
    seq: event.seq,
    thread_id: event.thread_id,
    run_id: event.run_id,
    tool_call_id: event.id,
    cell_type: 'code',
    cell_id: typeof event.cell_id === 'string' ? event.cell_id : '',
    edit: !!event.edit,
    source: event.code ?? '',
    outputs: [],
    execution_count: null,
    finished: false,
    provenance: event.provenance ?? null
  };
}

/** The cell of a live `add_markdown` tool call; null when its content is not text. */
export function agentCellOfMarkdown(event: ToolCallEvent): AgentCell | null {
  const content = event.args?.content;
  if (typeof content !== 'string') {
    return null;
  }
  return {
    seq: event.seq,
    thread_id: event.thread_id,
    run_id: event.run_id,
    tool_call_id: event.id,
    cell_type: 'markdown',
    cell_id: '',
    source: content,
    finished: true
  };
}

/** The `cellwright` metadata of an agent cell (the provenance the live bridge always wrote). */
export function agentCellMetadata(cell: AgentCell, previousSource: string | null = null): ICellProvenance {
  if (cell.cell_type === 'markdown') {
    return { thread_id: cell.thread_id, run_id: cell.run_id, tool_call_id: cell.tool_call_id };
  }
  return provenanceMetadata(
    { thread_id: cell.thread_id, run_id: cell.run_id, id: cell.tool_call_id, provenance: cell.provenance },
    previousSource
  );
}

/** The notebook's record of placed tool call ids, from its metadata (whatever a file holds). */
export function placedIds(notebookMeta: unknown): string[] {
  const placed = (notebookMeta as { placed?: unknown } | null | undefined)?.placed;
  return Array.isArray(placed) ? placed.filter((id): id is string => typeof id === 'string') : [];
}

/** The record with `ids` added (once each, in order, capped). */
export function withPlaced(placed: readonly string[], ids: readonly string[]): string[] {
  const all = [...placed];
  const seen = new Set(placed);
  for (const id of ids) {
    if (!seen.has(id)) {
      seen.add(id);
      all.push(id);
    }
  }
  return all.slice(-MAX_PLACED);
}

/** What a notebook holds, as the plan needs it. */
export interface INotebookState {
  /** Each cell's nbformat id and the tool call its `cellwright` metadata names (null: none). */
  cells: readonly { id: string; toolCallId: string | null }[];
  /** The tool call ids placed in it before (notebook metadata `cellwright.placed`). */
  placed: readonly string[];
}

export interface IReconcilePlan {
  /** New cells to add at the end, in this order. */
  insert: AgentCell[];
  /** Edits (edit_cell) to apply to cells the notebook has, after the inserts (which they may edit). */
  edit: AgentCell[];
}

/**
 * Which agent cells a notebook lacks: those neither present (by tool call
 * id, or by nbformat id) nor placed before (deleted by the user), nor undone.
 * An edit applies once, to a cell the notebook has or gets in this plan, unless
 * that cell already carries it. With `sharedDocument` the server writes cells itself: nothing.
 */
export function planReconcile(
  notebook: INotebookState,
  cells: readonly AgentCell[],
  sharedDocument: boolean
): IReconcilePlan {
  const plan: IReconcilePlan = { insert: [], edit: [] };
  if (sharedDocument) {
    return plan;
  }
  const placed = new Set(notebook.placed);
  const byTool = new Set(notebook.cells.map(cell => cell.toolCallId).filter(id => id !== null));
  const byId = new Set(notebook.cells.map(cell => cell.id));
  // A cell edited twice ends with the later source: an earlier edit is never applied over it.
  const lastEdit = new Map<string, string>();
  for (const cell of cells) {
    if (cell.edit && !cell.undone) {
      lastEdit.set(cell.cell_id, cell.tool_call_id);
    }
  }
  for (const cell of cells) {
    if (cell.undone || placed.has(cell.tool_call_id) || byTool.has(cell.tool_call_id)) {
      continue;
    }
    if (cell.edit) {
      if (byId.has(cell.cell_id) && lastEdit.get(cell.cell_id) === cell.tool_call_id) {
        plan.edit.push(cell);
      }
    } else if (!cell.cell_id || !byId.has(cell.cell_id)) {
      plan.insert.push(cell);
      byTool.add(cell.tool_call_id);
      if (cell.cell_id) {
        // The agent may have fixed its own cell before any browser placed it (edit_cell with no tab
        // open): that edit applies to the cell inserted here, which then shows once, in its final form.
        byId.add(cell.cell_id);
      }
    }
  }
  return plan;
}

/** The line that says what a reconcile added (non-modal), or null when it added nothing. */
export function reconcileMessage(trans: TranslationBundle, inserted: number, edited: number): string | null {
  const parts: string[] = [];
  if (inserted) {
    parts.push(
      trans._n(
        '%1 cell the agent ran while this notebook was closed was added',
        '%1 cells the agent ran while this notebook was closed were added',
        inserted
      )
    );
  }
  if (edited) {
    parts.push(trans._n('%1 cell the agent edited was updated', '%1 cells the agent edited were updated', edited));
  }
  return parts.length ? trans.__('Cellwright: %1.', parts.join('; ')) : null;
}
