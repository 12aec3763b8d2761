/**
 * Where the `@` list's candidates come from: the bound kernel's variables
 * (`POST cellwright/api/variables`) and workspace files (Jupyter's contents
 * API, the notebook's folder and the root). Failures never throw: they come
 * back as an empty list with a note the list shows.
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';
import { TranslationBundle } from '@jupyterlab/translation';

import { CellwrightAPI, errorMessage, isAbort } from './api';
import {
  fileCandidates,
  foldersFor,
  IContentsEntry,
  IMentionCandidate,
  IVariablesAnswer,
  IVariablesRequest,
  variableCandidates
} from './mentions';

export interface IMentionResult {
  candidates: IMentionCandidate[];
  notes: string[];
}

/** At most this many entries per folder (a data folder may hold thousands). */
const FILES_PER_FOLDER = 200;

export class MentionSource {
  constructor(
    private _api: CellwrightAPI,
    private _trans: TranslationBundle
  ) {}

  /**
   * Variables and files for `query`. `signal` aborts the requests when the
   * query went stale; an aborted call rejects with an AbortError.
   */
  async candidates(
    query: string,
    binding: { path: string; kernelId?: string } | null,
    signal: AbortSignal
  ): Promise<IMentionResult> {
    const [vars, files] = await Promise.all([
      this._variables(binding, signal),
      Promise.all(foldersFor(query, binding?.path).map(dir => this._files(dir, signal)))
    ]);
    if (signal.aborted) {
      throw new DOMException('stale', 'AbortError');
    }
    const notes = [vars.note, ...files.map(f => f.note)].filter((n): n is string => !!n);
    return {
      candidates: [...vars.candidates, ...files.flatMap(f => f.candidates)],
      notes: [...new Set(notes)]
    };
  }

  private async _variables(
    binding: { path: string; kernelId?: string } | null,
    signal: AbortSignal
  ): Promise<{ candidates: IMentionCandidate[]; note?: string }> {
    if (!binding) {
      return { candidates: [], note: this._trans.__('no notebook: no variables') };
    }
    const body: IVariablesRequest = { notebook_path: binding.path };
    if (binding.kernelId) {
      body.kernel_id = binding.kernelId;
    }
    try {
      const answer = await this._api.request<IVariablesAnswer>('variables', {
        method: 'POST',
        body: JSON.stringify(body),
        headers: { 'Content-Type': 'application/json' },
        signal
      });
      return {
        candidates: variableCandidates(answer),
        ...(answer?.note ? { note: String(answer.note) } : {})
      };
    } catch (error) {
      if (isAbort(error)) {
        throw error;
      }
      return { candidates: [], note: this._trans.__('variables unavailable: %1', errorMessage(this._trans, error)) };
    }
  }

  private async _files(
    dir: string,
    signal: AbortSignal
  ): Promise<{ candidates: IMentionCandidate[]; note?: string }> {
    const settings = this._api.serverSettings;
    const url =
      URLExt.join(settings.baseUrl, 'api/contents', URLExt.encodeParts(dir)) + '?content=1&type=directory';
    try {
      const response = await ServerConnection.makeRequest(url, { method: 'GET', signal }, settings);
      if (!response.ok) {
        // A folder the query names may not exist: that is no error worth a note.
        return response.status === 404 ? { candidates: [] } : { candidates: [], note: this._trans.__('files: %1', response.status) };
      }
      const model = (await response.json()) as { content?: IContentsEntry[] };
      return { candidates: fileCandidates(model.content, FILES_PER_FOLDER) };
    } catch (error) {
      if (signal.aborted || isAbort(error)) {
        throw new DOMException('stale', 'AbortError');
      }
      return { candidates: [], note: this._trans.__('files unavailable: %1', errorMessage(this._trans, error)) };
    }
  }
}
