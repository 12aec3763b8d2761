/**
 * Which cell "Ask Cellwright about this cell" is about: the cell the
 * context menu was opened on (the right click may not have made it the
 * active one), else the active cell of the current notebook.
 */
import { JupyterFrontEnd } from '@jupyterlab/application';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';

import { cellContext, ICellContext } from './cellContext';

export function cellUnderMenu(
  app: JupyterFrontEnd,
  tracker: INotebookTracker
): { notebook: NotebookPanel; context: ICellContext } | null {
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
  if (!panel || !cell) {
    return null;
  }
  const json = cell.model.toJSON() as { outputs?: Record<string, any>[]; execution_count?: number | null };
  return {
    notebook: panel,
    context: cellContext(
      {
        cellType: cell.model.type,
        source: cell.model.sharedModel.getSource(),
        outputs: json.outputs ?? [],
        executionCount: json.execution_count ?? null,
        index
      },
      panel.context.path
    )
  };
}
