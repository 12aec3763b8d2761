/**
 * The inline completion client's own logic, free of JupyterLab: the streamed
 * answer of POST completions read as JSON lines, the suggestion those lines
 * make, the cells above a cell (bounded), the debounce, and one request in
 * flight per editor (starting one aborts the one before).
 */
import { Signal } from '@lumino/signaling';

import type { TranslationBundle } from '@jupyterlab/translation';

import type { CompletionChunk, CompletionUsage } from '../contract.gen';

/** Fired when a completion request ends (the footer's completion usage then reads the server's counters). */
export const completionEnded = new Signal<object, void>({});

/** Milliseconds of typing pause before a request is sent. */
export const DEBOUNCE_MS = 150;
/** The cells above sent with a request (the server cuts them to its budget). */
export const MAX_CELLS_ABOVE = 20;
export const MAX_CELL_CHARS = 5000;
/** How long a server's "completion_off" keeps the client from asking again. */
export const OFF_BACKOFF_MS = 60_000;

/** Splits a streamed body into CompletionChunks, one JSON object a line. */
export class ChunkReader {
  private pending = '';
  private readonly decoder = new TextDecoder();

  /** The chunks complete after these bytes (a line split across reads waits). */
  feed(bytes: Uint8Array | string): CompletionChunk[] {
    this.pending += typeof bytes === 'string' ? bytes : this.decoder.decode(bytes, { stream: true });
    const lines = this.pending.split('\n');
    this.pending = lines.pop() ?? '';
    return lines.flatMap(parse);
  }

  /** What is left once the body has ended. */
  end(): CompletionChunk[] {
    const rest = this.pending + this.decoder.decode();
    this.pending = '';
    return parse(rest);
  }
}

function parse(line: string): CompletionChunk[] {
  if (!line.trim()) {
    return [];
  }
  try {
    const chunk = JSON.parse(line);
    return chunk && typeof chunk === 'object' && typeof chunk.type === 'string' ? [chunk] : [];
  } catch {
    return [];
  }
}

/** The suggestion the chunks so far make: deltas append to it, `done` settles it. */
export class Suggestion {
  constructor(private _trans: TranslationBundle) {}

  text = '';
  done = false;
  error: string | null = null;

  /** Whether the shown text changed. */
  apply(chunk: CompletionChunk): boolean {
    if (this.done) {
      return false;
    }
    const before = this.text;
    if (chunk.type === 'delta') {
      this.text += chunk.text ?? '';
    } else if (chunk.type === 'done') {
      this.text = chunk.text ?? ''; // empty when the server dropped it: the ghost text goes
      this.done = true;
    } else {
      this.error = chunk.message ?? this._trans.__('The completion failed.');
      this.text = '';
      this.done = true;
    }
    return this.text !== before;
  }
}

/** The code cells above `index`, nearest first, each cut to its end, at most MAX_CELLS_ABOVE. */
export function cellsAbove(cells: { type: string; source: string }[], index: number): string[] {
  const out: string[] = [];
  for (let i = Math.min(index, cells.length) - 1; i >= 0 && out.length < MAX_CELLS_ABOVE; i--) {
    const { type, source } = cells[i];
    if (type === 'code' && source.trim()) {
      out.push(source.length > MAX_CELL_CHARS ? source.slice(-MAX_CELL_CHARS) : source);
    }
  }
  return out;
}

/** Waits `ms`; false when `signal` aborted first. */
export function wait(ms: number, signal: AbortSignal): Promise<boolean> {
  return new Promise(resolve => {
    if (signal.aborted) {
      resolve(false);
      return;
    }
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', stop);
      resolve(true);
    }, ms);
    const stop = (): void => {
      clearTimeout(timer);
      resolve(false);
    };
    signal.addEventListener('abort', stop, { once: true });
  });
}

/** At most one request per editor: starting one aborts the one in flight there. */
export class InFlight {
  private readonly controllers = new Map<string, AbortController>();

  start(key: string): AbortController {
    this.controllers.get(key)?.abort();
    const controller = new AbortController();
    this.controllers.set(key, controller);
    return controller;
  }

  finish(key: string, controller: AbortController): void {
    if (this.controllers.get(key) === controller) {
      this.controllers.delete(key);
    }
  }

  get size(): number {
    return this.controllers.size;
  }

  abortAll(): void {
    for (const controller of this.controllers.values()) {
      controller.abort();
    }
    this.controllers.clear();
  }
}

const NUMBER = new Intl.NumberFormat('en-US');

/**
 * "Inline completion: 12 requests (5 from the cache) · 3,400 prompt · 210 completion tokens",
 * apart from the thread's usage (completions belong to no thread); null before the first one.
 */
export function completionUsageText(trans: TranslationBundle, usage: CompletionUsage): string | null {
  if (usage.requests === 0 && usage.cached === 0) {
    return null;
  }
  // `_n` puts the count in %1; the formatted count ("3,400") goes in %2.
  const requests = trans._n('%2 request', '%2 requests', usage.requests, NUMBER.format(usage.requests));
  const cached = usage.cached ? trans.__(' (%1 more from the cache)', NUMBER.format(usage.cached)) : '';
  const tokens = trans.__(
    '%1 prompt · %2 completion tokens',
    NUMBER.format(usage.prompt_tokens),
    NUMBER.format(usage.completion_tokens)
  );
  return trans.__('Inline completion: %1%2 · %3%4', requests, cached, usage.estimated ? '≈ ' : '', tokens);
}
