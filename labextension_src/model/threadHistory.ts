/**
 * The thread history list (`GET threads`): fetched when the user opens
 * it, and forgotten when a new thread makes it stale.
 */
import type { TranslationBundle } from '@jupyterlab/translation';

import { CellwrightAPI } from '../api';
import { Thread } from '../contract.gen';

export namespace ThreadHistory {
  export interface IOptions {
    api: CellwrightAPI;
    trans: TranslationBundle;
    onChanged(): void;
    onError(error: unknown, context: string): void;
  }
}

export class ThreadHistory {
  constructor(private _options: ThreadHistory.IOptions) {}

  /** Null until fetched once (or after it went stale). */
  get list(): readonly Thread[] | null {
    return this._list;
  }

  get loading(): boolean {
    return this._loading;
  }

  async refresh(): Promise<void> {
    this._loading = true;
    this._options.onChanged();
    try {
      this._list = await this._options.api.listThreads();
    } catch (error) {
      this._options.onError(error, this._options.trans.__('Could not load the thread history'));
    } finally {
      this._loading = false;
      this._options.onChanged();
    }
  }

  /** A thread was created: the list no longer shows them all. */
  invalidate(): void {
    this._list = null;
  }

  private _list: Thread[] | null = null;
  private _loading = false;
}
