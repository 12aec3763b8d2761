/**
 * A small badge on every cell the agent wrote or edited (its metadata holds
 * `cellwright` provenance: thread, run, tool call, model, decision), in the
 * cell's header corner. Clicking it opens the thread at that step; "Undo"
 * beside it undoes the step (kernel and notebook) while it can be. The badges
 * follow the notebook (a reopened .ipynb shows them again) and a setting
 * turns them off. Cells render lazily: a cell that comes into view gets its
 * badge then.
 */
import type { Cell } from '@jupyterlab/cells';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { TranslationBundle } from '@jupyterlab/translation';

import { CellDecorations } from './cellDecorations';

import { ICellProvenance } from './model/review';

const BADGE_CLASS = 'cw-cell-badge';

export interface ICellBadgeActions {
  /** Open the step's thread in the panel, at the step. */
  open(provenance: ICellProvenance): void;
  /** Undo the step; resolves to whether it was undone and a line for the user. */
  undo(provenance: ICellProvenance): Promise<{ ok: boolean; message: string }>;
}

/** The provenance of a cell, when it has a usable one. */
export function provenanceOf(cell: Cell): ICellProvenance | null {
  const meta = cell.model.getMetadata('cellwright') as ICellProvenance | undefined;
  if (!meta || typeof meta !== 'object' || typeof meta.thread_id !== 'string' || typeof meta.tool_call_id !== 'string') {
    return null;
  }
  return meta;
}

function badgeTitle(trans: TranslationBundle, p: ICellProvenance): string {
  const how =
    p.decision === 'edited'
      ? trans.__('edited by you, then approved')
      : p.decision === 'auto_approved'
        ? trans.__('auto-approved')
        : p.decision
          ? trans.__('approved by you')
          : trans.__('added without approval (Markdown)');
  return trans.__(
    'Written by Cellwright (%1, %2), %3. Click to open the thread at this step.',
    p.agent ?? trans.__('agent'),
    p.model ?? trans.__('model'),
    how
  );
}

/**
 * Bring a step of the open thread into view in the panel (the thread may
 * still be replaying: tried for a few seconds).
 */
export function revealStep(toolCallId: string, tries = 40): void {
  const selector = `.cw-step[data-tool-call-id="${CSS.escape(toolCallId)}"]`;
  const node = document.querySelector<HTMLElement>(selector);
  if (node) {
    node.scrollIntoView({ block: 'center' });
    node.classList.add('cw-undo-revealed');
    setTimeout(() => node.classList.remove('cw-undo-revealed'), 2000);
  } else if (tries > 0) {
    setTimeout(() => revealStep(toolCallId, tries - 1), 100);
  }
}

export class CellBadges extends CellDecorations {
  constructor(
    tracker: INotebookTracker,
    private _trans: TranslationBundle,
    private _actions: ICellBadgeActions
  ) {
    super(tracker);
  }

  /** The setting: badges shown (default) or not. */
  set enabled(value: boolean) {
    if (value !== this._enabled) {
      this._enabled = value;
      this.tracker.forEach(panel => this.schedule(panel));
    }
  }

  protected decorate(panel: NotebookPanel): void {
    for (const cell of panel.content.widgets) {
      this._sync(cell);
    }
  }

  private _sync(cell: Cell): void {
    const existing = cell.node.querySelector<HTMLElement>(`:scope > .${BADGE_CLASS}`);
    const provenance = this._enabled ? provenanceOf(cell) : null;
    const key = provenance ? JSON.stringify([provenance.tool_call_id, provenance.undoable, provenance.undone]) : '';
    if (existing && existing.dataset.key === key) {
      return;
    }
    existing?.remove();
    if (provenance) {
      cell.node.appendChild(this._badge(provenance, key));
    }
  }

  private _badge(p: ICellProvenance, key: string): HTMLElement {
    const node = document.createElement('div');
    node.className = BADGE_CLASS;
    node.dataset.key = key;
    node.dataset.testid = 'cw-cell-badge';
    const open = document.createElement('button');
    open.type = 'button';
    open.className = 'cw-cell-badge-open';
    const trans = this._trans;
    open.textContent = p.undone
      ? trans.__('Cellwright · undone')
      : p.decision === 'edited'
        ? trans.__('Cellwright · edited')
        : 'Cellwright';
    open.title = badgeTitle(trans, p);
    open.addEventListener('click', event => {
      event.stopPropagation();
      this._actions.open(p);
    });
    node.appendChild(open);
    if (p.undoable && !p.undone) {
      const undo = document.createElement('button');
      undo.type = 'button';
      undo.className = 'cw-cell-badge-undo';
      undo.dataset.testid = 'cw-cell-badge-undo';
      undo.textContent = trans.__('Undo');
      undo.title = trans.__('Undo this step: restore the variables it changed and remove (or restore) this cell');
      undo.addEventListener('click', event => {
        event.stopPropagation();
        undo.disabled = true;
        void this._actions.undo(p).then(({ ok, message }) => {
          open.title = `${badgeTitle(trans, p)}\n${message}`;
          undo.title = message;
          if (!ok) {
            undo.textContent = trans.__('Cannot undo'); // it stays disabled: the step cannot be undone any more
          }
        });
      });
      node.appendChild(undo);
    }
    return node;
  }

  private _enabled = true;
}
