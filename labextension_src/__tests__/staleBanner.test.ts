/**
 * The "is waiting for your approval [Review]" banner (issue 39): the thread on show is followed, so
 * its own events say whether it still waits; the waiting-threads poll decides only when it is newer
 * than those events (a run started elsewhere that this panel has not read yet). The panel asks the
 * server to keep the stream open while the card waits (`waiting=1`), so a decision made elsewhere
 * arrives as those events, with no polling.
 */
import * as assert from 'node:assert/strict';
import { afterEach, test } from 'node:test';

import { CellwrightAPI } from '../api';
import { PanelModel } from '../model';
import { asMessages, caughtUp, fakeServer, ICall, jsonResponse, recording, sse, streamResponse, trans, until } from './helpers';

const panels: PanelModel[] = [];

afterEach(() => {
  panels.splice(0).forEach(panel => panel.dispose());
});

function route(call: ICall): string {
  return `${call.method} ${new URL(call.url).pathname.replace('/cellwright/api/', '')}`;
}

const WAITING = {
  thread_id: 'thread-1',
  title: 'load data',
  notebook_path: 'analysis.ipynb',
  created_at: 0,
  updated_at: 0,
  status: 'awaiting_approval'
};

/**
 * A panel bound to analysis.ipynb whose server says thread-1 waits; its stream replays the run up to
 * its card, then sends `after` (the pings of a stream held open while the card waits).
 */
function panelWithWaitingThread(after: string[] = []) {
  const { events } = recording('single_agent.json');
  const paused = events.findIndex(e => e.type === 'run_finished') + 1;
  const { settings, calls } = fakeServer(call => {
    switch (route(call)) {
      case 'GET threads':
        return jsonResponse(200, { threads: [WAITING] });
      case 'GET threads/thread-1':
        return jsonResponse(200, { ...WAITING, messages: [] });
      default:
        return streamResponse({
          chunks: [sse([...asMessages(events.slice(0, paused)), caughtUp(paused)]), ...after],
          pauseMs: 25,
          signal: call.signal
        });
    }
  });
  const panel = new PanelModel({ trans, api: new CellwrightAPI(settings, trans), version: '0.1.0', storage: null });
  panels.push(panel);
  panel.setNotebook({ path: 'analysis.ipynb', kernelId: () => 'kernel-1' });
  return { panel, calls, events, paused };
}

test('the banner goes as soon as the thread on show stops waiting, before the poll catches up', async () => {
  const { panel, calls, events, paused } = panelWithWaitingThread();
  void panel.openThread('thread-1');
  await until(() => panel.pendingApproval?.id === 'call_load');
  const streams = calls.filter(call => route(call) === 'GET threads/thread-1/events');
  assert.ok(streams.length > 0);
  for (const call of streams) {
    assert.equal(new URL(call.url).searchParams.get('waiting'), '1', 'the stream follows the waiting thread');
  }
  const waiting = (panel as any)._banner.poll;
  await waiting.refresh();
  assert.equal(waiting.threads.length, 1, 'the poll says the thread waits');
  assert.deepEqual(panel.waitingThreads, [], 'its card is on show: no banner');

  // Approved elsewhere: the thread's own events (newer than the poll) end the wait.
  await new Promise(resolve => setTimeout(resolve, 5));
  for (const event of events.slice(paused)) {
    panel.thread!.applyEvent(event, true);
  }
  assert.equal(panel.pendingApproval, null);
  assert.notEqual(panel.view.status, 'awaiting_approval');
  assert.deepEqual(panel.waitingThreads, [], 'no stale banner while the poll still says it waits');

  // A poll newer than the thread's events that says it waits (a run started elsewhere): the banner.
  await new Promise(resolve => setTimeout(resolve, 5));
  await waiting.refresh();
  const shown: { thread_id: string }[] = panel.waitingThreads;
  assert.deepEqual(
    shown.map(t => t.thread_id),
    ['thread-1']
  );
});

test('a thread left while its card waits lets go of its stream; reopened, its card is back', async () => {
  // The server holds a waiting thread's stream open (pings) until the client leaves.
  const { panel, calls } = panelWithWaitingThread(Array.from({ length: 400 }, () => ': ping\n\n'));
  void panel.openThread('thread-1');
  await until(() => panel.pendingApproval?.id === 'call_load');
  const stream = calls.find(call => route(call) === 'GET threads/thread-1/events')!;
  assert.equal(panel.thread!.streaming, true, 'the stream stays open while the card waits');

  panel.newThread(); // the user leaves the thread: its waiting stream must not hold a connection
  assert.equal(stream.signal.aborted, true);
  void panel.openThread('thread-1');
  await until(() => panel.pendingApproval?.id === 'call_load');
});
