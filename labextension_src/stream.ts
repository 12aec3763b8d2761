/**
 * The event stream client: `GET threads/{id}/events` (or first the POST that
 * starts a run, answered with the same stream) read with
 * @microsoft/fetch-event-source rather than EventSource, because EventSource
 * cannot send Jupyter's token header. Requests go through
 * `ServerConnection.makeRequest`, so they authenticate exactly as
 * `requestAPI` does (token header, XSRF cookie, the server's own settings).
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';
import type { TranslationBundle } from '@jupyterlab/translation';
import { EventSourceMessage, fetchEventSource } from '@microsoft/fetch-event-source';

import { isTransient, toAPIError } from './api';
import { CellwrightEvent, StreamEvent } from './contract.gen';
import { API_NAMESPACE } from './tokens';

/** Reconnection backoff: 0.5 s, 1 s, 2 s ... up to 15 s. */
const BACKOFF_MIN_MS = 500;
const BACKOFF_MAX_MS = 15_000;
/** Normal closes in a row with no event while a run is expected, before giving up. */
const MAX_EMPTY_CLOSES = 5;

function backoffDelay(attempt: number): number {
  return Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** Math.max(0, attempt - 1));
}

export interface IStreamHandlers {
  /** The seq to resume after (the last stored event applied); null for the whole log. */
  resumeAfter(): number | null;
  /**
   * One event. An event without an `id:` line (a live-only output) comes
   * with a NaN seq: it is not stored, so it must not move the resume point.
   */
  onEvent(event: CellwrightEvent): void;
  /** The server has sent the replayed backlog; what follows is live. */
  onCaughtUp(): void;
  /** The server answered 200: the stream is open. */
  onOpen(): void;
  /**
   * The server closed the stream: return true to open it again. It closes
   * when the thread has no active run, which may be before a just-started
   * run shows.
   */
  onClose(): boolean;
  /**
   * The stream will be opened again after `delayMs`: it broke with `error`,
   * or (null) `onClose` asked for it.
   */
  onRetry(error: unknown | null, delayMs: number): void;
}

/**
 * A POST that starts a run and answers with the thread's events (`Accept:
 * text/event-stream`): the stream's first request, so the run is read with
 * no second request before its first token. Never sent twice: a failure
 * before its answer is final (the run may not have started), and the
 * stream's later requests are the GET.
 */
export interface IOpening {
  /** The route, relative to the API, e.g. `threads/{id}/runs`. */
  path: string;
  /** The JSON body. */
  body: string;
  /** The POST was answered: null once the stream is open, else why it failed. */
  onAnswered(error: unknown | null): void;
}

/** The server closed the stream while the thread was still expected to send. */
class ClosedEarly extends Error {
  constructor(readonly received: number) {
    super('closed_early'); // handled in onerror below, never shown
  }
}

/** Turn one SSE message into a panel event; null when it carries none. */
export function toEvent(message: EventSourceMessage): StreamEvent | null {
  let data: unknown;
  try {
    data = JSON.parse(message.data);
  } catch {
    console.warn('Cellwright: ignoring an event whose data is not JSON', message);
    return null;
  }
  if (!data || typeof data !== 'object' || Array.isArray(data)) {
    return null;
  }
  const fields = data as Record<string, unknown>;
  // Only a stored event (one with an `id:` line) has a seq to resume after.
  const seq = message.id
    ? typeof fields.seq === 'number'
      ? fields.seq
      : Number(message.id)
    : NaN;
  const type = message.event || (typeof fields.type === 'string' ? fields.type : 'message');
  return { ...fields, seq, type } as unknown as StreamEvent;
}

/**
 * Follow a thread's events until the stream is over: resolves when the
 * server closes it and `onClose()` asks for no more, or when `signal`
 * aborts; rejects on an error that a retry cannot fix (a 4xx answer, the
 * stream closing again and again with nothing to send). Network errors and
 * 5xx answers are retried with backoff, resuming after `resumeAfter()`.
 * With `opening`, the first request is that POST (see `IOpening`).
 */
export function followEvents(
  settings: ServerConnection.ISettings,
  threadId: string,
  handlers: IStreamHandlers,
  signal: AbortSignal,
  trans: TranslationBundle,
  opening: IOpening | null = null
): Promise<void> {
  const eventsPath = `threads/${encodeURIComponent(threadId)}/events`;
  // Previews show each token as the model writes it; the stored rows come coalesced, later.
  // `waiting`: the stream stays open while a card waits, so a decision made elsewhere (another
  // tab, another client) arrives as the thread's events, and the card and any banner go at once.
  const query = '?previews=1&waiting=1';
  const url = URLExt.join(settings.baseUrl, API_NAMESPACE, eventsPath) + query;
  let pending = opening; // until its answer: then the stream's requests are the GET
  let failures = 0;
  let emptyCloses = 0;
  let received = 0;
  if (signal.aborted) {
    opening?.onAnswered(new DOMException(trans.__('The request was stopped'), 'AbortError'));
    return Promise.resolve();
  }
  return fetchEventSource(url, {
    method: 'GET',
    signal,
    // The notebook bridge writes a background tab's cells as they run.
    openWhenHidden: true,
    fetch: (input, init) => {
      // The library moves its Last-Event-ID when it reads an `id:` line, before the
      // event is complete; resuming after the last event applied loses none.
      const headers: Record<string, string> = { ...(init?.headers as Record<string, string>) };
      delete headers['last-event-id'];
      const after = handlers.resumeAfter();
      if (after !== null) {
        headers['Last-Event-ID'] = String(after);
      }
      if (pending) {
        const post = URLExt.join(settings.baseUrl, API_NAMESPACE, pending.path) + query;
        headers['Content-Type'] = 'application/json';
        const posted = { ...init, method: 'POST', body: pending.body, headers };
        return ServerConnection.makeRequest(post, posted, settings);
      }
      return ServerConnection.makeRequest(String(input), { ...init, headers }, settings);
    },
    onopen: async response => {
      if (!response.ok) {
        const [method, path] = pending ? ['POST', pending.path] : ['GET', eventsPath];
        throw await toAPIError(response, method, path, trans);
      }
      failures = 0;
      received = 0;
      if (pending) {
        pending.onAnswered(null);
        pending = null;
      }
      handlers.onOpen();
    },
    onmessage: message => {
      if (!message.data) {
        return; // the blank line after a `: ping` comment
      }
      const event = toEvent(message);
      if (!event) {
        return;
      }
      if (event.type === 'caught_up') {
        handlers.onCaughtUp();
        return;
      }
      received++;
      try {
        handlers.onEvent(event);
      } catch (error) {
        // Thrown here it would pass for a broken stream, retried on the same event forever.
        console.error('Cellwright: could not apply an event', event, error);
      }
    },
    onclose: () => {
      if (handlers.onClose()) {
        throw new ClosedEarly(received); // fetchEventSource retries on what onclose throws
      }
    },
    onerror: error => {
      if (pending) {
        // The POST was not answered with its events: sent again it might start a second run.
        pending.onAnswered(error);
        pending = null;
        throw error;
      }
      if (error instanceof ClosedEarly) {
        if (error.received > 0) {
          // A stream that delivered is no failure: read on at once.
          emptyCloses = 0;
          handlers.onRetry(null, 0);
          return 0;
        }
        if (++emptyCloses >= MAX_EMPTY_CLOSES) {
          throw new Error(
            trans.__(
              'The event stream keeps closing before the run has finished. Reopen the thread from the history to refresh it.'
            )
          );
        }
      } else if (isTransient(error)) {
        failures++;
      } else {
        throw error;
      }
      const delay = backoffDelay(failures + emptyCloses);
      handlers.onRetry(error instanceof ClosedEarly ? null : error, delay);
      return delay;
    }
  });
}
