/**
 * The PanelModel's actions against a faked server: sending creates the
 * thread and follows its run live, reopening a thread replays it without
 * re-emitting it, a decision is posted once however often it is clicked,
 * and the REST client's error answers.
 */
import * as assert from 'node:assert/strict';
import { ServerConnection } from '@jupyterlab/services';
import { afterEach, test } from 'node:test';

import { APIError, CellwrightAPI, requestAPI } from '../api';
import { ILiveEvent, IKeyValueStore, PanelModel } from '../model';
import { agentLabel } from '../tokens';
import {
  asMessages,
  caughtUp,
  ev,
  fakeServer,
  Handler,
  ICall,
  jsonResponse,
  memoryStore,
  recording,
  resetSeq,
  sleep,
  sse,
  streamResponse,
  trans,
  until,
  wantsEvents
} from './helpers';

const panels: PanelModel[] = [];

function panelOn(handler: Handler, storage: IKeyValueStore | null = null) {
  const { settings, calls } = fakeServer(handler);
  const panel = new PanelModel({ trans, api: new CellwrightAPI(settings, trans), version: '0.1.0', storage });
  const live: ILiveEvent[] = [];
  panel.liveEvent.connect((_, event) => live.push(event));
  panels.push(panel);
  return { panel, calls, live };
}

function route(call: ICall): string {
  return `${call.method} ${new URL(call.url).pathname.replace('/cellwright/api/', '')}`;
}

afterEach(() => {
  panels.splice(0).forEach(panel => panel.dispose());
});

test('send: creates the thread, starts the run with the notebook, follows it live on the answer', async () => {
  const { events } = recording('single_agent.json');
  const paused = events.findIndex(e => e.type === 'run_finished') + 1;
  const { panel, calls, live } = panelOn(call => {
    switch (route(call)) {
      case 'POST threads':
        return jsonResponse(201, { thread_id: 'thread-1', title: 'q', notebook_path: 'analysis.ipynb' });
      case 'POST threads/thread-1/runs':
        if (!wantsEvents(call)) {
          return jsonResponse(202, { run_id: 'run-1' });
        }
        return streamResponse({ chunks: [sse([caughtUp(0), ...asMessages(events.slice(0, paused))])] });
      default:
        return jsonResponse(500, { error: 'internal', message: `unexpected ${route(call)}` });
    }
  });
  panel.setNotebook({ path: 'analysis.ipynb', kernelId: () => 'kernel-1' });
  assert.equal(await panel.send('load data.csv and show its shape'), true);
  await until(() => panel.view.status === 'awaiting_approval');
  // One request for the run and its events: no GET of the stream before the first token.
  assert.deepEqual(
    calls.map(route).filter(r => r.startsWith('POST') || r.includes('events')),
    ['POST threads', 'POST threads/thread-1/runs']
  );
  const query = new URL(calls[calls.length - 1].url).searchParams;
  assert.deepEqual([query.get('previews'), query.get('waiting')], ['1', '1']);
  const run = calls.find(c => route(c) === 'POST threads/thread-1/runs');
  assert.deepEqual(JSON.parse(run!.body), {
    message: 'load data.csv and show its shape',
    mode: 'single',
    autonomy: 'agent',
    notebook_path: 'analysis.ipynb',
    kernel_id: 'kernel-1'
  });
  assert.equal(live.length, paused, 'a run started here is live from its first event');
  assert.equal(panel.pendingApproval?.id, 'call_load');
});

test('send: a refused or unanswered run request is reported once and never sent again', async () => {
  for (const failure of ['refused', 'network'] as const) {
    const { panel, calls } = panelOn(call => {
      if (route(call) === 'POST threads') {
        return jsonResponse(201, { thread_id: 'thread-1', title: 'q', notebook_path: null });
      }
      if (failure === 'network') {
        throw new TypeError('Failed to fetch');
      }
      return jsonResponse(409, { error: 'conflict', message: 'A run is already active on this thread.' });
    });
    // send answers once the stream is over (its failed opening ends it): no retry can follow.
    assert.equal(await panel.send('go'), false, failure);
    assert.deepEqual(calls.map(route), ['POST threads', 'POST threads/thread-1/runs'], failure);
    assert.equal(panel.errors.length, 1, `${failure}: one report, not one more from the stream`);
    if (failure === 'refused') {
      assert.match(panel.errors[0].message, /already active/);
    }
    assert.equal(panel.thread?.connection, 'closed');
  }
});

test('send: an answer that closes before its run_started is read again until the run shows', async () => {
  resetSeq();
  const started = ev('run_started', { message: 'go' });
  const finished = ev('run_finished', { status: 'completed' });
  const { panel, calls } = panelOn(call => {
    if (route(call) === 'POST threads') {
      return jsonResponse(201, { thread_id: 'thread-1', title: 'q', notebook_path: null });
    }
    if (route(call) === 'POST threads/thread-1/runs') {
      // An outside agent's run: it starts after the answer, whose stream has nothing yet.
      return streamResponse({ chunks: [sse([caughtUp(0)])] });
    }
    return streamResponse({ chunks: [sse([...asMessages([started, finished]), caughtUp(2)])] });
  });
  assert.equal(await panel.send('go'), true);
  await until(() => panel.thread?.runsStarted === 1 && panel.thread.connection === 'closed');
  assert.deepEqual(calls.map(route).slice(1, 3), ['POST threads/thread-1/runs', 'GET threads/thread-1/events']);
});

test('send while the stream is open: a plain POST, its run read on that stream', async () => {
  resetSeq();
  const started = ev('run_started', { message: 'again' });
  let releaseHeld = (): void => undefined;
  let held = false;
  const { panel, calls } = panelOn(async call => {
    if (route(call) === 'GET threads/thread-1/events' && !held) {
      held = true;
      // The stream held open while a background cell runs: it ends only when told.
      return streamResponse({ chunks: [sse([caughtUp(0)])], holdUntil: new Promise(r => (releaseHeld = r)) });
    }
    if (route(call) === 'POST threads/thread-1/runs') {
      assert.equal(wantsEvents(call), false);
      return jsonResponse(202, { run_id: 'r2' });
    }
    return streamResponse({ chunks: [sse([...asMessages([started]), caughtUp(1)])] });
  });
  void panel.openThread('thread-1');
  await until(() => panel.thread?.connection === 'open');
  assert.equal(await panel.send('again'), true);
  releaseHeld();
  await until(() => panel.thread!.runsStarted === 1);
  // The open stream ends (it was held open for something else) and is read again for the run.
  assert.deepEqual(
    calls
      .map(route)
      .filter(r => r.includes('runs') || r.includes('events'))
      .slice(0, 3),
    ['GET threads/thread-1/events', 'POST threads/thread-1/runs', 'GET threads/thread-1/events']
  );
});

test('openThread: the backlog rebuilds the view and is not live', async () => {
  const { events } = recording('multi_agent.json');
  const storage = memoryStore();
  const { panel, live } = panelOn(
    () => streamResponse({ chunks: [sse([...asMessages(events), caughtUp(events.length)])] }),
    storage
  );
  panel.setNotebook({ path: 'analysis.ipynb', kernelId: () => undefined });
  void panel.openThread('thread-1');
  assert.equal(panel.loadingThread, true);
  await until(() => panel.view.status === 'idle' && !panel.loadingThread && panel.view.items.length > 0);
  assert.deepEqual(live, []);
  assert.equal(panel.view.items.length, 5);
  assert.deepEqual([...storage.data.values()], ['thread-1'], 'the notebook remembers its thread');
});

test('decide: posts once even when clicked twice', async () => {
  const { events } = recording('single_agent.json');
  const paused = events.findIndex(e => e.type === 'run_finished') + 1;
  const { panel, calls } = panelOn(async call => {
    if (call.method === 'POST') {
      await sleep(20);
      return new Response(null, { status: 202 });
    }
    return streamResponse({ chunks: [sse([...asMessages(events.slice(0, paused)), caughtUp(paused)])] });
  });
  void panel.openThread('thread-1');
  await until(() => panel.pendingApproval !== null && !panel.loadingThread);
  const results = await Promise.all([panel.decide('approve'), panel.decide('approve')]);
  assert.deepEqual(results.sort(), [false, true]);
  const posts = calls.filter(c => c.method === 'POST');
  assert.equal(posts.length, 1);
  assert.equal(route(posts[0]), 'POST threads/thread-1/approvals/call_load');
  assert.deepEqual(JSON.parse(posts[0].body), { decision: 'approve' });
  assert.equal(panel.pendingApproval, null, 'a decision sent from here hides the card');
});

test('a thread that is gone: the error is shown and the notebook forgets it', async () => {
  const storage = memoryStore();
  storage.setItem('cellwright:last-thread:analysis.ipynb', 'thread-9');
  const { panel } = panelOn(() => jsonResponse(404, { error: 'not_found', message: 'No thread thread-9.' }), storage);
  panel.setNotebook({ path: 'analysis.ipynb', kernelId: () => undefined });
  await until(() => panel.errors.length > 0);
  assert.match(panel.errors[0].message, /No thread thread-9\./);
  assert.equal(storage.data.size, 0);
});

test('requestAPI: the server message of an error answer, with the token sent', async () => {
  const { settings, calls } = fakeServer(() =>
    jsonResponse(409, { error: 'run_active', message: 'A run is active.' })
  );
  await assert.rejects(requestAPI('threads/t1/runs', { method: 'POST', body: '{}' }, settings, trans), error => {
    assert.ok(error instanceof APIError);
    assert.ok(error instanceof ServerConnection.ResponseError);
    assert.equal(error.message, 'A run is active.');
    assert.equal(error.kind, 'run_active');
    assert.equal(error.status, 409);
    return true;
  });
  assert.equal(calls[0].headers.get('Authorization'), 'token secret');
});

test('requestAPI: a non-JSON 404 says the server extension may be missing', async () => {
  const { settings } = fakeServer(() => new Response('<html>404</html>', { status: 404, statusText: 'Not Found' }));
  await assert.rejects(requestAPI('health', {}, settings, trans), /server extension/);
});

test('agentLabel: readable agent names', () => {
  assert.equal(agentLabel(trans, 'python_developer'), 'Python developer');
  assert.equal(agentLabel(trans, 'planner'), 'Planner');
  assert.equal(agentLabel(trans, 'main'), 'Agent');
  assert.equal(agentLabel(trans, ''), 'Agent');
  assert.equal(agentLabel(trans, 'data_engineer'), 'Data engineer');
});
