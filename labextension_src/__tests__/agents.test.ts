/**
 * The agent picker's model: GET agents lists ours and the hosted ACP
 * agents; a new thread is created for the chosen one, and one that cannot
 * start cannot be chosen.
 */
import * as assert from 'node:assert/strict';
import { afterEach, test } from 'node:test';

import { CellwrightAPI } from '../api';
import { PanelModel } from '../model';
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
  const panel = new PanelModel({ trans, api: new CellwrightAPI(settings), version: '0.1.0', storage: null });
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
