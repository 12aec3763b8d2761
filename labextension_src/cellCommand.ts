/**
 * Which cell a cell command is about ("Ask Cellwright about this cell",
 * "Fix Cell Error with Cellwright"): the cell the context menu was opened
 * on (the right click may not have made it the active one), else the
 * active cell of the current notebook; and that cell as a snapshot.
 */
import { JupyterFrontEnd } from '@jupyterlab/application';
import type { Cell } from '@jupyterlab/cells';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';

import { cellContext, ICellContext, ICellSnapshot } from './cellContext';

export interface ICellTarget {
  notebook: NotebookPanel;
  cell: Cell;
  index: number;
}

/** The cell under the context menu, else the current notebook's active cell. */
export function targetCell(app: JupyterFrontEnd, tracker: INotebookTracker): ICellTarget | null {
  const node = app.contextMenuHitTest(n => n.classList.contains('jp-Cell'));
  let notebook: NotebookPanel | null = null;
  let index = -1;
  if (node) {
    tracker.forEach(panel => {
      const i = panel.content.widgets.findIndex(cell => cell.node === node);
      if (i >= 0) {
        notebook = panel;
        index = i;
      }
    });
  }
  if (!notebook) {
    notebook = tracker.currentWidget;
    index = notebook?.content.activeCellIndex ?? -1;
  }
  const panel = notebook as NotebookPanel | null;
  const cell = panel?.content.widgets[index];
  return panel && cell ? { notebook: panel, cell, index } : null;
}

/** The cell's nbformat outputs (none for markdown and raw cells). */
export function cellOutputs(cell: Cell): Record<string, any>[] {
  const json = cell.model.toJSON() as { outputs?: Record<string, any>[] };
  return json.outputs ?? [];
}

/** What the digests read of a cell: its id, type, source, outputs and position. */
export function snapshotOf(cell: Cell, index: number): ICellSnapshot & { id: string } {
  const json = cell.model.toJSON() as { execution_count?: number | null };
  return {
    id: cell.model.id,
    cellType: cell.model.type,
    source: cell.model.sharedModel.getSource(),
    outputs: cellOutputs(cell),
    executionCount: json.execution_count ?? null,
    index
  };
}

/** "Ask Cellwright about this cell": the cell as the composer's attachment. */
export function cellUnderMenu(
  app: JupyterFrontEnd,
  tracker: INotebookTracker
): { notebook: NotebookPanel; context: ICellContext } | null {
  const target = targetCell(app, tracker);
  if (!target) {
    return null;
  }
  return {
    notebook: target.notebook,
    context: cellContext(snapshotOf(target.cell, target.index), target.notebook.context.path)
  };
}
