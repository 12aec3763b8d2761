/**
 * The notebook tells the truth (issue 23): when a notebook is bound (opened,
 * restored by a page reload) or a thread's stream has caught up with its
 * backlog (a reload or reconnect mid-run), the agent cells of that notebook's
 * threads that it lacks are inserted, in the order they ran, with their
 * stored outputs and execution counts (POST agent_cells). Undone steps are not
 * inserted; a cell the user deleted stays deleted (the notebook's `placed`
 * record); an edit_cell is applied once. What was added is said in a
 * non-modal notification. Nothing is written to the .ipynb on the server:
 * the browser's notebook changes, and the user saves it as ever.
 *
 * Under jupyter-collaboration (`GET health` says `shared_document`) the
 * server writes the cells into the shared document: nothing is done here.
 */
import type { NotebookPanel } from '@jupyterlab/notebook';
import type { TranslationBundle } from '@jupyterlab/translation';

import { AgentCell, AgentCells, AgentCellsRequest, Health } from './contract.gen';
import { METADATA_KEY, planReconcile, reconcileMessage } from './model/agentCells';
import { NotebookBridge } from './notebook';

/** The two routes a reconcile reads. */
export interface IReconcileAPI {
  health(): Promise<Health>;
  agentCells(body: AgentCellsRequest): Promise<AgentCells>;
}

const MAX_PAGES = 25; // the server caps a notebook's agent cells at 5000, 200 a page

export class NotebookReconciler {
  constructor(
    private _bridge: NotebookBridge,
    private _api: IReconcileAPI,
    private _notify: (message: string) => void,
    private _trans: TranslationBundle
  ) {}

  /** Reconcile `panel` once it is loaded; a request while one runs makes it run once more after. */
  reconcile(panel: NotebookPanel): Promise<void> {
    const running = this._running.get(panel);
    if (running) {
      this._again.add(panel);
      return running;
    }
    const done = this._reconcile(panel)
      .catch(error => console.warn('Cellwright: could not reconcile the notebook', error))
      .finally(() => {
        this._running.delete(panel);
        if (this._again.delete(panel) && !panel.isDisposed) {
          void this.reconcile(panel);
        }
      });
    this._running.set(panel, done);
    return done;
  }

  private async _reconcile(panel: NotebookPanel): Promise<void> {
    await panel.context.ready;
    const started = performance.now();
    if (await this._sharedDocument()) {
      return;
    }
    const path = panel.context.path;
    const cells = await this._agentCells(path);
    if (panel.isDisposed || panel.context.path !== path || !panel.content.model) {
      return;
    }
    // From here on synchronous: the notebook as it is now (a live event may have added a cell
    // meanwhile, the user may have typed), so nothing is inserted twice and no user cell is touched.
    const present = this._bridge.cells(panel).map(cell => {
      const meta = cell.getMetadata(METADATA_KEY);
      return { id: cell.id, toolCallId: typeof meta?.tool_call_id === 'string' ? (meta.tool_call_id as string) : null };
    });
    const plan = planReconcile({ cells: present, placed: this._bridge.placed(panel) }, cells, false);
    this._bridge.insert(panel, plan.insert, true);
    plan.edit.forEach(cell => this._bridge.edit(panel, cell, true));
    this._bridge.refresh(panel, cells);
    // How many reconciles this notebook has had on this page: what a test (or a curious user) can
    // wait for before it says that nothing more was added.
    panel.node.dataset.cwReconciled = String(Number(panel.node.dataset.cwReconciled ?? 0) + 1);
    // In the browser's performance timeline (devtools, bench/notebook_reconcile.py): the bind's cost.
    performance.measure('cellwright:reconcile', { start: started, detail: { inserted: plan.insert.length } });
    const message = reconcileMessage(this._trans, plan.insert.length, plan.edit.length);
    if (message) {
      this._notify(message);
    }
  }

  /** Whether the server writes cells itself; asked once (again after a failure). */
  private async _sharedDocument(): Promise<boolean> {
    if (this._shared === null) {
      this._shared = this._api.health().then(
        health => !!health.shared_document,
        error => {
          this._shared = null;
          throw error;
        }
      );
    }
    const shared = await this._shared;
    this._bridge.sharedDocument = shared;
    return shared;
  }

  private async _agentCells(path: string): Promise<AgentCell[]> {
    const cells: AgentCell[] = [];
    let offset: number | null = 0;
    for (let page = 0; offset !== null && page < MAX_PAGES; page++) {
      const answer: AgentCells = await this._api.agentCells({ notebook_path: path, offset });
      cells.push(...answer.cells);
      offset = answer.next_offset;
    }
    return cells;
  }

  private _shared: Promise<boolean> | null = null;
  private _running = new Map<NotebookPanel, Promise<void>>();
  private _again = new Set<NotebookPanel>();
}
