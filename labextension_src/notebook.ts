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
 * Only live events reach this bridge (see ThreadModel: a replayed backlog
 * never does). Each inserted cell carries `metadata.cellwright.tool_call_id`,
 * which is how its outputs find it again and how a second insertion of the
 * same tool call is avoided (after a reconnect or a page reload mid-run).
 *
 * A cell that outgrows the server's stored cap keeps everything here: the
 * outputs beyond the cap come live only, and the overflow summary stored at
 * the end is skipped for a cell that got them (appended otherwise, e.g.
 * after a reload). The model's Markdown is inserted inert: remote images
 * become links (inertMarkdown.ts), since the notebook renders it itself.
 */
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import type { PartialJSONObject } from '@lumino/coreutils';

import { CellStartedEvent } from './contract.gen';
import { inertMarkdownSource } from './inertMarkdown';
import { ILiveEvent } from './model';
import { ICellProvenance, provenanceMetadata } from './model/review';

const METADATA_KEY = 'cellwright';

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

  /** Handle one live event of a thread. Never throws. */
  handle({ thread, event }: ILiveEvent): void {
    try {
      switch (event.type) {
        case 'cell_started': {
          // Sent twice when the cell waits for the kernel: the second only updates it.
          const panel = this._find(event.notebook_path ?? thread.notebookPath);
          const cellId = typeof event.cell_id === 'string' && event.cell_id ? event.cell_id : null;
          if (panel && !this._findCell(panel, event.id)) {
            if (event.edit && cellId) {
              this._edit(panel, cellId, event.code ?? '', event.id, event);
            } else {
              this._insert(panel, 'code', event.code ?? '', event.id, cellId, provenanceMetadata(event));
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
          if (event.name === 'add_markdown') {
            const panel = this._find(thread.notebookPath);
            const content = event.args?.content;
            if (panel && typeof content === 'string' && !this._findCell(panel, event.id)) {
              this._insert(panel, 'markdown', inertMarkdownSource(content), event.id);
            }
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

  private _cells(panel: NotebookPanel): ICellLike[] {
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

  private _findCell(panel: NotebookPanel, toolCallId: string): ICellLike | null {
    const cache = this._cache.get(toolCallId);
    if (cache && this._cells(panel).includes(cache)) {
      return cache;
    }
    for (const cell of this._cells(panel)) {
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
   * Add the agent's cell at the end, with the nbformat id the server gave it
   * (when it did). A notebook whose only cell is an empty code cell (a new
   * notebook) gets the agent's cell in its place.
   */
  private _insert(
    panel: NotebookPanel,
    cellType: 'code' | 'markdown',
    source: string,
    toolCallId: string,
    cellId: string | null = null,
    provenance: ICellProvenance | null = null
  ): void {
    const model = panel.content.model;
    if (!model) {
      return;
    }
    const shared = model.sharedModel;
    const cell = {
      cell_type: cellType,
      source,
      metadata: { [METADATA_KEY]: (provenance ?? { tool_call_id: toolCallId }) as unknown as PartialJSONObject },
      ...(cellId && !this._cellById(panel, cellId) ? { id: cellId } : {})
    };
    if (isBlankNotebook(this._cells(panel))) {
      shared.transact(() => {
        shared.insertCell(1, cell);
        shared.deleteCell(0);
      });
    } else {
      shared.insertCell(model.cells.length, cell);
    }
    this._trim();
  }

  /** edit_cell: the cell with nbformat id `cellId` gets the new source and loses its outputs. */
  private _edit(
    panel: NotebookPanel,
    cellId: string,
    source: string,
    toolCallId: string,
    event: CellStartedEvent
  ): void {
    const cell = this._cellById(panel, cellId);
    if (!cell) {
      console.warn(`Cellwright: edit_cell: no cell ${cellId} in ${panel.context.path}`);
      return;
    }
    const previous = cell.sharedModel.getSource();
    cell.sharedModel.setSource(source);
    if (cell.type === 'code') {
      const code = cell as ICodeCellLike;
      code.outputs.clear();
      code.executionCount = null;
    }
    const meta = cell.getMetadata(METADATA_KEY);
    cell.setMetadata(METADATA_KEY, {
      ...(meta && typeof meta === 'object' ? meta : {}),
      ...provenanceMetadata(event, previous),
      tool_call_id: toolCallId
    });
    this._cache.set(toolCallId, cell);
    this._trim();
  }

  /**
   * The user undid a step: its cell goes (run_cell), or an edited cell gets
   * its source from before the edit back (edit_cell). Once only: the cell's
   * metadata then says it was undone.
   */
  /** A step undone from this page (model/undo.ts): its cell, at once. */
  stepUndone(toolCallId: string, notebookPath: string | null): void {
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
        const index = this._cells(panel).indexOf(cell);
        if (index >= 0) {
          model.sharedModel.deleteCell(index);
        }
      }
      this._cache.delete(toolCallId);
      return;
    }
  }

  private _cellById(panel: NotebookPanel, cellId: string): ICellLike | null {
    return this._cells(panel).find(cell => cell.id === cellId) ?? null;
  }

  private _trim(): void {
    if (this._cache.size > 500) {
      this._cache.clear();
    }
    if (this._liveOnly.size > 500) {
      this._liveOnly.clear();
    }
  }

  private _cache = new Map<string, ICellLike>();
  /** Tool calls whose cell received live-only outputs on this page. */
  private _liveOnly = new Set<string>();
}
