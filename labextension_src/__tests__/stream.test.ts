/**
 * The event stream client and the ThreadModel that drives it, against a
 * server faked at the `fetch` level: replay then live (`caught_up`),
 * resuming with Last-Event-ID after a break, a replay that overlaps live
 * events, live-only outputs, reconnect policy, errors and stopping.
 */
import * as assert from 'node:assert/strict';
import { afterEach, mock, test } from 'node:test';

import { CellwrightAPI } from '../api';
import { EMPTY_VIEW, reduceEvents, ThreadModel } from '../model';
import { toEvent } from '../stream';
import { CellwrightEvent } from '../contract.gen';
import {
  asMessages,
  caughtUp,
  fakeServer,
  Handler,
  ICall,
  jsonResponse,
  next,
  recording,
  setCookie,
  sse,
  streamResponse,
  trans,
  until
} from './helpers';

const threads: ThreadModel[] = [];

function threadOn(handler: Handler): { thread: ThreadModel; calls: ICall[]; live: CellwrightEvent[] } {
  const { settings, calls } = fakeServer(handler);
  const thread = new ThreadModel({ api: new CellwrightAPI(settings, trans), threadId: 'thread-1' });
  const live: CellwrightEvent[] = [];
  thread.liveEvent.connect((_, event) => live.push(event));
  threads.push(thread);
  return { thread, calls, live };
}

afterEach(() => {
  threads.splice(0).forEach(thread => thread.dispose());
  setCookie('');
});

test('toEvent: the type from the event field, the seq only with an id line', () => {
  const stored = toEvent({ id: '7', event: 'token', data: '{"seq":7,"text":"hi"}', retry: undefined });
  assert.equal(stored?.type, 'token');
  assert.equal(stored?.seq, 7);
  const unstored = toEvent({ id: '', event: 'cell_output', data: '{"seq":99,"live_only":true}', retry: undefined });
  assert.ok(Number.isNaN(unstored?.seq));
  assert.equal(toEvent({ id: '8', event: 'token', data: 'not json', retry: undefined }), null);
});

test('recorded overlap: each event applied once, live once, resumed after the last stored seq', async () => {
  const { events, connections } = recording('replay_overlap.json');
  assert.ok(connections && connections.length === 2);
  setCookie('_xsrf=xsrf-cookie');
  const { thread, calls, live } = threadOn((_, n) =>
    n === 1
      ? streamResponse({ chunks: [': ping\n\n', ...connections[0].map(m => sse([m]))], fail: true })
      : streamResponse({ chunks: connections[1].map(m => sse([m])) })
  );
  const ended = next(thread.streamEnded);
  thread.connect({ replay: true });
  assert.equal(thread.catchingUp, true);
  await ended;

  const lastStored = Math.max(...connections[0].filter(m => m.id !== null).map(m => Number(m.id)));
  assert.equal(calls.length, 2);
  assert.equal(calls[0].headers.get('Last-Event-ID'), null, 'the first open asks for everything');
  assert.equal(calls[1].headers.get('Last-Event-ID'), String(lastStored));
  for (const call of calls) {
    assert.match(call.url, /^http:\/\/jupyter\.test\/cellwright\/api\/threads\/thread-1\/events/);
    assert.doesNotMatch(call.url, /after=/, 'the header alone says where to resume');
    assert.equal(call.headers.get('Authorization'), 'token secret');
    assert.equal(call.headers.get('X-XSRFToken'), 'xsrf-cookie');
  }

  const backlog = connections[0].findIndex(m => m.event === 'caught_up');
  const firstLive = Number(connections[0][backlog - 1].id) + 1;
  assert.deepEqual(
    live.map(e => e.seq),
    events.filter(e => (e.seq as number) >= firstLive).map(e => e.seq),
    'the backlog is not live; what the second connection repeats is not live twice'
  );
  assert.deepEqual(thread.view, reduceEvents(EMPTY_VIEW, events));
  assert.equal(thread.view.status, 'idle');
  assert.equal(thread.catchingUp, false);
  assert.equal(thread.connection, 'closed');
});

test('a live-only output reaches the notebook bridge but never the resume point', async () => {
  const { events } = recording('single_agent.json');
  const cut = events.findIndex(e => e.type === 'cell_started') + 1;
  const unstored = {
    id: null,
    event: 'cell_output',
    data: { ...events[cut], seq: 99, live_only: true }
  };
  const { thread, calls, live } = threadOn((_, n) =>
    n === 1
      ? streamResponse({ chunks: [sse([...asMessages(events.slice(0, cut)), caughtUp(cut), unstored])], fail: true })
      : streamResponse({ chunks: [sse(asMessages(events.slice(cut)))] })
  );
  const ended = next(thread.streamEnded);
  thread.connect({ replay: true });
  await ended;
  assert.equal(calls[1].headers.get('Last-Event-ID'), String(events[cut - 1].seq));
  assert.equal(live[0].type, 'cell_output');
  assert.equal((live[0] as { live_only?: boolean }).live_only, true);
  assert.deepEqual(thread.view, reduceEvents(EMPTY_VIEW, events));
});

test('an error answer ends the stream and is reported, without retrying', async () => {
  const { thread, calls } = threadOn(() => jsonResponse(404, { error: 'not_found', message: 'No thread t9.' }));
  const errors: string[] = [];
  thread.errorRaised.connect((_, error) => errors.push((error as Error).message));
  const ended = next(thread.streamEnded);
  thread.connect({ replay: true });
  await ended;
  assert.deepEqual(errors, ['No thread t9.']);
  assert.equal(calls.length, 1);
});

test('a 5xx answer is retried with backoff; the status line says why', async () => {
  const { events } = recording('single_agent.json');
  const { thread, calls } = threadOn((_, n) =>
    n === 1
      ? jsonResponse(503, { error: 'unavailable', message: 'Try later.' })
      : streamResponse({ chunks: [sse([...asMessages(events), caughtUp(events.length)])] })
  );
  const ended = next(thread.streamEnded);
  thread.connect();
  await until(() => thread.connection === 'reconnecting');
  assert.equal(thread.lastError, 'Try later.');
  await ended;
  assert.equal(calls.length, 2);
  assert.equal(thread.view.status, 'idle');
});

test('a stream that closes before a just-started run shows is opened again', async () => {
  const { events } = recording('single_agent.json');
  const { thread, calls, live } = threadOn((_, n) =>
    n === 1
      ? streamResponse({ chunks: [sse([caughtUp(0)])] })
      : streamResponse({ chunks: [sse([caughtUp(0), ...asMessages(events)])] })
  );
  const ended = next(thread.streamEnded);
  thread.connect({ expectRunAfter: thread.runsStarted });
  await ended;
  assert.equal(calls.length, 2);
  assert.equal(live.length, events.length, 'a new run is live from its first event');
});

test('a run whose run_started came before its request was answered is not waited for again', async () => {
  // The server is fast: the open stream brings the run (run_started first) before the POST that
  // asked for it is answered; the panel then asks to follow the run it already has.
  const { events } = recording('single_agent.json');
  const { thread, calls } = threadOn((_, n) =>
    n === 1
      ? streamResponse({ chunks: [sse([...asMessages(events), caughtUp(events.length)])] })
      : streamResponse({ chunks: [sse([caughtUp(events.length)])] })
  );
  const before = thread.runsStarted; // read before the request went out
  let ended = next(thread.streamEnded);
  thread.connect();
  await ended;
  assert.ok(thread.runsStarted > before);
  ended = next(thread.streamEnded);
  thread.connect({ expectRunAfter: before }); // the request's answer
  await ended;
  assert.equal(calls.length, 2, 'read once more, not reopened until it gives up');
  assert.equal(thread.view.status, 'idle');
});

test('a stream closed mid-run after delivering is read on at once', async () => {
  const { events } = recording('single_agent.json');
  const { thread, calls } = threadOn((_, n) =>
    n === 1
      ? streamResponse({ chunks: [sse([...asMessages(events.slice(0, 2)), caughtUp(2)])] })
      : streamResponse({ chunks: [sse([...asMessages(events.slice(2)), caughtUp(events.length)])] })
  );
  const started = Date.now();
  const ended = next(thread.streamEnded);
  thread.connect();
  await ended;
  assert.ok(Date.now() - started < 400, 'no backoff after a stream that made progress');
  assert.equal(calls[1].headers.get('Last-Event-ID'), '2');
  assert.equal(thread.view.status, 'idle');
});

test('a stream that keeps closing with nothing to send gives up', async () => {
  // Four backoff delays (0.5 s to 4 s): let a virtual clock run them.
  mock.timers.enable({ apis: ['setTimeout'] });
  try {
    const { thread, calls } = threadOn(() => new Response(sse([caughtUp(0)]), { status: 200 }));
    const errors: string[] = [];
    thread.errorRaised.connect((_, error) => errors.push((error as Error).message));
    let ended = false;
    thread.streamEnded.connect(() => (ended = true));
    thread.connect({ expectRunAfter: thread.runsStarted });
    for (let i = 0; i < 100 && !ended; i++) {
      await new Promise(resolve => setImmediate(resolve));
      mock.timers.tick(250);
    }
    assert.equal(ended, true);
    assert.equal(calls.length, 5);
    assert.match(errors[0], /keeps closing/);
  } finally {
    mock.timers.reset();
  }
});

test('dispose stops the stream', async () => {
  const { thread, calls } = threadOn(call =>
    streamResponse({
      chunks: [sse([caughtUp(0)]), ...Array(500).fill(': ping\n\n')],
      pauseMs: 10,
      signal: call.signal
    })
  );
  thread.connect();
  await until(() => thread.connection === 'open');
  assert.equal(thread.streaming, true);
  thread.dispose();
  assert.equal(calls[0].signal.aborted, true);
  await new Promise(r => setTimeout(r, 50));
  assert.equal(calls.length, 1, 'no reconnect after dispose');
});
