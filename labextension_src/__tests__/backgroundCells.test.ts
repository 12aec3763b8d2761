/**
 * Long cells (issue 38) in the reducer: a run that ends waiting_for_cell keeps
 * its cell's step running, cell_progress moves its bar, the cell's end clears
 * it, and the run that goes on shows the message the user queued meanwhile.
 */
import * as assert from 'node:assert/strict';
import { test } from 'node:test';

import { EMPTY_VIEW, IToolItem, reduceEvents } from '../model';
import { formatSeconds } from '../model/progress';
import { ev, resetSeq, trans } from './helpers';

function cellStep(items: readonly { kind: string }[]): IToolItem {
  const found = items.find(item => item.kind === 'tool');
  assert.ok(found, 'the cell has a step');
  return found as IToolItem;
}

const START = () => [
  ev('run_started', { mode: 'single', message: 'train it' }),
  ev('tool_call', { id: 'c1', name: 'run_cell', args: { code: 'train()' }, needs_approval: false }),
  ev('cell_started', { id: 'c1', code: 'train()', notebook_path: 'a.ipynb', kernel_id: 'k' }),
  ev('run_finished', { status: 'waiting_for_cell' })
];

test('a run that waits for its cell keeps the step running and shows its progress', () => {
  resetSeq();
  const waiting = reduceEvents(EMPTY_VIEW, [
    ...START(),
    ev('cell_progress', { tool_call_id: 'c1', elapsed_s: 3, text: ' 20%|##', percent: 20, eta_s: 12 }),
    ev('cell_progress', { tool_call_id: 'c1', elapsed_s: 4, text: ' 45%|####', percent: 45, eta_s: 5 })
  ]);
  assert.equal(waiting.status, 'waiting_for_cell');
  const step = cellStep(waiting.items);
  assert.equal(step.status, 'running');
  assert.deepEqual(step.progress, { elapsedS: 4, text: ' 45%|####', percent: 45, etaS: 5 });
});

test('the cell ends, the run goes on with the queued message, the bar goes', () => {
  resetSeq();
  const view = reduceEvents(EMPTY_VIEW, [
    ...START(),
    ev('cell_progress', { tool_call_id: 'c1', elapsed_s: 3, text: 'x', percent: 50 }),
    ev('cell_finished', { id: 'c1', status: 'ok', execution_count: 3, duration_ms: 6000 }),
    ev('run_started', { mode: 'single', message: 'and plot it' }),
    ev('tool_result', { id: 'c1', name: 'run_cell', status: 'ok', summary: 'done' }),
    ev('run_finished', { status: 'completed' })
  ]);
  assert.equal(view.status, 'idle');
  const step = cellStep(view.items);
  assert.equal(step.progress, undefined);
  assert.equal(step.status, 'ok');
  const users = view.items.filter(item => item.kind === 'user').map(item => (item as { text: string }).text);
  assert.deepEqual(users, ['train it', 'and plot it']);
});

test('durations read as people say them', () => {
  assert.equal(formatSeconds(trans, 42), '42 s');
  assert.equal(formatSeconds(trans, 185), '3 min 05 s');
  assert.equal(formatSeconds(trans, 3720), '1 h 02 min');
});
