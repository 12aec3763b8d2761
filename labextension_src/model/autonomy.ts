/**
 * How much the agent may do (Ask / Plan / Agent), remembered per notebook
 * path so that reopening a notebook (or reloading the page) keeps its mode.
 * A storage that fails only makes the panel forget; a notebook without a
 * remembered mode gets Agent, the server's default.
 */
import type { TranslationBundle } from '@jupyterlab/translation';

import { Autonomy } from '../contract.gen';
import { IKeyValueStore } from './lastThreads';

const PREFIX = 'cellwright:autonomy:';

/** The modes the composer offers, in its order. */
export const AUTONOMIES: readonly Autonomy[] = ['ask', 'plan', 'agent'];

export const DEFAULT_AUTONOMY: Autonomy = 'agent';

/** A mode's name, as the composer's picker and the thread's header say it. */
export function autonomyLabel(trans: TranslationBundle, autonomy: Autonomy): string {
  switch (autonomy) {
    case 'ask':
      return trans.__('Ask');
    case 'plan':
      return trans.__('Plan');
    case 'agent':
      return trans.__('Agent');
  }
}

/** What a mode lets the agent do (the picker's and the badge's tooltip). */
export function autonomyHint(trans: TranslationBundle, autonomy: Autonomy): string {
  switch (autonomy) {
    case 'ask':
      return trans.__('Ask: the agent reads and explains; it runs and changes nothing');
    case 'plan':
      return trans.__('Plan: the agent writes a plan for you to approve or edit, then works step by step');
    case 'agent':
      return trans.__('Agent: the agent works on its own, asking before each risky step');
  }
}

export function isAutonomy(value: unknown): value is Autonomy {
  return typeof value === 'string' && (AUTONOMIES as readonly string[]).includes(value);
}

/** No notebook: the key of the panel's mode when it is bound to none. */
const NO_NOTEBOOK = '';

export class AutonomyMemory {
  constructor(private _storage: IKeyValueStore | null) {}

  /** The mode of a notebook without a remembered one (the user's setting). */
  fallback: Autonomy = DEFAULT_AUTONOMY;

  recall(path: string | null): Autonomy {
    try {
      const value = this._storage?.getItem(PREFIX + (path ?? NO_NOTEBOOK));
      return isAutonomy(value) ? value : this.fallback;
    } catch {
      return this.fallback;
    }
  }

  remember(path: string | null, autonomy: Autonomy): void {
    try {
      this._storage?.setItem(PREFIX + (path ?? NO_NOTEBOOK), autonomy);
    } catch {
      // the panel still works; it forgets on reload
    }
  }

  /** A notebook was renamed: its mode follows it. */
  move(from: string, to: string): void {
    try {
      const value = this._storage?.getItem(PREFIX + from);
      if (isAutonomy(value)) {
        this._storage?.removeItem(PREFIX + from);
        this._storage?.setItem(PREFIX + to, value);
      }
    } catch {
      // as in remember
    }
  }
}

/**
 * The autonomy the composer shows and the next run asks for: the bound
 * notebook's remembered pick, else the user's default.
 */
export class AutonomyChoice {
  constructor(storage: IKeyValueStore | null) {
    this._memory = new AutonomyMemory(storage);
    this._value = this._memory.recall(null);
  }

  get value(): Autonomy {
    return this._value;
  }

  /** Bind to a notebook (or none): its remembered mode. */
  bind(path: string | null): void {
    this._value = this._memory.recall(path);
  }

  /** A new default for notebooks without a pick; true when the choice for `path` changed. */
  setDefault(path: string | null, value: Autonomy): boolean {
    if (!isAutonomy(value)) {
      return false;
    }
    this._memory.fallback = value;
    return this._set(this._memory.recall(path));
  }

  /** The user's pick for the notebook at `path`; true when it changed. */
  pick(path: string | null, value: Autonomy): boolean {
    if (!isAutonomy(value) || !this._set(value)) {
      return false;
    }
    this._memory.remember(path, value);
    return true;
  }

  /** A notebook was renamed: its pick follows it. */
  move(from: string, to: string): void {
    this._memory.move(from, to);
  }

  private _set(value: Autonomy): boolean {
    const changed = value !== this._value;
    this._value = value;
    return changed;
  }

  private _memory: AutonomyMemory;
  private _value: Autonomy;
}
