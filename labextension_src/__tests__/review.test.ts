/**
 * Review and undo in the panel's pure parts: the timeline's undo state from
 * `cell_started.provenance` and `step_undone`, "Undo run" newest first, the
 * impact chips, the suggested rule and the provenance a cell keeps.
 */
import * as assert from 'node:assert/strict';
import { test } from 'node:test';

import { CellStartedEvent, Impact } from '../contract.gen';
import { EMPTY_VIEW, IToolItem, reduceEvents } from '../model';
import { allTools, impactChips, provenanceMetadata, runStepsToUndo, suggestedRule } from '../model/review';
import { ev, resetSeq, trans } from './helpers';

function provenance(id: string, undoable: boolean): Record<string, unknown> {
  return { thread_id: 't1', tool_call_id: id, model: 'm', agent: 'main', decision: 'approved', undoable };
}

function cell(id: string, undoable: boolean, run = 'r1'): ReturnType<typeof ev> {
  return ev('cell_started', {
    id, code: 'x = 1', notebook_path: 'a.ipynb', kernel_id: 'k', cell_id: `cw-${id}`, run_id: run,
    provenance: provenance(id, undoable)
  });
}

const EMPTY_IMPACT: Impact = {
  reads: [], assigns: [], mutates: [], deletes: [], files_written: [], network: [], installs: [], shell: [],
  unknown: [], undoable: true, rule_warnings: []
};

test('a step is undoable from its provenance until step_undone', () => {
  resetSeq();
  const view = reduceEvents(EMPTY_VIEW, [ev('run_started', { mode: 'single', message: 'go' }), cell('a', true), cell('b', false)]);
  const [a, b] = allTools(view.items);
  assert.deepEqual(a.undo, { runId: 'r1', undoable: true, reason: null, undone: false });
  assert.equal(b.undo?.undoable, false);
  const after = reduceEvents(view, [ev('step_undone', { id: 'a', restored: ['x'], removed: [], not_undone: [] })]);
  assert.equal(allTools(after.items)[0].undo?.undone, true);
});

test('Undo run takes the run\'s undoable steps, newest first', () => {
  resetSeq();
  const view = reduceEvents(EMPTY_VIEW, [
    ev('run_started', { mode: 'single', message: 'go' }), cell('a', true), cell('b', false), cell('c', true),
    cell('d', true, 'r2')
  ]);
  const tools = allTools(view.items);
  assert.deepEqual(runStepsToUndo(view.items, tools[0] as IToolItem), ['c', 'a']);
  assert.deepEqual(runStepsToUndo(view.items, tools[3] as IToolItem), ['d']);
});

test('impact chips keep each line, unknown included', () => {
  const impact = { ...EMPTY_IMPACT, mutates: [{ name: 'df', line: 2 }], unknown: [{ name: 'exec', line: 5 }] };
  assert.deepEqual(
    impactChips(trans, impact).map(c => [c.kind, c.name, c.line]),
    [['mutates', 'df', 2], ['unknown', 'exec', 5]]
  );
  assert.deepEqual(impactChips(trans, null), []);
});

test('the suggested rule is the reason, else the server\'s suggestion', () => {
  const installs = { ...EMPTY_IMPACT, suggested_rule: 'Never install packages' };
  assert.equal(suggestedRule(installs, '  no pip installs '), 'no pip installs');
  assert.equal(suggestedRule(installs, ''), 'Never install packages');
  assert.equal(suggestedRule(EMPTY_IMPACT, ''), '');
  assert.equal(suggestedRule(null, ''), '');
});

test('a cell keeps the event\'s stamps and provenance; an edit its previous source', () => {
  resetSeq();
  const event = cell('a', true) as CellStartedEvent;
  event.provenance = { ...event.provenance!, decision: 'edited', edited_from: 'x = 2' };
  assert.deepEqual(provenanceMetadata(event, 'old'), {
    thread_id: 't1', run_id: 'r1', tool_call_id: 'a', model: 'm', agent: 'main', decision: 'edited', undoable: true,
    edited_from: 'x = 2', previous_source: 'old'
  });
});

test('a rewind marks the steps it went back over, and undoing it unmarks only those', () => {
  resetSeq();
  const view = reduceEvents(EMPTY_VIEW, [
    ev('run_started', { mode: 'single', message: 'go' }), cell('a', true), cell('b', true), cell('c', true)
  ]);
  const rewound = (branch: string, ids: string[]): ReturnType<typeof ev> =>
    ev('rewound', {
      dry_run: false, steps: ids.map(id => ({ tool_call_id: id, name: 'run_cell', restores: [], cannot: [] })),
      restored: [], removed: [], cells_removed: ids, files_reverted: [], not_reversible: [], branch,
      previous_branch: 'p'
    });
  const first = reduceEvents(view, [rewound('b1', ['c'])]);
  const second = reduceEvents(first, [rewound('b2', ['b'])]);
  assert.deepEqual(allTools(second.items).map(t => t.rewoundBy), [undefined, 'b2', 'b1']);
  const undone = reduceEvents(second, [
    ev('rewind_undone', { branch: 'b3', undid: 'b2', files_restored: [], not_restored: [] })
  ]);
  assert.deepEqual(allTools(undone.items).map(t => t.rewoundBy), [undefined, undefined, 'b1']);
});

test('a step whose kernel state a rewind took back stays undone after the rewind is undone', () => {
  resetSeq();
  const view = reduceEvents(EMPTY_VIEW, [
    ev('run_started', { mode: 'single', message: 'go' }), cell('a', true), cell('b', true), cell('c', true),
    ev('rewound', {
      dry_run: false, steps: ['c', 'b'].map(id => ({ tool_call_id: id, name: 'run_cell', restores: [], cannot: [] })),
      restored: [], removed: [], cells_removed: [], files_reverted: [], kernel_undone: ['c'], not_reversible: [],
      branch: 'b1', previous_branch: 'p'
    }),
    ev('rewind_undone', { branch: 'b2', undid: 'b1', files_restored: [], not_restored: [] })
  ]);
  assert.deepEqual(allTools(view.items).map(t => t.undo?.undone), [false, false, true]);
});

test('a forked thread shows the copied steps as the other thread\'s, then where it continues from', () => {
  resetSeq();
  // The copied log ends mid-run (the step it goes back to, and what followed, are left out).
  const view = reduceEvents(EMPTY_VIEW, [
    ev('run_started', { mode: 'single', message: 'go' }), cell('a', true),
    ev('forked', { forked_from: 't1', from_tool_call_id: 'b', title: 'Clean the data' })
  ]);
  assert.equal(view.status, 'idle');
  const [a] = allTools(view.items);
  assert.equal(a.inherited, true);
  assert.equal(a.undo, null); // its undo belongs to thread t1
  assert.notEqual(a.status, 'running');
  const last = view.items[view.items.length - 1];
  assert.deepEqual(last.kind === 'forked' ? [last.fromThread, last.fromTitle] : last, ['t1', 'Clean the data']);
});
