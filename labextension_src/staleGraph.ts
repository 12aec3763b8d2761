/**
 * The pure side of the stale badges (issue 42): what GET notebook/graph says about each cell turned
 * into the badge it gets, and a refresher that coalesces the many reasons to ask again (a cell ran,
 * the kernel went idle, an edit) into at most one request in flight per notebook, edits debounced.
 */
import type { TranslationBundle } from '@jupyterlab/translation';

import type { NotebookGraphAnswer } from './contract.gen';

/** How long edits settle before the graph is asked again. */
export const EDIT_DEBOUNCE_MS = 500;

export interface IStaleMark {
  kind: 'stale' | 'hidden';
  /** The badge's word. */
  label: string;
  /** Its hover text: every reason, one a line. */
  title: string;
}

/** The badge of each stale (or hidden-state) cell, by cell id; cells up to date have none. */
export function staleMarks(trans: TranslationBundle, answer: NotebookGraphAnswer): Map<string, IStaleMark> {
  const marks = new Map<string, IStaleMark>();
  for (const cell of answer.cells ?? []) {
    if (!cell.stale && !cell.hidden_state) {
      continue;
    }
    const reasons = (cell.reasons ?? []).map(reason => reason.text).filter(text => !!text);
    const kind = cell.stale ? 'stale' : 'hidden';
    marks.set(cell.cell_id, {
      kind,
      label: kind === 'stale' ? trans.__('stale') : trans.__('hidden state'),
      title: [
        kind === 'stale'
          ? trans.__('Its outputs may be out of date:')
          : trans.__('It reads a name only the kernel has:'),
        ...reasons
      ].join('\n')
    });
  }
  return marks;
}

/** A key for a mark, so a badge that did not change is left alone. */
export function markKey(mark: IStaleMark | undefined): string {
  return mark ? `${mark.kind}\n${mark.title}` : '';
}

/**
 * Asks again when told to, never twice at once: a request made while one is in flight runs once
 * after it ends (with what is newest then). `soon` waits for edits to settle; `now` asks at once.
 */
export class Refresher {
  constructor(
    private readonly _fetch: () => Promise<void>,
    private readonly _debounceMs: number = EDIT_DEBOUNCE_MS
  ) {}

  /** Ask once edits settle (each call restarts the wait). */
  soon(): void {
    if (this._disposed) {
      return;
    }
    if (this._timer !== null) {
      clearTimeout(this._timer);
    }
    this._timer = setTimeout(() => {
      this._timer = null;
      this.now();
    }, this._debounceMs);
  }

  /** Ask now, or right after the request in flight. */
  now(): void {
    if (this._disposed) {
      return;
    }
    if (this._inFlight) {
      this._again = true;
      return;
    }
    this._inFlight = true;
    void this._fetch()
      .catch(() => undefined) // the badges stay as they were; the next change asks again
      .finally(() => {
        this._inFlight = false;
        if (this._again) {
          this._again = false;
          this.now();
        }
      });
  }

  dispose(): void {
    this._disposed = true;
    if (this._timer !== null) {
      clearTimeout(this._timer);
      this._timer = null;
    }
  }

  private _timer: ReturnType<typeof setTimeout> | null = null;
  private _inFlight = false;
  private _again = false;
  private _disposed = false;
}
