/**
 * Stale badges (issue 42): a small "stale" or "hidden state" badge in the gutter of each cell whose
 * outputs may be out of date, the reasons on hover ("reads df, redefined by cell 3 at [12]"). The
 * facts are the server's (GET notebook/graph: the saved notebook, the agent's cells it lacks, the
 * kernel's history); they are asked again when the notebook opens, after a cell runs here, after an
 * agent step there ends, after a save and after edits settle (outputs too), never twice at once per
 * notebook. Not on the kernel going idle: answering the graph asks the kernel (history, names), whose
 * idle would ask again, for ever. A setting turns them off.
 */
import type { Cell } from '@jupyterlab/cells';
import { INotebookTracker, Notebook, NotebookActions, NotebookPanel } from '@jupyterlab/notebook';
import { TranslationBundle } from '@jupyterlab/translation';

import { CellDecorations } from './cellDecorations';
import type { NotebookGraphAnswer } from './contract.gen';
import { IStaleMark, markKey, Refresher, staleMarks } from './staleGraph';

const BADGE_CLASS = 'cw-stale-badge';

/** Reads a notebook's dependency graph (CellwrightAPI.notebookGraph). */
export type GraphSource = (path: string) => Promise<NotebookGraphAnswer>;

export class StaleBadges extends CellDecorations {
  constructor(
    tracker: INotebookTracker,
    private _trans: TranslationBundle,
    private _graph: GraphSource
  ) {
    super(tracker);
    NotebookActions.executed.connect(this._onExecuted, this);
  }

  /** The setting: badges shown (default) or not (then the graph is not asked for either). */
  set enabled(value: boolean) {
    if (value === this._enabled) {
      return;
    }
    this._enabled = value;
    this.tracker.forEach(panel => {
      if (value) {
        this._refreshers.get(panel)?.now();
      } else {
        this._marks.delete(panel);
      }
      this.schedule(panel);
    });
  }

  /**
   * Ask again for the notebook at `path` (open here): the agent's step there ended, so the server's
   * record of it, which the graph reads, is complete now.
   */
  refresh(path: string): void {
    const panel = this.tracker.find(candidate => candidate.context.path === path);
    if (panel && this._enabled) {
      this._refreshers.get(panel)?.now();
    }
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    NotebookActions.executed.disconnect(this._onExecuted, this);
    this._refreshers.forEach(refresher => refresher.dispose());
    this._refreshers.clear();
    super.dispose();
  }

  protected watched(panel: NotebookPanel): void {
    const refresher = new Refresher(() => this._fetch(panel));
    this._refreshers.set(panel, refresher);
    const edited = (): void => {
      if (this._enabled) {
        refresher.soon();
      }
    };
    panel.content.model?.contentChanged.connect(edited);
    panel.context.fileChanged.connect(edited); // a save: the graph reads the saved notebook
    panel.disposed.connect(() => {
      panel.content.model?.contentChanged.disconnect(edited);
      panel.context.fileChanged.disconnect(edited);
      refresher.dispose();
      this._refreshers.delete(panel);
      this._marks.delete(panel);
    });
    if (this._enabled) {
      refresher.now();
    }
  }

  protected decorate(panel: NotebookPanel): void {
    const marks = this._enabled ? this._marks.get(panel) : undefined;
    for (const cell of panel.content.widgets) {
      this._sync(cell, marks?.get(cell.model.id));
    }
  }

  private _onExecuted(_: unknown, args: { notebook: Notebook }): void {
    const panel = this.tracker.find(candidate => candidate.content === args.notebook);
    if (panel && this._enabled) {
      this._refreshers.get(panel)?.now();
    }
  }

  private async _fetch(panel: NotebookPanel): Promise<void> {
    if (panel.isDisposed || !this._enabled) {
      return;
    }
    const answer = await this._graph(panel.context.path);
    this._marks.set(panel, staleMarks(this._trans, answer));
    this.schedule(panel);
  }

  private _sync(cell: Cell, mark: IStaleMark | undefined): void {
    const existing = cell.node.querySelector<HTMLElement>(`:scope > .${BADGE_CLASS}`);
    const key = markKey(mark);
    if ((existing?.dataset.key ?? '') === key) {
      return;
    }
    existing?.remove();
    if (mark) {
      const node = document.createElement('div');
      node.className = `${BADGE_CLASS} ${BADGE_CLASS}-${mark.kind}`;
      node.dataset.key = key;
      node.dataset.testid = 'cw-stale-badge';
      node.dataset.kind = mark.kind;
      node.textContent = mark.label;
      node.title = mark.title;
      node.setAttribute('role', 'note');
      node.setAttribute('aria-label', mark.title);
      cell.node.appendChild(node);
    }
  }

  private _enabled = true;
  private _refreshers = new Map<NotebookPanel, Refresher>();
  private _marks = new Map<NotebookPanel, Map<string, IStaleMark>>();
}
