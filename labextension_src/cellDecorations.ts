/**
 * What the notebook-side decorations (the "Fix with Cellwright" buttons, the
 * provenance badges) share: follow every notebook the tracker opens and
 * re-decorate its cells once per frame after its cells, their content or the
 * cells in view change (cells render lazily in long notebooks).
 */
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { IDisposable } from '@lumino/disposable';

export abstract class CellDecorations implements IDisposable {
  constructor(protected readonly tracker: INotebookTracker) {
    tracker.widgetAdded.connect(this._watch, this);
    tracker.forEach(panel => this._watch(tracker, panel));
  }

  get isDisposed(): boolean {
    return this._isDisposed;
  }

  dispose(): void {
    if (this._isDisposed) {
      return;
    }
    this._isDisposed = true;
    this.tracker.widgetAdded.disconnect(this._watch, this);
  }

  /** Decorate the rendered cells of `panel` now. */
  protected abstract decorate(panel: NotebookPanel): void;

  /** `panel` is ready and followed from now on (a decoration that watches more connects here). */
  protected watched(_panel: NotebookPanel): void {
    // nothing more by default
  }

  /** One pass per frame however many changes arrive. */
  protected schedule(panel: NotebookPanel): void {
    if (this._scheduled.has(panel)) {
      return;
    }
    this._scheduled.add(panel);
    requestAnimationFrame(() => {
      this._scheduled.delete(panel);
      if (!this._isDisposed && !panel.isDisposed) {
        this.decorate(panel);
      }
    });
  }

  private _watch(_: unknown, panel: NotebookPanel): void {
    const update = (): void => this.schedule(panel);
    void panel.context.ready.then(() => {
      if (this._isDisposed || panel.isDisposed) {
        return;
      }
      panel.content.model?.cells.changed.connect(update);
      panel.content.cellInViewportChanged.connect(update);
      panel.content.modelContentChanged.connect(update);
      panel.disposed.connect(() => {
        panel.content.model?.cells.changed.disconnect(update);
      });
      this.watched(panel);
      update();
    });
  }

  private _scheduled = new Set<NotebookPanel>();
  private _isDisposed = false;
}
