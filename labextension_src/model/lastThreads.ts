/**
 * Which thread each notebook showed last, so that reopening a notebook (or
 * reloading the page) shows its conversation again. A storage that fails
 * (full, disabled) only makes the panel forget.
 */

/** A minimal key-value store (window.localStorage in the browser). */
export interface IKeyValueStore {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

const PREFIX = 'cellwright:last-thread:';

export class LastThreads {
  constructor(private _storage: IKeyValueStore | null) {}

  recall(path: string): string | null {
    try {
      return this._storage?.getItem(PREFIX + path) ?? null;
    } catch {
      return null;
    }
  }

  remember(path: string, threadId: string): void {
    try {
      this._storage?.setItem(PREFIX + path, threadId);
    } catch {
      // the panel still works; it forgets on reload
    }
  }

  forget(path: string): void {
    try {
      this._storage?.removeItem(PREFIX + path);
    } catch {
      // as in remember
    }
  }

  /** A notebook was renamed: its thread follows it. */
  move(from: string, to: string): void {
    const threadId = this.recall(from);
    if (threadId) {
      this.forget(from);
      this.remember(to, threadId);
    }
  }
}
