/**
 * "Show in notebook": the thread view links each agent cell (run_cell,
 * edit_cell, add_markdown) to where it is in its notebook. Clicking opens or
 * activates the notebook, selects the cell and scrolls to it. The views ask
 * through `showCell` (they hold no JupyterFrontEnd); the plugin answers with
 * the `cellwright:show-cell` command (`revealCell`).
 */
import type { JupyterFrontEnd } from '@jupyterlab/application';
import type { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';

import { METADATA_KEY } from './model/agentCells';

let handler: ((toolCallId: string) => void) | null = null;

/** Set by the plugin: what a "Show in notebook" click does. */
export function onShowCell(listener: (toolCallId: string) => void): void {
  handler = listener;
}

/** Show the cell of tool call `toolCallId` (of the thread on show) in its notebook. */
export function showCell(toolCallId: string): void {
  handler?.(toolCallId);
}

/** Whether a timeline step wrote a notebook cell: a cell that ran (run_cell, edit_cell), or Markdown added. */
export function hasNotebookCell(step: { name: string; isCell: boolean; status: string }): boolean {
  return step.isCell || (step.name === 'add_markdown' && step.status === 'ok');
}

/**
 * Open (or activate) the notebook at `path`, select the cell whose
 * `cellwright` metadata names `toolCallId` and scroll to it. False when the
 * notebook has no such cell (deleted, undone, or not yet added).
 */
export async function revealCell(
  app: JupyterFrontEnd,
  tracker: INotebookTracker,
  path: string,
  toolCallId: string
): Promise<boolean> {
  let panel = tracker.find(candidate => candidate.context.path === path) ?? null;
  if (!panel) {
    panel = ((await app.commands.execute('docmanager:open', { path })) as NotebookPanel | undefined) ?? null;
  }
  if (!panel) {
    return false;
  }
  app.shell.activateById(panel.id);
  await panel.context.ready;
  const notebook = panel.content;
  const index = notebook.widgets.findIndex(cell => cell.model.getMetadata(METADATA_KEY)?.tool_call_id === toolCallId);
  if (index < 0) {
    return false;
  }
  notebook.mode = 'command';
  notebook.activeCellIndex = index;
  notebook.deselectAll();
  await notebook.scrollToItem(index, 'center');
  return true;
}
