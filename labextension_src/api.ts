/**
 * The REST client and the event-stream client. Every request goes through
 * `requestAPI`, which turns the server's `{"error", "message"}` answers into
 * an `APIError` (a `ServerConnection.ResponseError`) carrying that message.
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import {
  API_NAMESPACE,
  CellwrightEvent,
  IApprovalRequest,
  ICreateThreadRequest,
  IHealth,
  IRunAccepted,
  IRunRequest,
  IServerConfig,
  IServerConfigUpdate,
  IThread,
  IThreadDetail,
  IThreadList
} from './tokens';

/**
 * An error answer from the server. `message` is the server's own message
 * (or a description of what went wrong when the body was not JSON); `kind`
 * is its `error` field.
 */
export class APIError extends ServerConnection.ResponseError {
  constructor(response: Response, message: string, readonly kind: string) {
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
export function errorMessage(error: unknown): string {
  if (error instanceof ServerConnection.NetworkError) {
    return `Cannot reach the Jupyter server: ${error.message}`;
  }
  if (error instanceof Error) {
    return error.message;
  }
  return String(error);
}

function isAbort(error: unknown): boolean {
  return (
    typeof error === 'object' &&
    error !== null &&
    (error as { name?: string }).name === 'AbortError'
  );
}

/** Build an `APIError` from a failed response, reading its JSON body. */
async function toAPIError(
  response: Response,
  method: string,
  path: string
): Promise<APIError> {
  let text = '';
  try {
    text = await response.text();
  } catch {
    // keep the empty body
  }
  let kind = `http_${response.status}`;
  let message = '';
  try {
    const body = JSON.parse(text);
    if (body && typeof body === 'object') {
      if (typeof body.error === 'string') {
        kind = body.error;
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
    message = `${method} ${API_NAMESPACE}/${path} answered ${response.status} ${response.statusText}`.trim();
    if (response.status === 404) {
      message +=
        '. Is the Cellwright server extension installed and enabled? ' +
        'Check `jupyter server extension list`.';
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
  settings: ServerConnection.ISettings = ServerConnection.makeSettings()
): Promise<T> {
  const url = URLExt.join(settings.baseUrl, API_NAMESPACE, path);
  const method = (init.method ?? 'GET').toUpperCase();
  let response: Response;
  try {
    response = await ServerConnection.makeRequest(url, init, settings);
  } catch (error) {
    if (init.signal?.aborted || isAbort(error)) {
      throw new DOMException('The request was stopped', 'AbortError');
    }
    throw error instanceof ServerConnection.NetworkError
      ? error
      : new ServerConnection.NetworkError(error as TypeError);
  }
  if (!response.ok) {
    throw await toAPIError(response, method, path);
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
      `${method} ${API_NAMESPACE}/${path}: the answer is not JSON`,
      'bad_response'
    );
  }
}

function jsonInit(method: string, body: unknown): RequestInit {
  return {
    method,
    body: JSON.stringify(body),
    headers: { 'Content-Type': 'application/json' }
  };
}

const enc = encodeURIComponent;

// ---------------------------------------------------------------- SSE

/** One Server-Sent Event as read from the wire. */
export interface ISSEMessage {
  /**
   * This message's own `id:` line; null without one. Unlike EventSource's
   * last-event-id buffer, it is not carried over: an event the server does
   * not store (a live-only output) has no id and must not pass for the last one.
   */
  id: string | null;
  event: string;
  data: string;
}

/**
 * An incremental `text/event-stream` parser (the WHATWG rules that matter
 * here): `field: value` lines, blank line dispatches, lines starting with
 * `:` are comments (`: ping`), several `data:` lines join with newlines.
 */
export class SSEParser {
  push(chunk: string): ISSEMessage[] {
    this._buffer += chunk;
    const out: ISSEMessage[] = [];
    // A trailing lone "\r" may be the first half of "\r\n": keep it buffered.
    const lines = this._buffer.split(/\r\n|\r(?!$)|\n/);
    this._buffer = lines.pop() ?? '';
    for (const line of lines) {
      const message = this._line(line);
      if (message) {
        out.push(message);
      }
    }
    return out;
  }

  private _line(line: string): ISSEMessage | null {
    if (line === '') {
      if (this._data === null) {
        this._event = '';
        this._id = null;
        return null;
      }
      const message = {
        id: this._id,
        event: this._event || 'message',
        data: this._data
      };
      this._data = null;
      this._event = '';
      this._id = null;
      return message;
    }
    if (line.startsWith(':')) {
      return null; // a comment, e.g. the server's ": ping"
    }
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) {
      value = value.slice(1);
    }
    switch (field) {
      case 'data':
        this._data = this._data === null ? value : `${this._data}\n${value}`;
        break;
      case 'event':
        this._event = value;
        break;
      case 'id':
        this._id = value;
        break;
      default:
        break; // "retry" and unknown fields
    }
    return null;
  }

  private _buffer = '';
  private _data: string | null = null;
  private _event = '';
  private _id: string | null = null;
}

/** Turn one SSE message into a panel event; null when it carries none. */
export function toEvent(message: ISSEMessage): CellwrightEvent | null {
  let data: Record<string, unknown>;
  try {
    data = JSON.parse(message.data);
  } catch {
    console.warn('Cellwright: ignoring an event whose data is not JSON', message);
    return null;
  }
  if (!data || typeof data !== 'object') {
    return null;
  }
  // Only a stored event (one with an `id:` line) has a seq to resume after.
  const seq =
    message.id === null
      ? NaN
      : typeof data.seq === 'number'
        ? data.seq
        : Number(message.id);
  return { ...data, seq, type: message.event } as unknown as CellwrightEvent;
}

export interface IStreamOptions {
  /** Ask for the events with a seq greater than this; null: all of them. */
  after: number | null;
  signal: AbortSignal;
  onEvent: (event: CellwrightEvent) => void;
  /** Called once the server has answered 200 and the body starts. */
  onOpen?: () => void;
}

// ---------------------------------------------------------------- client

/** The Cellwright REST client: one method per route of API.md. */
export class CellwrightAPI {
  constructor(
    readonly serverSettings: ServerConnection.ISettings = ServerConnection.makeSettings()
  ) {}

  request<T>(path: string, init: RequestInit = {}): Promise<T> {
    return requestAPI<T>(path, init, this.serverSettings);
  }

  health(): Promise<IHealth> {
    return this.request<IHealth>('health');
  }

  getConfig(): Promise<IServerConfig> {
    return this.request<IServerConfig>('config');
  }

  putConfig(update: IServerConfigUpdate): Promise<IServerConfig> {
    return this.request<IServerConfig>('config', jsonInit('PUT', update));
  }

  createThread(body: ICreateThreadRequest): Promise<IThread> {
    return this.request<IThread>('threads', jsonInit('POST', body));
  }

  async listThreads(): Promise<IThread[]> {
    const answer = await this.request<IThreadList>('threads');
    return answer?.threads ?? [];
  }

  getThread(threadId: string): Promise<IThreadDetail> {
    return this.request<IThreadDetail>(`threads/${enc(threadId)}`);
  }

  deleteThread(threadId: string): Promise<void> {
    return this.request<void>(`threads/${enc(threadId)}`, { method: 'DELETE' });
  }

  startRun(threadId: string, body: IRunRequest): Promise<IRunAccepted> {
    return this.request<IRunAccepted>(
      `threads/${enc(threadId)}/runs`,
      jsonInit('POST', body)
    );
  }

  decide(
    threadId: string,
    toolCallId: string,
    body: IApprovalRequest
  ): Promise<void> {
    return this.request<void>(
      `threads/${enc(threadId)}/approvals/${enc(toolCallId)}`,
      jsonInit('POST', body)
    );
  }

  cancel(threadId: string): Promise<void> {
    return this.request<void>(`threads/${enc(threadId)}/cancel`, {
      method: 'POST'
    });
  }

  /**
   * Read `GET threads/{id}/events?after=N` until the server closes it.
   * Resolves on a normal close; rejects with `APIError` on an error status,
   * with a network error when the connection breaks, and with an
   * `AbortError` when `signal` aborts.
   *
   * `fetch` is used rather than `EventSource` so that the request carries
   * Jupyter's token header like every other request.
   */
  async streamEvents(threadId: string, options: IStreamOptions): Promise<void> {
    const query = options.after === null ? '' : `?after=${options.after}`;
    const path = `threads/${enc(threadId)}/events${query}`;
    const url = URLExt.join(this.serverSettings.baseUrl, API_NAMESPACE, path);
    let response: Response;
    try {
      response = await ServerConnection.makeRequest(
        url,
        {
          method: 'GET',
          headers: { Accept: 'text/event-stream' },
          signal: options.signal
        },
        this.serverSettings
      );
    } catch (error) {
      if (options.signal.aborted || isAbort(error)) {
        throw new DOMException('The stream was stopped', 'AbortError');
      }
      throw error instanceof ServerConnection.NetworkError
        ? error
        : new ServerConnection.NetworkError(error as TypeError);
    }
    if (!response.ok) {
      throw await toAPIError(response, 'GET', path);
    }
    if (!response.body) {
      throw new APIError(response, 'The event stream has no body', 'bad_response');
    }
    options.onOpen?.();
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    const parser = new SSEParser();
    const abort = () => void reader.cancel().catch(() => undefined);
    options.signal.addEventListener('abort', abort);
    try {
      for (;;) {
        let chunk: ReadableStreamReadResult<Uint8Array>;
        try {
          chunk = await reader.read();
        } catch (error) {
          if (options.signal.aborted || isAbort(error)) {
            throw new DOMException('The stream was stopped', 'AbortError');
          }
          throw new ServerConnection.NetworkError(error as TypeError);
        }
        if (options.signal.aborted) {
          throw new DOMException('The stream was stopped', 'AbortError');
        }
        // An event cut off by the close is dropped, as the SSE spec says.
        const text = chunk.done
          ? decoder.decode()
          : decoder.decode(chunk.value, { stream: true });
        for (const message of parser.push(text)) {
          const event = toEvent(message);
          if (event) {
            options.onEvent(event);
          }
        }
        if (chunk.done) {
          return;
        }
      }
    } finally {
      options.signal.removeEventListener('abort', abort);
    }
  }
}

export { isAbort };
