/**
 * explore steps in the panel's pure parts (issue 37): how a step ran comes
 * from its `tool_result` (sandboxed, or approved without a sandbox), its
 * outputs are the step's scratchpad, and "Run as cell" posts the step's id
 * only (the server has the code) and then follows the thread to its card.
 */
import * as assert from 'node:assert/strict';
import { afterEach, test } from 'node:test';

import { CellwrightAPI } from '../api';
import { CellwrightEvent } from '../contract.gen';
import { EMPTY_VIEW, exploreState, IToolItem, PanelModel, reduceEvents, runAsCell, runnableCode } from '../model';
import { allTools } from '../model/review';
import { asMessages, caughtUp, ev, fakeServer, jsonResponse, resetSeq, sse, streamResponse, trans, until } from './helpers';

const CODE = "print(df.describe())\ndf['a'].plot()";
const FIGURE = { output_type: 'display_data', data: { 'image/png': 'iVBORw0KGgo=', 'text/plain': '<Figure>' }, metadata: {} };
const TEXT = { output_type: 'stream', name: 'stdout', text: 'count 10\n' };

/** An explore call and its result, with `before()`'s events between them (made in that order: seqs follow). */
function explored(fields: Record<string, unknown>, before: () => CellwrightEvent[] = () => []): CellwrightEvent[] {
  return [
    ev('run_started', { mode: 'single', autonomy: 'ask', message: "what's in @df?" }),
    ev('tool_call', { id: 'x1', name: 'explore', args: { code: CODE }, needs_approval: true }),
    ...before(),
    ev('tool_result', { id: 'x1', name: 'explore', status: 'ok', summary: 'count 10', ...fields })
  ];
}

function only(events: CellwrightEvent[]): IToolItem {
  const [item] = allTools(reduceEvents(EMPTY_VIEW, events).items);
  return item;
}

test('a sandboxed explore step keeps its outputs and what was blocked, and asked nothing', () => {
  resetSeq();
  const events = explored({ sandboxed: true, blocked: ['network blocked'], outputs: [TEXT, FIGURE] });
  const view = reduceEvents(EMPTY_VIEW, events);
  const item = allTools(view.items)[0];
  assert.equal(exploreState(item), 'sandboxed');
  assert.deepEqual(item.exploration, { sandboxed: true, blocked: ['network blocked'] });
  assert.deepEqual(item.outputs, [TEXT, FIGURE]);
  assert.equal(item.needsApproval, true, 'explore needs approval only where no sandbox is');
  assert.equal(view.pendingApproval, null);
  assert.equal(runnableCode(item), CODE);
});

test('an explore approved where no sandbox is says so', () => {
  const card = (): CellwrightEvent[] => [
    ev('approval_required', { id: 'x1', name: 'explore', args: { code: CODE }, description: 'no sandbox' })
  ];
  resetSeq();
  const waiting = only(explored({}, card).slice(0, 3));
  assert.equal(exploreState(waiting), 'awaiting_approval');
  assert.equal(runnableCode(waiting), null, 'nothing to run as a cell before it ran');
  resetSeq();
  const item = only(explored({ sandboxed: false, blocked: [], outputs: [TEXT] }, card));
  assert.equal(exploreState(item), 'unsandboxed');
  assert.equal(runnableCode(item), CODE);
});

test('an explore that never ran, and another tool\'s result, have no scratchpad', () => {
  resetSeq();
  const refused = only(explored({ status: 'error', summary: 'explore needs non-empty code' }));
  assert.equal(exploreState(refused), 'failed');
  assert.equal(refused.exploration, undefined);
  assert.equal(runnableCode(refused), null);
  resetSeq();
  const command = only([
    ev('tool_call', { id: 'c1', name: 'execute_command', args: { command: 'ls' }, needs_approval: true }),
    ev('tool_result', { id: 'c1', name: 'execute_command', status: 'ok', summary: 'a', sandboxed: true, blocked: [] })
  ]);
  assert.equal(command.exploration, undefined);
  assert.deepEqual(command.outputs, []);
});

const panels: PanelModel[] = [];
afterEach(() => panels.splice(0).forEach(panel => panel.dispose()));

test('Run as cell posts the step id only, then follows the thread to the cell\'s approval card', async () => {
  resetSeq();
  const before = explored({ sandboxed: true, blocked: [], outputs: [TEXT] });
  before.push(ev('run_finished', { status: 'completed' }));
  const after = [
    ev('run_started', { mode: 'single', autonomy: 'agent', message: 'Run as cell: run_cell' }),
    ev('tool_call', { id: 'ascell_1', name: 'run_cell', args: { code: CODE }, needs_approval: true }),
    ev('approval_required', { id: 'ascell_1', name: 'run_cell', args: { code: CODE }, description: 'Run a cell' }),
    ev('run_finished', { status: 'awaiting_approval' })
  ];
  let asked = false;
  const { settings, calls } = fakeServer(call => {
    if (call.method === 'POST') {
      asked = true;
      return jsonResponse(202, { tool_call_id: 'ascell_1', after: before.length });
    }
    const events = asked ? [...before, ...after] : before;
    return streamResponse({ chunks: [sse([...asMessages(events), caughtUp(events.length)])] });
  });
  const panel = new PanelModel({ trans, api: new CellwrightAPI(settings, trans), version: '0.1.0', storage: null });
  panels.push(panel);
  void panel.openThread('thread-1');
  await until(() => !panel.loadingThread && panel.view.items.length > 0);
  const step = allTools(panel.view.items)[0];
  assert.equal(await runAsCell(panel, step), null);
  await until(() => panel.pendingApproval !== null);
  const post = calls.filter(c => c.method === 'POST');
  assert.deepEqual(post.map(c => new URL(c.url).pathname), ['/cellwright/api/threads/thread-1/steps/x1/as_cell']);
  assert.deepEqual(JSON.parse(post[0].body), {}, 'the code is the server\'s record, never sent');
  assert.equal(panel.pendingApproval?.id, 'ascell_1');
  assert.equal(panel.pendingApproval?.args.code, CODE);
});
