/**
 * The settings form's I/O: `GET config` and `GET config/models` when it
 * opens, `POST config/test` for "Test connection", `PUT config` to save
 * (then `saved` fires, and the panel checks `GET health` again). The form's
 * values themselves live in the form (settingsForm.ts builds the bodies).
 */
import type { TranslationBundle } from '@jupyterlab/translation';
import { IDisposable } from '@lumino/disposable';
import { ISignal, Signal } from '@lumino/signaling';

import { CellwrightAPI, errorMessage } from '../api';
import { ConfigUpdate, ConnectionReport, ConnectionTest, PublicConfig } from '../contract.gen';

/** Where the SDK goes without a base URL. */
export const DEFAULT_ENDPOINT = 'https://api.openai.com';

/**
 * What an API key belongs to, as the server says it (agent_core.config.agent_settings.endpoint_of): the scheme,
 * host and port of a base URL, the default port left out; DEFAULT_ENDPOINT for an empty one.
 */
export function endpointOf(baseUrl: string): string {
  const url = baseUrl.trim();
  if (!url) {
    return DEFAULT_ENDPOINT;
  }
  try {
    const parsed = new URL(url);
    if (parsed.protocol === 'http:' || parsed.protocol === 'https:') {
      return parsed.origin;
    }
  } catch {
    // not a URL: it is its own endpoint
  }
  return url;
}

/**
 * Whether the endpoint of `baseUrl` has a key (saved, configured or from the environment): a key
 * is never sent to another endpoint than the one it was given for.
 */
export function endpointHasKey(config: PublicConfig | null, baseUrl: string): boolean {
  if (!config) {
    return false;
  }
  if (endpointOf(baseUrl) === endpointOf(config.base_url)) {
    return !!config.api_key_set;
  }
  return (config.api_keys_set ?? []).includes(endpointOf(baseUrl));
}

export class SettingsModel implements IDisposable {
  constructor(
    private _api: CellwrightAPI,
    private _trans: TranslationBundle
  ) {}

  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /** After a successful save. */
  get saved(): ISignal<this, PublicConfig> {
    return this._saved;
  }

  /** The saved settings (never the key), null until loaded. */
  get config(): PublicConfig | null {
    return this._config;
  }

  get loading(): boolean {
    return this._loading;
  }

  /** Models the endpoint lists (empty: type one). */
  get models(): readonly string[] {
    return this._models;
  }

  /** Why there is no list of models. */
  get modelsError(): string | null {
    return this._modelsError;
  }

  get testing(): boolean {
    return this._testing;
  }

  get report(): ConnectionReport | null {
    return this._report;
  }

  get saving(): boolean {
    return this._saving;
  }

  /** The last failure of a load, test or save. */
  get error(): string | null {
    return this._error;
  }

  get isDisposed(): boolean {
    return this._isDisposed;
  }

  async load(): Promise<void> {
    if (this._loading) {
      return;
    }
    this._loading = true;
    this._emit();
    try {
      this._config = await this._api.getConfig();
      this._error = null;
    } catch (error) {
      this._error = this._trans.__('Could not read the settings: %1', errorMessage(this._trans, error));
    } finally {
      this._loading = false;
      this._emit();
    }
    await this.refreshModels();
  }

  async refreshModels(): Promise<void> {
    try {
      const answer = await this._api.listModels();
      this._models = Array.isArray(answer?.models) ? answer.models : [];
      this._modelsError = answer?.error ?? null;
    } catch (error) {
      this._models = [];
      this._modelsError = errorMessage(this._trans, error);
    }
    this._emit();
  }

  async test(body: ConnectionTest): Promise<ConnectionReport | null> {
    this._testing = true;
    this._report = null;
    this._emit();
    try {
      this._report = await this._api.testConnection(body);
      this._error = null;
      if (this._report.models?.length) {
        this._models = this._report.models;
        this._modelsError = null;
      }
      return this._report;
    } catch (error) {
      this._error = this._trans.__('The test could not run: %1', errorMessage(this._trans, error));
      return null;
    } finally {
      this._testing = false;
      this._emit();
    }
  }

  async save(update: ConfigUpdate): Promise<boolean> {
    this._saving = true;
    this._emit();
    try {
      this._config = await this._api.putConfig(update);
      this._error = null;
      this._saved.emit(this._config);
      void this.refreshModels();
      return true;
    } catch (error) {
      this._error = this._trans.__('Could not save the settings: %1', errorMessage(this._trans, error));
      return false;
    } finally {
      this._saving = false;
      this._emit();
    }
  }

  /** Forget the last test's report (the form changed since). */
  clearReport(): void {
    if (this._report) {
      this._report = null;
      this._emit();
    }
  }

  dispose(): void {
    if (this._isDisposed) {
      return;
    }
    this._isDisposed = true;
    Signal.clearData(this);
  }

  private _emit(): void {
    if (!this._isDisposed) {
      this._changed.emit();
    }
  }

  private _config: PublicConfig | null = null;
  private _loading = false;
  private _models: string[] = [];
  private _modelsError: string | null = null;
  private _testing = false;
  private _report: ConnectionReport | null = null;
  private _saving = false;
  private _error: string | null = null;
  private _isDisposed = false;
  private _changed = new Signal<this, void>(this);
  private _saved = new Signal<this, PublicConfig>(this);
}
