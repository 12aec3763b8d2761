/**
 * The agent picker's model: GET agents lists ours and the hosted ACP
 * agents; a new thread is created for the chosen one, and one that cannot
 * start cannot be chosen.
 */
import * as assert from 'node:assert/strict';
import { afterEach, test } from 'node:test';

import { CellwrightAPI } from '../api';
import { PanelModel, ThreadModel } from '../model';
import { decisionBody } from '../model/runRequests';
import { asMessages, caughtUp, fakeServer, ICall, jsonResponse, sse, streamResponse, trans, until } from './helpers';

const panels: PanelModel[] = [];

afterEach(() => {
  panels.splice(0).forEach(panel => panel.dispose());
});

function route(call: ICall): string {
  return `${call.method} ${new URL(call.url).pathname.replace('/cellwright/api/', '')}`;
}

test('a new thread is created for the chosen agent, which the thread then names', async () => {
  const { settings, calls } = fakeServer(call => {
    switch (route(call)) {
      case 'GET agents':
        return jsonResponse(200, {
          agents: [
            { name: 'cellwright', kind: 'cellwright', available: true },
            { name: 'Codex', kind: 'acp', available: true },
            { name: 'Gemini', kind: 'acp', available: false, reason: "'gemini' was not found: install Gemini CLI" }
          ]
        });
      case 'POST threads':
        return jsonResponse(201, { thread_id: 't1', title: 'q', notebook_path: 'a.ipynb', agent: 'Codex' });
      case 'POST threads/t1/runs':
        return jsonResponse(202, { run_id: 'r1' });
      default:
        return streamResponse({ chunks: [sse([caughtUp(0), ...asMessages([])])] });
    }
  });
  const panel = new PanelModel({ trans, api: new CellwrightAPI(settings, trans), version: '0.1.0', storage: null });
  panels.push(panel);
  await panel.agents.load();
  assert.deepEqual(
    panel.agents.agents.map(a => a.name),
    ['cellwright', 'Codex', 'Gemini']
  );
  panel.agents.pick('Gemini'); // cannot start: not chosen
  assert.equal(panel.agents.chosen, 'cellwright');
  panel.agents.pick('Codex');
  assert.equal(panel.agents.chosen, 'Codex');
  panel.setNotebook({ path: 'a.ipynb', kernelId: () => 'kernel-1' });
  assert.equal(await panel.send('hello'), true);
  const created = calls.find(c => route(c) === 'POST threads');
  assert.equal(JSON.parse(created!.body).agent, 'Codex');
  await until(() => panel.thread !== null);
  assert.equal(panel.thread!.agent, 'Codex');
});

test('"always" on an outside agent\'s card is sent, kept on its thread, and taken back by "Ask again"', async () => {
  const { settings, calls } = fakeServer(call =>
    route(call) === 'DELETE threads/t1/always_allowed'
      ? jsonResponse(200, { always_allowed: [] })
      : streamResponse({ chunks: [sse([caughtUp(0), ...asMessages([])])] })
  );
  assert.deepEqual(decisionBody('approve', { always: true }, null, null), { decision: 'approve', always: true });
  assert.deepEqual(decisionBody('approve', {}, null, null), { decision: 'approve' });
  const thread = new ThreadModel({ api: new CellwrightAPI(settings, trans), threadId: 't1', agent: 'Codex' });
  try {
    thread.setDetail({ usage: { prompt_tokens: 0, completion_tokens: 0, estimated: false }, autonomy: 'agent', always_allowed: ['edit'] });
    thread.allowAlways('execute');
    thread.allowAlways('execute');
    assert.deepEqual(thread.alwaysAllowed, ['edit', 'execute']);
    await thread.askAgain();
    assert.deepEqual(thread.alwaysAllowed, []);
    assert.equal(calls.filter(c => route(c) === 'DELETE threads/t1/always_allowed').length, 1);
  } finally {
    thread.dispose();
  }
});
