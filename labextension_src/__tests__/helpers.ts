/**
 * What the panel's unit tests share: recorded event streams, a Jupyter
 * server faked at the `fetch` level (so requests go through the real
 * ServerConnection, auth headers included), and SSE bodies.
 */
import { ServerConnection } from '@jupyterlab/services';
import type { TranslationBundle } from '@jupyterlab/translation';
import * as fs from 'node:fs';
import * as path from 'node:path';

import { CellwrightEvent } from '../contract.gen';
import type { IKeyValueStore } from '../model';

// fetch-event-source reaches for `window` (timers) and `document` (page
// visibility): Node has neither. They are installed only after
// @jupyterlab/services has loaded, which picks its WebSocket by `window`.
// With a `document`, JupyterLab's URLExt parses URLs with an <a> element.
const browser = globalThis as any;
if (typeof browser.window === 'undefined') {
  browser.window = globalThis;
  browser.document = {
    hidden: false,
    cookie: '',
    addEventListener: () => undefined,
    removeEventListener: () => undefined,
    getElementById: () => null,
    createElement: () => new Anchor()
  };
}

/** What an <a> element offers as a parsed URL. */
class Anchor {
  get href(): string {
    return this._url.href;
  }
  set href(value: string) {
    this._url = new URL(value, 'http://jupyter.test/');
  }
  get protocol(): string {
    return this._url.protocol;
  }
  get host(): string {
    return this._url.host;
  }
  get hostname(): string {
    return this._url.hostname;
  }
  get port(): string {
    return this._url.port;
  }
  get pathname(): string {
    return this._url.pathname;
  }
  get search(): string {
    return this._url.search;
  }
  get hash(): string {
    return this._url.hash;
  }
  toString(): string {
    return this.href;
  }
  private _url = new URL('http://jupyter.test/');
}

/** Set the page's cookies (ServerConnection reads `_xsrf` from them). */
export function setCookie(cookie: string): void {
  browser.document.cookie = cookie;
}

// ------------------------------------------------------------------ translation

/** `%1`, `%2`... filled in, `%%` kept as `%`: @jupyterlab/translation's Gettext.strfmt. */
function strfmt(fmt: string, args: readonly unknown[]): string {
  return fmt
    .replace(/%%/g, '%% ')
    .replace(/%(\d+)/g, (_, n: string) => String(args[Number(n) - 1]))
    .replace(/%% /g, '%');
}

function ngettext(one: string, many: string, n: number, ...args: unknown[]): string {
  return strfmt(n === 1 ? one : many, [n, ...args]);
}

/**
 * The bundle the panel gets from JupyterLab's nullTranslator (no language
 * pack): the English text, placeholders filled in. Written out because
 * @jupyterlab/translation's ES modules do not load in these CommonJS tests.
 */
export const trans: TranslationBundle = {
  __: (msgid, ...args) => strfmt(msgid, args),
  _n: ngettext,
  _p: (_, msgid, ...args) => strfmt(msgid, args),
  _np: (_, one, many, n, ...args) => ngettext(one, many, n, ...args),
  gettext: (msgid, ...args) => strfmt(msgid, args),
  ngettext,
  pgettext: (_, msgid, ...args) => strfmt(msgid, args),
  npgettext: (_, one, many, n, ...args) => ngettext(one, many, n, ...args),
  dcnpgettext: (_domain, _context, one, many, n, ...args) => ngettext(one, many, n, ...args)
};

// ------------------------------------------------------------------ recorded streams

/** One SSE message as the server wrote it (`id` null without an `id:` line). */
export interface IRecordedMessage {
  id: string | null;
  event: string;
  data: Record<string, unknown>;
}

export interface IRecording {
  description: string;
  events: CellwrightEvent[];
  /** replay_overlap.json: what each connection delivered, in order. */
  connections?: IRecordedMessage[][];
  resumed_after?: number;
}

/** A recording of devtools/record_panel_streams.py. */
export function recording(name: string): IRecording {
  // Compiled to lib/__cjs__/__tests__/: the JSON stays next to the sources.
  const file = path.resolve(__dirname, '../../../labextension_src/__tests__/fixtures', name);
  return JSON.parse(fs.readFileSync(file, 'utf8'));
}

/** The stored events as SSE messages, as the server sends them. */
export function asMessages(events: readonly CellwrightEvent[]): IRecordedMessage[] {
  return events.map(event => ({
    id: String(event.seq),
    event: event.type,
    data: event as unknown as Record<string, unknown>
  }));
}

export function caughtUp(seq: number): IRecordedMessage {
  return { id: null, event: 'caught_up', data: { type: 'caught_up', seq, thread_id: 'thread-1' } };
}

export function sse(messages: readonly IRecordedMessage[]): string {
  return messages
    .map(m => `${m.id === null ? '' : `id: ${m.id}\n`}event: ${m.event}\ndata: ${JSON.stringify(m.data)}\n\n`)
    .join('');
}

// ------------------------------------------------------------------ hand-made events

let counter = 0;

/** Start numbering hand-made events from 1 again. */
export function resetSeq(): void {
  counter = 0;
}

/** A hand-made event with the next seq (for cases no recording covers). */
export function ev(type: string, fields: Record<string, unknown> = {}): CellwrightEvent {
  counter += 1;
  return {
    type,
    seq: counter,
    thread_id: 't1',
    run_id: 'r1',
    agent: 'main',
    ...fields
  } as unknown as CellwrightEvent;
}

// ------------------------------------------------------------------ a fake server

export interface ICall {
  url: string;
  method: string;
  headers: Headers;
  body: string;
  signal: AbortSignal;
}

export type Handler = (call: ICall, n: number) => Response | Promise<Response>;

/** Server settings whose fetch answers from `handler`; `calls` records every request. */
export function fakeServer(handler: Handler): {
  settings: ServerConnection.ISettings;
  calls: ICall[];
} {
  const calls: ICall[] = [];
  const settings = ServerConnection.makeSettings({
    baseUrl: 'http://jupyter.test/',
    wsUrl: 'ws://jupyter.test/',
    token: 'secret',
    fetch: async (input: RequestInfo, init?: RequestInit) => {
      const request = new Request(input, init);
      const call = {
        url: request.url,
        method: request.method,
        headers: request.headers,
        body: request.method === 'GET' ? '' : await request.text(),
        signal: request.signal
      };
      calls.push(call);
      return handler(call, calls.length);
    }
  });
  return { settings, calls };
}

export interface IStreamPlan {
  /** SSE text, written chunk by chunk. */
  chunks: string[];
  /** Milliseconds between chunks. */
  pauseMs?: number;
  /** End with a network failure instead of a normal close. */
  fail?: boolean;
  /** The request's signal: an abort breaks the body, as it does in a browser. */
  signal?: AbortSignal;
  /** Held open after the chunks until this settles (a stream the server keeps open). */
  holdUntil?: Promise<void>;
}

/** A `text/event-stream` answer that writes `plan.chunks`, then closes or breaks. */
export function streamResponse(plan: IStreamPlan): Response {
  const encoder = new TextEncoder();
  let cancelled = false;
  const body = new ReadableStream<Uint8Array>({
    async start(controller) {
      for (const chunk of plan.chunks) {
        if (cancelled) {
          return;
        }
        if (plan.signal?.aborted) {
          controller.error(new DOMException('The request was aborted', 'AbortError'));
          return;
        }
        controller.enqueue(encoder.encode(chunk));
        await sleep(plan.pauseMs ?? 1);
      }
      await plan.holdUntil;
      if (plan.fail) {
        controller.error(new TypeError('network down'));
      } else {
        controller.close();
      }
    },
    cancel() {
      cancelled = true;
    }
  });
  return new Response(body, { status: 200, headers: { 'Content-Type': 'text/event-stream' } });
}

/** A key-value store in memory (the panel's localStorage), its entries in `data`. */
export function memoryStore(): IKeyValueStore & { data: Map<string, string> } {
  const data = new Map<string, string>();
  return {
    data,
    getItem: key => data.get(key) ?? null,
    setItem: (key, value) => void data.set(key, value),
    removeItem: key => void data.delete(key)
  };
}

/** The request asks to be answered with the thread's events (a POST that starts a run). */
export function wantsEvents(call: ICall): boolean {
  return (call.headers.get('accept') ?? '').includes('text/event-stream');
}

export function jsonResponse(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'Content-Type': 'application/json' }
  });
}

export const sleep = (ms: number): Promise<void> => new Promise(r => setTimeout(r, ms));

/** Resolves once `condition()` holds; rejects after `timeoutMs`. */
export async function until(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) {
      throw new Error(`not reached in ${timeoutMs} ms: ${condition}`);
    }
    await sleep(5);
  }
}

/** Resolves when `signal` emits next. */
export function next<T>(signal: { connect(fn: (sender: any, args: T) => void): boolean }): Promise<T> {
  return new Promise(resolve => {
    let done = false;
    signal.connect((_, args) => {
      if (!done) {
        done = true;
        resolve(args);
      }
    });
  });
}
