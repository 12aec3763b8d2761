/**
 * Writes what the agent did into the open notebook, so the notebook shows
 * what the agent saw: `cell_started` inserts a code cell at the end (with
 * the nbformat id the server gave it, replacing the notebook's only cell
 * when that one is empty), `cell_output` appends outputs to it,
 * `cell_finished` sets its execution count; an `add_markdown` tool call
 * inserts a markdown cell. An `edit_cell` (`cell_started` with `edit`)
 * replaces the source of the cell with that id in place, clears its
 * outputs, and the outputs that follow go into that same cell.
 *
 * The server already ran the code in the kernel: nothing is executed here.
 * Only live events reach `handle` (see ThreadModel: a replayed backlog never
 * does); what a notebook missed while nobody had it open is added by
 * `reconcile` (notebookReconcile.ts) when the notebook is bound. Both write
 * the same shape (`AgentCell`, model/agentCells.ts). Each inserted cell
 * carries `metadata.cellwright.tool_call_id`, which is how its outputs find
 * it again and how a second insertion of the same tool call is avoided; the
 * notebook's own metadata lists every tool call placed in it, so a cell the
 * user deleted is never inserted again.
 *
 * With `sharedDocument` (jupyter-collaboration: the server writes the cells
 * into the shared document) the bridge writes nothing.
 *
 * A cell that outgrows the server's stored cap keeps everything here: the
 * outputs beyond the cap come live only, and the overflow summary stored at
 * the end is skipped for a cell that got them (appended otherwise, e.g.
 * after a reload). The model's Markdown is inserted inert: remote images
 * become links (inertMarkdown.ts), since the notebook renders it itself.
 */
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import type { PartialJSONObject } from '@lumino/coreutils';

import { AgentCell } from './contract.gen';
import { inertMarkdownSource } from './inertMarkdown';
import { ILiveEvent } from './model';
import {
  agentCellMetadata,
  agentCellOfMarkdown,
  agentCellOfStarted,
  METADATA_KEY,
  placedIds,
  withPlaced
} from './model/agentCells';
import { ICellProvenance } from './model/review';

/** A new notebook: one code cell, empty. */
function isBlankNotebook(cells: readonly ICellLike[]): boolean {
  return (
    cells.length === 1 &&
    cells[0].type === 'code' &&
    !cells[0].sharedModel.getSource().trim() &&
    !((cells[0] as unknown as ICodeCellLike).outputs as unknown as { length: number }).length
  );
}

/** The parts of a cell model the bridge uses. */
interface ICellLike {
  readonly id: string;
  readonly type: string;
  getMetadata(key: string): any;
  setMetadata(key: string, value: any): void;
  readonly sharedModel: { getSource(): string; setSource(source: string): void };
}

interface ICodeCellLike extends ICellLike {
  outputs: { add(output: any): number; clear(): void };
  executionCount: number | null;
  executionState?: 'idle' | 'running';
}

export class NotebookBridge {
  constructor(private _tracker: INotebookTracker) {}

  /**
   * The server writes agent cells into the shared document itself
   * (`GET health` says `shared_document`): the bridge then never inserts,
   * edits or removes a cell.
   */
  sharedDocument = false;

  /** Handle one live event of a thread. Never throws. */
  handle({ thread, event }: ILiveEvent): void {
    if (this.sharedDocument) {
      return;
    }
    try {
      switch (event.type) {
        case 'cell_started': {
          // Sent twice when the cell waits for the kernel: the second only updates it.
          const panel = this._find(event.notebook_path ?? thread.notebookPath);
          const cellId = typeof event.cell_id === 'string' && event.cell_id ? event.cell_id : null;
          if (panel && !this._findCell(panel, event.id) && !this.placed(panel).includes(event.id)) {
            if (event.edit && cellId) {
              this.edit(panel, agentCellOfStarted(event));
            } else {
              this.insert(panel, [agentCellOfStarted(event)]);
            }
          }
          const cell = panel ? (this._findCell(panel, event.id) as ICodeCellLike | null) : null;
          if (cell && cell.type === 'code') {
            cell.executionState = 'running'; // "[*]": queued or running, as JupyterLab shows it
          }
          break;
        }
        case 'cell_output': {
          if (event.live_only) {
            this._liveOnly.add(event.id);
          } else if (event.overflow_summary && this._liveOnly.has(event.id)) {
            break; // this cell already has every output the summary stands for
          } else if (typeof event.seq === 'number' && event.seq <= (this._through.get(event.id) ?? -1)) {
            break; // a reconcile inserted the cell with the stored outputs up to that seq
          }
          const cell = this._codeCell(event.id, thread.notebookPath);
          cell?.outputs.add(event.output);
          break;
        }
        case 'cell_finished': {
          const cell = this._codeCell(event.id, thread.notebookPath);
          if (cell) {
            cell.executionCount = event.execution_count ?? null;
            cell.executionState = 'idle';
          }
          break;
        }
        case 'step_undone': {
          this._undo(event.id, thread.notebookPath);
          break;
        }
        case 'rewound': {
          // The agent's cells of the steps gone back over ("revert notebook edits"), as an undo removes one.
          event.cells_removed.forEach(id => this._undo(id, thread.notebookPath));
          break;
        }
        case 'tool_call': {
          const cell = event.name === 'add_markdown' ? agentCellOfMarkdown(event) : null;
          const panel = cell ? this._find(thread.notebookPath) : null;
          if (cell && panel && !this._findCell(panel, event.id) && !this.placed(panel).includes(event.id)) {
            this.insert(panel, [cell]);
          }
          break;
        }
        default:
          break;
      }
    } catch (error) {
      console.error('Cellwright: could not update the notebook', error);
    }
  }

  /** The open notebook whose path is `path`, if any. */
  private _find(path: string | null | undefined): NotebookPanel | null {
    if (!path) {
      return null;
    }
    return this._tracker.find(panel => panel.context.path === path) ?? null;
  }

  /** The notebook's cells, in order. */
  cells(panel: NotebookPanel): ICellLike[] {
    const model = panel.content.model;
    if (!model) {
      return [];
    }
    const cells: ICellLike[] = [];
    for (let i = 0; i < model.cells.length; i++) {
      cells.push(model.cells.get(i) as unknown as ICellLike);
    }
    return cells;
  }

  /** The tool call ids ever placed in this notebook (its metadata `cellwright.placed`). */
  placed(panel: NotebookPanel): string[] {
    return placedIds(panel.content.model?.getMetadata(METADATA_KEY));
  }

  private _findCell(panel: NotebookPanel, toolCallId: string): ICellLike | null {
    const cache = this._cache.get(toolCallId);
    if (cache && this.cells(panel).includes(cache)) {
      return cache;
    }
    for (const cell of this.cells(panel)) {
      const meta = cell.getMetadata(METADATA_KEY);
      if (meta && meta.tool_call_id === toolCallId) {
        this._cache.set(toolCallId, cell);
        return cell;
      }
    }
    return null;
  }

  /** The code cell of a tool call in any open notebook (the thread's first). */
  private _codeCell(toolCallId: string, preferredPath: string | null): ICodeCellLike | null {
    const panels: NotebookPanel[] = [];
    const preferred = this._find(preferredPath);
    if (preferred) {
      panels.push(preferred);
    }
    this._tracker.forEach(panel => {
      if (panel !== preferred) {
        panels.push(panel);
      }
    });
    for (const panel of panels) {
      const cell = this._findCell(panel, toolCallId);
      if (cell && cell.type === 'code') {
        return cell as ICodeCellLike;
      }
    }
    return null;
  }

  /**
   * Add agent cells at the end, in order, with the nbformat ids the server
   * gave them (when no cell has that id yet), their outputs and counts, and
   * note them as placed. A notebook whose only cell is an empty code cell (a
   * new notebook) gets them in its place. User cells are never touched.
   * `stored`: the cells come from the server's record (a reconcile), whose
   * outputs go up to each cell's `seq`.
   */
  insert(panel: NotebookPanel, cells: readonly AgentCell[], stored = false): void {
    const model = panel.content.model;
    if (!model || !cells.length) {
      return;
    }
    const ids = new Set(this.cells(panel).map(cell => cell.id));
    const json = cells.map(cell => {
      const id = cell.cell_id && !ids.has(cell.cell_id) ? cell.cell_id : null;
      if (id) {
        ids.add(id);
      }
      const metadata = { [METADATA_KEY]: agentCellMetadata(cell) as unknown as PartialJSONObject };
      const common = { metadata, ...(id ? { id } : {}) };
      if (cell.cell_type === 'markdown') {
        return { cell_type: 'markdown', source: inertMarkdownSource(cell.source), ...common };
      }
      if (stored) {
        this._through.set(cell.tool_call_id, cell.seq);
      }
      const outputs = (cell.outputs ?? []) as unknown as PartialJSONObject[];
      return { cell_type: 'code', source: cell.source, outputs, execution_count: cell.execution_count ?? null, ...common };
    });
    const shared = model.sharedModel;
    const blank = isBlankNotebook(this.cells(panel));
    shared.transact(() => {
      shared.insertCells(model.cells.length, json as any);
      if (blank) {
        shared.deleteCell(0);
      }
      this._markPlaced(panel, cells);
    });
    this._trim();
  }

  /** edit_cell: the cell with nbformat id `cell.cell_id` gets the new source and outputs, once. */
  edit(panel: NotebookPanel, cell: AgentCell, stored = false): void {
    const target = this._cellById(panel, cell.cell_id);
    if (!target) {
      console.warn(`Cellwright: edit_cell: no cell ${cell.cell_id} in ${panel.context.path}`);
      return;
    }
    const previous = target.sharedModel.getSource();
    target.sharedModel.setSource(cell.source);
    if (target.type === 'code') {
      const code = target as ICodeCellLike;
      code.outputs.clear();
      for (const output of cell.outputs ?? []) {
        code.outputs.add(output);
      }
      code.executionCount = cell.execution_count ?? null;
      if (stored) {
        this._through.set(cell.tool_call_id, cell.seq);
      }
    }
    const meta = target.getMetadata(METADATA_KEY);
    target.setMetadata(METADATA_KEY, {
      ...(meta && typeof meta === 'object' ? meta : {}),
      ...agentCellMetadata(cell, previous)
    });
    this._markPlaced(panel, [cell]);
    this._cache.set(cell.tool_call_id, target);
    this._trim();
  }

  /**
   * Cells this page wrote from an earlier reconcile (a reload mid-run) whose
   * stored outputs have grown since, while the stream was still replaying
   * (not live): their outputs and count as stored now.
   */
  refresh(panel: NotebookPanel, cells: readonly AgentCell[]): void {
    for (const cell of cells) {
      const through = this._through.get(cell.tool_call_id);
      const target = through !== undefined && through < cell.seq ? this._findCell(panel, cell.tool_call_id) : null;
      if (target && target.type === 'code' && !cell.edit) {
        const code = target as ICodeCellLike;
        code.outputs.clear();
        (cell.outputs ?? []).forEach(output => code.outputs.add(output));
        code.executionCount = cell.execution_count ?? null;
        this._through.set(cell.tool_call_id, cell.seq);
      }
    }
  }

  private _markPlaced(panel: NotebookPanel, cells: readonly AgentCell[]): void {
    const model = panel.content.model;
    const meta = model?.getMetadata(METADATA_KEY);
    const rest = meta && typeof meta === 'object' && !Array.isArray(meta) ? meta : {};
    const placed = withPlaced(placedIds(meta), cells.map(cell => cell.tool_call_id));
    model?.setMetadata(METADATA_KEY, { ...rest, placed });
  }

  /**
   * The user undid a step: its cell goes (run_cell), or an edited cell gets
   * its source from before the edit back (edit_cell). Once only: the cell's
   * metadata then says it was undone.
   */
  /** A step undone from this page (model/undo.ts): its cell, at once. */
  stepUndone(toolCallId: string, notebookPath: string | null): void {
    if (this.sharedDocument) {
      return;
    }
    try {
      this._undo(toolCallId, notebookPath);
    } catch (error) {
      console.error('Cellwright: could not undo the cell', error);
    }
  }

  private _undo(toolCallId: string, preferredPath: string | null): void {
    const panels: NotebookPanel[] = [];
    this._tracker.forEach(panel => void panels.push(panel));
    const preferred = this._find(preferredPath);
    for (const panel of preferred ? [preferred, ...panels.filter(p => p !== preferred)] : panels) {
      const cell = this._findCell(panel, toolCallId);
      const model = panel.content.model;
      if (!cell || !model) {
        continue;
      }
      const meta = cell.getMetadata(METADATA_KEY) as ICellProvenance | undefined;
      if (meta?.undone) {
        return; // already applied (from this page, then from the stream)
      }
      if (meta && typeof meta.previous_source === 'string') {
        cell.sharedModel.setSource(meta.previous_source);
        const { previous_source: _previous, ...rest } = meta;
        cell.setMetadata(METADATA_KEY, { ...rest, undone: true });
      } else {
        const index = this.cells(panel).indexOf(cell);
        if (index >= 0) {
          model.sharedModel.deleteCell(index);
        }
      }
      this._cache.delete(toolCallId);
      return;
    }
  }

  private _cellById(panel: NotebookPanel, cellId: string): ICellLike | null {
    return this.cells(panel).find(cell => cell.id === cellId) ?? null;
  }

  private _trim(): void {
    if (this._cache.size > 500) {
      this._cache.clear();
    }
    if (this._through.size > 500) {
      this._through.clear();
    }
    if (this._liveOnly.size > 500) {
      this._liveOnly.clear();
    }
  }

  private _cache = new Map<string, ICellLike>();
  /** Tool call -> the last seq of the outputs a reconcile (or edit) already wrote into its cell. */
  private _through = new Map<string, number>();
  /** Tool calls whose cell received live-only outputs on this page. */
  private _liveOnly = new Set<string>();
}
