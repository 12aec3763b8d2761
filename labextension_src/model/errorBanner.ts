/**
 * The panel's error banner: the last few errors, each dismissable. The
 * same message twice in a row shows once, and an abort (the user stopped
 * something) is not an error.
 */
import type { TranslationBundle } from '@jupyterlab/translation';

import { errorMessage, isAbort } from '../api';

export interface IPanelError {
  id: number;
  message: string;
}

/** Older errors scroll out of the banner: it is a notice, not a log. */
const MAX_ERRORS = 5;

export class ErrorBanner {
  constructor(private _trans: TranslationBundle) {}

  get errors(): readonly IPanelError[] {
    return this._errors;
  }

  /** Add an error; false when the banner did not change. */
  report(error: unknown, context?: string): boolean {
    if (isAbort(error)) {
      return false;
    }
    const text = errorMessage(this._trans, error);
    const message = context ? this._trans.__('%1: %2', context, text) : text;
    const last = this._errors[this._errors.length - 1];
    if (last && last.message === message) {
      return false;
    }
    console.warn('Cellwright:', message);
    this._errors = [...this._errors, { id: ++this._lastId, message }].slice(-MAX_ERRORS);
    return true;
  }

  dismiss(id: number): void {
    this._errors = this._errors.filter(e => e.id !== id);
  }

  private _errors: IPanelError[] = [];
  private _lastId = 0;
}
