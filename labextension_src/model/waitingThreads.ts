/**
 * Threads of the bound notebook that wait for the user's approval while
 * they are not on show: an outside agent's call through Cellwright's MCP
 * endpoint ("Claude Code via MCP"), or a run started from another page.
 * The panel asks `GET threads` every few seconds while the page is visible,
 * so such a card is never missed; nothing else tells a page about a run it
 * did not start.
 */
import { IDisposable } from '@lumino/disposable';

import { CellwrightAPI } from '../api';
import { Thread } from '../contract.gen';

export const WAITING_POLL_MS = 3000;

/** The threads of `notebookPath` that wait for a decision, newest first. */
export function awaitingHere(threads: readonly Thread[], notebookPath: string | null): Thread[] {
  if (notebookPath === null) {
    return [];
  }
  return threads.filter(t => t.status === 'awaiting_approval' && t.notebook_path === notebookPath);
}

export namespace WaitingThreads {
  export interface IOptions {
    api: CellwrightAPI;
    onChanged(): void;
  }
}

export class WaitingThreads implements IDisposable {
  constructor(private _options: WaitingThreads.IOptions) {}

  /** The last `GET threads` answer. */
  get threads(): readonly Thread[] {
    return this._threads;
  }

  get isDisposed(): boolean {
    return this._disposed;
  }

  /** When (Date.now()) the request behind `threads` was sent; 0 before any answer. */
  get askedAt(): number {
    return this._askedAt;
  }

  /** Ask now and then every WAITING_POLL_MS while the page is visible. */
  start(): void {
    if (this._timer !== null || this._disposed) {
      return;
    }
    this._timer = setInterval(() => {
      if (typeof document === 'undefined' || document.visibilityState === 'visible') {
        void this.refresh();
      }
    }, WAITING_POLL_MS);
    void this.refresh();
  }

  async refresh(): Promise<void> {
    if (this._asking) {
      return;
    }
    this._asking = true;
    const askedAt = Date.now();
    try {
      const threads = await this._options.api.listThreads();
      this._askedAt = askedAt;
      const before = this._threads.map(t => `${t.thread_id}:${t.status}`).join();
      this._threads = threads;
      if (threads.map(t => `${t.thread_id}:${t.status}`).join() !== before) {
        this._options.onChanged();
      }
    } catch {
      // The server is restarting or gone: the panel's own requests say so; the next tick asks again.
    } finally {
      this._asking = false;
    }
  }

  dispose(): void {
    this._disposed = true;
    if (this._timer !== null) {
      clearInterval(this._timer);
      this._timer = null;
    }
  }

  private _threads: Thread[] = [];
  private _timer: ReturnType<typeof setInterval> | null = null;
  private _asking = false;
  private _askedAt = 0;
  private _disposed = false;
}
