/** Threads waiting for the user's decision elsewhere (an outside agent's call through MCP). */
import * as assert from 'node:assert/strict';
import { test } from 'node:test';

import { Thread } from '../contract.gen';
import { awaitingHere } from '../model/waitingThreads';

function thread(id: string, status: Thread['status'], notebook = 'a.ipynb'): Thread {
  return { thread_id: id, title: `${id} via MCP`, notebook_path: notebook, created_at: 0, updated_at: 0, status };
}

test('only the bound notebook threads that wait for a decision are shown', () => {
  const threads = [
    thread('t1', 'awaiting_approval'),
    thread('t2', 'idle'),
    thread('t3', 'awaiting_approval', 'other.ipynb'),
    thread('t4', 'running')
  ];
  assert.deepEqual(
    awaitingHere(threads, 'a.ipynb').map(t => t.thread_id),
    ['t1']
  );
  assert.deepEqual(awaitingHere(threads, null), []);
});
