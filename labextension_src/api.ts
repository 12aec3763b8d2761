/**
 * The REST client. Every request goes through `requestAPI`, which turns the
 * server's `{"error", "message"}` answers into an `APIError` (a
 * `ServerConnection.ResponseError`) carrying that message. The event stream
 * has its own client (stream.ts), which shares the error handling here.
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';
import type { TranslationBundle } from '@jupyterlab/translation';

import {
  AgentCells,
  AgentInfo,
  AlwaysAllowed,
  AgentList,
  AgentCellsRequest,
  AsCellStarted,
  ConfigUpdate,
  ConnectionReport,
  ConnectionTest,
  CreateThread,
  Decision,
  Health,
  McpServers,
  ModelList,
  NotebookGraphAnswer,
  NotebookTools,
  PublicConfig,
  RouteErrorKind,
  RunAccepted,
  StartRun,
  Thread,
  ThreadDetail,
  ThreadList,
  BranchList,
  Forked,
  ForkRequest,
  RewindRequest,
  RewindResult,
  RewindUndone,
  ThreadDiff,
  UndoResult,
  VariablesRequest,
  VerifyRequest,
  VerifyResult
} from './contract.gen';
import { API_NAMESPACE } from './tokens';

/**
 * The kinds the panel gives an error itself: an answer with no JSON error
 * body (`http_<status>`: a proxy's or jupyter_server's own page), or a 2xx
 * answer that is not JSON.
 */
export type ClientErrorKind = `http_${number}` | 'bad_response';

/**
 * An error answer from the server. `message` is the server's own message
 * (or a description of what went wrong when the body was not JSON); `kind`
 * is its `error` field (a RouteErrorKind), or a ClientErrorKind.
 */
export class APIError extends ServerConnection.ResponseError {
  constructor(
    response: Response,
    message: string,
    readonly kind: RouteErrorKind | ClientErrorKind
  ) {
    super(response, message);
    this.name = 'APIError';
  }

  get status(): number {
    return this.response.status;
  }
}

/** True for errors that a later retry can fix (the network, a 5xx). */
export function isTransient(error: unknown): boolean {
  if (error instanceof ServerConnection.NetworkError) {
    return true;
  }
  if (error instanceof ServerConnection.ResponseError) {
    return error.response.status >= 500;
  }
  return error instanceof TypeError; // fetch's own network failure
}

/** A message to show the user for any error. */
export function errorMessage(trans: TranslationBundle, error: unknown): string {
  if (error instanceof ServerConnection.NetworkError) {
    return trans.__('Cannot reach the Jupyter server: %1', error.message);
  }
  if (error instanceof Error) {
    return error.message;
  }
  return String(error);
}

export function isAbort(error: unknown): boolean {
  return (
    typeof error === 'object' &&
    error !== null &&
    (error as { name?: string }).name === 'AbortError'
  );
}

/** Build an `APIError` from a failed response, reading its JSON body. */
export async function toAPIError(
  response: Response,
  method: string,
  path: string,
  trans: TranslationBundle
): Promise<APIError> {
  let text = '';
  try {
    text = await response.text();
  } catch {
    // keep the empty body
  }
  let kind: RouteErrorKind | ClientErrorKind = `http_${response.status}`;
  let message = '';
  try {
    const body = JSON.parse(text);
    if (body && typeof body === 'object') {
      if (typeof body.error === 'string') {
        kind = body.error as RouteErrorKind; // the contract's ErrorBody
      }
      if (typeof body.message === 'string') {
        message = body.message;
      } else if (typeof body.reason === 'string') {
        message = body.reason;
      }
    }
  } catch {
    // not JSON: jupyter_server's HTML error pages and proxies
  }
  if (!message) {
    const route = `${method} ${API_NAMESPACE}/${path}`;
    message = trans.__('%1 answered %2 %3', route, response.status, response.statusText).trim();
    if (response.status === 404) {
      message = trans.__(
        '%1. Is the Cellwright server extension installed and enabled? Check `jupyter server extension list`.',
        message
      );
    }
  }
  return new APIError(response, message, kind);
}

/**
 * Call a Cellwright route. `path` is relative to `<base_url>/cellwright/api/`.
 * Returns the parsed JSON body (undefined for an empty body).
 * Throws `APIError` for an error status and `ServerConnection.NetworkError`
 * when the server cannot be reached.
 */
export async function requestAPI<T>(
  path: string,
  init: RequestInit = {},
  settings: ServerConnection.ISettings,
  trans: TranslationBundle
): Promise<T> {
  const url = URLExt.join(settings.baseUrl, API_NAMESPACE, path);
  const method = (init.method ?? 'GET').toUpperCase();
  let response: Response;
  try {
    response = await ServerConnection.makeRequest(url, init, settings);
  } catch (error) {
    if (init.signal?.aborted || isAbort(error)) {
      throw new DOMException(trans.__('The request was stopped'), 'AbortError');
    }
    throw error instanceof ServerConnection.NetworkError
      ? error
      : new ServerConnection.NetworkError(error as TypeError);
  }
  if (!response.ok) {
    throw await toAPIError(response, method, path, trans);
  }
  const text = await response.text();
  if (!text) {
    return undefined as T;
  }
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new APIError(
      response,
      trans.__('%1 %2/%3: the answer is not JSON', method, API_NAMESPACE, path),
      'bad_response'
    );
  }
}

/** A POST that starts a run: its route (relative to the API) and JSON body. */
export interface IRunRequest {
  path: string;
  body: StartRun | Decision;
}

function jsonInit(method: string, body: unknown): RequestInit {
  return {
    method,
    body: JSON.stringify(body),
    headers: { 'Content-Type': 'application/json' }
  };
}

const enc = encodeURIComponent;

// ---------------------------------------------------------------- client

/** The Cellwright REST client: one method per route of API.md. */
export class CellwrightAPI {
  /** `trans`: the panel's bundle, for the errors this client phrases. */
  constructor(
    readonly serverSettings: ServerConnection.ISettings,
    readonly trans: TranslationBundle
  ) {}

  request<T>(path: string, init: RequestInit = {}): Promise<T> {
    return requestAPI<T>(path, init, this.serverSettings, this.trans);
  }

  health(): Promise<Health> {
    return this.request<Health>('health');
  }

  getConfig(): Promise<PublicConfig> {
    return this.request<PublicConfig>('config');
  }

  putConfig(update: ConfigUpdate): Promise<PublicConfig> {
    return this.request<PublicConfig>('config', jsonInit('PUT', update));
  }

  /** What the configured endpoint's /models lists. */
  listModels(): Promise<ModelList> {
    return this.request<ModelList>('config/models');
  }

  /** One tiny request with the form's values (unsaved): what works and what fails. */
  testConnection(body: ConnectionTest): Promise<ConnectionReport> {
    return this.request<ConnectionReport>('config/test', jsonInit('POST', body));
  }

  /** The configured MCP servers: status and tools, never env or header values. */
  mcpServers(): Promise<McpServers> {
    return this.request<McpServers>('mcp/servers');
  }

  /** The kernel's @tool functions, as the next run will offer them (nothing runs in the kernel). */
  notebookTools(body: VariablesRequest): Promise<NotebookTools> {
    return this.request<NotebookTools>('notebook_tools', jsonInit('POST', body));
  }

  /** A page of the agent cells of a notebook, in the order they ran (what a reconcile inserts). */
  agentCells(body: AgentCellsRequest): Promise<AgentCells> {
    return this.request<AgentCells>('agent_cells', jsonInit('POST', body));
  }

  /** The notebook's dependency graph: which cells are stale and why (issue 42). */
  notebookGraph(path: string): Promise<NotebookGraphAnswer> {
    return this.request<NotebookGraphAnswer>(`notebook/graph?${new URLSearchParams({ path })}`);
  }

  /** The saved notebook re-run from the top in a fresh shadow kernel (never its own). */
  verify(body: VerifyRequest): Promise<VerifyResult> {
    return this.request<VerifyResult>('verify', jsonInit('POST', body));
  }

  getThread(threadId: string): Promise<ThreadDetail> {
    return this.request<ThreadDetail>(`threads/${enc(threadId)}`);
  }

  /** Take back every "always" given to an outside agent in the thread: each kind asks again. */
  clearAlwaysAllowed(threadId: string): Promise<AlwaysAllowed> {
    return this.request<AlwaysAllowed>(`threads/${enc(threadId)}/always_allowed`, { method: 'DELETE' });
  }

  createThread(body: CreateThread): Promise<Thread> {
    return this.request<Thread>('threads', jsonInit('POST', body));
  }

  /** Cellwright's own agent and the ACP agents the server hosts (GET agents). */
  async listAgents(): Promise<AgentInfo[]> {
    const answer = await this.request<AgentList>('agents');
    return answer?.agents ?? [];
  }

  async listThreads(): Promise<Thread[]> {
    const answer = await this.request<ThreadList>('threads');
    return answer?.threads ?? [];
  }

  /** POST threads/{id}/runs: start a run (see `post`). */
  startRun(threadId: string, body: StartRun): IRunRequest {
    return { path: `threads/${enc(threadId)}/runs`, body };
  }

  /** POST threads/{id}/approvals/{call}: decide the pending call (see `post`). */
  decide(threadId: string, toolCallId: string, body: Decision): IRunRequest {
    return {
      path: `threads/${enc(threadId)}/approvals/${enc(toolCallId)}`,
      body
    };
  }

  /**
   * Send a request that starts a run, answered 202. `ThreadModel.openWith`
   * sends it answered with the thread's events instead.
   */
  post(request: IRunRequest): Promise<RunAccepted> {
    return this.request<RunAccepted>(request.path, jsonInit('POST', request.body));
  }

  /** Undo one step in the kernel (a run: its steps newest first). */
  undo(threadId: string, toolCallId: string): Promise<UndoResult> {
    return this.request<UndoResult>(
      `threads/${enc(threadId)}/undo/${enc(toolCallId)}`,
      jsonInit('POST', {})
    );
  }

  /**
   * Run an explore step's code as a notebook cell: the server proposes it
   * (from its own record of the step) as a run_cell call awaiting approval.
   */
  stepAsCell(threadId: string, toolCallId: string): Promise<AsCellStarted> {
    return this.request<AsCellStarted>(
      `threads/${enc(threadId)}/steps/${enc(toolCallId)}/as_cell`,
      jsonInit('POST', {})
    );
  }

  /** Go back to just before a step (`dry_run`: only the preview of what would go back). */
  rewind(threadId: string, body: RewindRequest): Promise<RewindResult> {
    return this.request<RewindResult>(`threads/${enc(threadId)}/rewind`, jsonInit('POST', body));
  }

  /** Undo the last rewind while nothing ran after it. */
  undoRewind(threadId: string): Promise<RewindUndone> {
    return this.request<RewindUndone>(`threads/${enc(threadId)}/rewind/undo`, jsonInit('POST', {}));
  }

  /** Per cell and per file, what the steps `from`..`to` (default: to the thread's last) changed. */
  diff(threadId: string, from: string, to?: string): Promise<ThreadDiff> {
    const query = new URLSearchParams({ from, ...(to ? { to } : {}) });
    return this.request<ThreadDiff>(`threads/${enc(threadId)}/diff?${query}`, { method: 'GET' });
  }

  /** "Try again from here": a new thread with this one's conversation up to just before the step. */
  fork(threadId: string, body: ForkRequest): Promise<Forked> {
    return this.request<Forked>(`threads/${enc(threadId)}/fork`, jsonInit('POST', body));
  }

  branches(threadId: string): Promise<BranchList> {
    return this.request<BranchList>(`threads/${enc(threadId)}/branches`, { method: 'GET' });
  }

  /** Continue without waiting for the cell that runs in the background (issue 38). */
  continueWithoutWaiting(threadId: string): Promise<RunAccepted> {
    return this.request<RunAccepted>(`threads/${enc(threadId)}/continue`, { method: 'POST' });
  }

  cancel(threadId: string): Promise<void> {
    return this.request<void>(`threads/${enc(threadId)}/cancel`, {
      method: 'POST'
    });
  }
}
