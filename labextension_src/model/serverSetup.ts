/**
 * The server's health as the panel acts on it (`GET health` at start and
 * after each settings save), and the settings form that stands in for the
 * conversation: opened with the gear, or shown while no model is
 * configured, since then nothing else can work.
 */
import type { TranslationBundle } from '@jupyterlab/translation';

import { CellwrightAPI } from '../api';
import { Health } from '../contract.gen';
import { SettingsModel } from './settings';

export namespace ServerSetup {
  export interface IOptions {
    api: CellwrightAPI;
    settings: SettingsModel;
    trans: TranslationBundle;
    onChanged(): void;
    onError(error: unknown, context: string): void;
  }
}

export class ServerSetup {
  constructor(private _options: ServerSetup.IOptions) {}

  /** The last `GET health` answer; null before it or when it failed. */
  get health(): Health | null {
    return this._health;
  }

  /** True while the form stands in for the composer (no model configured). */
  get needsSetup(): boolean {
    return this._health?.llm_configured === false;
  }

  get settingsOpen(): boolean {
    return this._open || this.needsSetup;
  }

  /** Opening (re)loads the form's values from the server. */
  openSettings(open: boolean): void {
    if (open) {
      void this._options.settings.load();
    }
    if (this._open !== open) {
      this._open = open;
      this._options.onChanged();
    }
  }

  /** `GET health`; without a model configured, the form loads at once. */
  async check(): Promise<void> {
    try {
      this._health = await this._options.api.health();
      if (this.needsSetup) {
        void this._options.settings.load();
      }
    } catch (error) {
      this._health = null;
      this._options.onError(error, this._options.trans.__('Cellwright server check failed'));
    }
    this._options.onChanged();
  }

  private _health: Health | null = null;
  private _open = false;
}
