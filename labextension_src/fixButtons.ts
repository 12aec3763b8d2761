/**
 * A "Fix with Cellwright" button under every code cell whose outputs hold
 * an error (the user's cells and the agent's alike), in the cell's footer,
 * right below the traceback. It appears when an error output arrives and
 * goes when the outputs are cleared; clicking it runs the fix command on
 * that cell. Cells render lazily in long notebooks: a cell that comes into
 * view is checked then.
 */
import type { Cell } from '@jupyterlab/cells';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { TranslationBundle } from '@jupyterlab/translation';

import { CellDecorations } from './cellDecorations';

/** The part of a code cell's output list the buttons read. */
interface IOutputList {
  readonly length: number;
  get(index: number): { readonly type: string };
  readonly changed: { connect(slot: () => void): boolean };
}

function outputsOf(cell: Cell): IOutputList | null {
  return (cell.model as unknown as { outputs?: IOutputList }).outputs ?? null;
}

function hasErrorOutput(outputs: IOutputList | null): boolean {
  if (!outputs) {
    return false;
  }
  for (let i = 0; i < outputs.length; i++) {
    if (outputs.get(i).type === 'error') {
      return true;
    }
  }
  return false;
}

const BUTTON_CLASS = 'cw-fix-button';
/** JupyterLab's cell footer has no height: the one holding the button gets its height. */
const FOOTER_CLASS = 'cw-mod-fixable';

export class FixErrorButtons extends CellDecorations {
  constructor(
    tracker: INotebookTracker,
    private _onFix: (notebook: NotebookPanel, cell: Cell) => void,
    private _trans: TranslationBundle
  ) {
    super(tracker);
  }

  protected decorate(panel: NotebookPanel): void {
    for (const cell of panel.content.widgets) {
      if (cell.model.type !== 'code') {
        continue;
      }
      const outputs = outputsOf(cell);
      if (outputs && !this._connected.has(outputs)) {
        this._connected.add(outputs);
        outputs.changed.connect(() => this.schedule(panel));
      }
      this._sync(panel, cell);
    }
  }

  private _sync(panel: NotebookPanel, cell: Cell): void {
    const footer = cell.node.querySelector<HTMLElement>(':scope > .jp-CellFooter');
    if (!footer) {
      return; // not rendered yet: cellInViewportChanged brings it back
    }
    const existing = footer.querySelector<HTMLButtonElement>(`.${BUTTON_CLASS}`);
    const error = hasErrorOutput(outputsOf(cell));
    if (error && !existing) {
      const button = document.createElement('button');
      button.type = 'button';
      button.className = `${BUTTON_CLASS} jp-mod-styled`;
      button.textContent = this._trans.__('Fix with Cellwright');
      button.title = this._trans.__("Ask Cellwright to fix this cell's error in place (you approve the change)");
      button.dataset.testid = 'cw-fix-cell';
      button.addEventListener('click', event => {
        event.stopPropagation();
        this._onFix(panel, cell);
      });
      footer.appendChild(button);
      footer.classList.add(FOOTER_CLASS);
    } else if (!error && existing) {
      existing.remove();
      footer.classList.remove(FOOTER_CLASS);
    }
  }

  private _connected = new WeakSet<object>();
}
