/**
 * The stale badges' pure parts (issue 42): which cells get which badge from GET notebook/graph, the
 * refresher that never has two requests in flight and lets edits settle, the card's
 * "Approve and re-run dependents" offer and the decision it sends.
 */
import * as assert from 'node:assert/strict';
import { test } from 'node:test';

import type { GraphCell, NotebookGraphAnswer } from '../contract.gen';
import { offersRerun } from '../model/review';
import { decisionBody } from '../model/runRequests';
import { markKey, Refresher, staleMarks } from '../staleGraph';
import { trans } from './helpers';

function cell(id: string, fields: Partial<GraphCell> = {}): GraphCell {
  return { index: 0, cell_id: id, execution_count: 1, reads: [], writes: [], stale: false, hidden_state: false, reasons: [], ...fields };
}

function answer(cells: GraphCell[]): NotebookGraphAnswer {
  return { path: 'a.ipynb', cells, rerun_order: [], kernel: true };
}

test('stale and hidden-state cells get a badge with every reason on hover; cells up to date none', () => {
  const marks = staleMarks(
    trans,
    answer([
      cell('up-to-date'),
      cell('b', {
        stale: true,
        reasons: [
          { kind: 'redefined', text: 'reads df, redefined by cell 0 at [5]' },
          { kind: 'source_changed', text: 'its source changed since it ran' }
        ]
      }),
      cell('c', { hidden_state: true, reasons: [{ kind: 'hidden_state', text: 'reads old, which no cell defines' }] })
    ])
  );
  assert.deepEqual([...marks.keys()], ['b', 'c']);
  assert.equal(marks.get('b')!.label, 'stale');
  assert.equal(marks.get('b')!.kind, 'stale');
  assert.match(marks.get('b')!.title, /reads df, redefined by cell 0 at \[5\]\nits source changed since it ran$/);
  assert.equal(marks.get('c')!.label, 'hidden state');
  assert.match(marks.get('c')!.title, /reads old, which no cell defines$/);
  // a badge whose reasons change is redrawn; one that did not is kept
  assert.notEqual(markKey(marks.get('b')), markKey(marks.get('c')));
  assert.equal(markKey(undefined), '');
});

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve = (): void => undefined;
  const promise = new Promise<void>(r => (resolve = r));
  return { promise, resolve };
}

const tick = (): Promise<void> => new Promise(r => setTimeout(r, 0));

test('the refresher keeps one request in flight and asks once more after it for what came meanwhile', async () => {
  const calls: ReturnType<typeof deferred>[] = [];
  const refresher = new Refresher(() => {
    const d = deferred();
    calls.push(d);
    return d.promise;
  }, 10);
  refresher.now();
  refresher.now();
  refresher.now();
  assert.equal(calls.length, 1);
  calls[0].resolve();
  await tick();
  assert.equal(calls.length, 2); // the three asks while in flight made one more, not three
  calls[1].resolve();
  await tick();
  assert.equal(calls.length, 2);
  refresher.dispose();
});

test('edits settle before the refresher asks, and a failed request does not stop the next', async () => {
  let count = 0;
  const refresher = new Refresher(() => {
    count += 1;
    return Promise.reject(new Error('server down'));
  }, 20);
  refresher.soon();
  refresher.soon();
  refresher.soon();
  assert.equal(count, 0);
  await new Promise(r => setTimeout(r, 40));
  assert.equal(count, 1);
  refresher.now();
  await tick();
  assert.equal(count, 2);
  refresher.soon();
  refresher.dispose(); // a disposed refresher's timer never fires
  await new Promise(r => setTimeout(r, 40));
  assert.equal(count, 2);
});

test('"Approve and re-run dependents" is offered for a cell call that leaves cells stale, and sent as such', () => {
  const makesStale = { text: 'redefines df, read by cell 1', cells: [{ index: 1, cell_id: 'b' }] };
  assert.equal(offersRerun({ name: 'edit_cell', makes_stale: makesStale }), true);
  assert.equal(offersRerun({ name: 'run_cell', makes_stale: makesStale }), true);
  assert.equal(offersRerun({ name: 'run_cell', makes_stale: { text: '', cells: [] } }), false);
  assert.equal(offersRerun({ name: 'run_cell' }), false);
  assert.equal(offersRerun({ name: 'write_file', makes_stale: makesStale }), false);
  assert.deepEqual(decisionBody('approve', { rerun_dependents: true }, null, null), {
    decision: 'approve',
    rerun_dependents: true
  });
  assert.deepEqual(decisionBody('approve', {}, null, null), { decision: 'approve' });
});
