/**
 * Issue 23 in the panel's pure parts: which agent cells a notebook lacks
 * (order, deleted cells, undone steps, edits once), the one cell shape of
 * live and reconciled cells, and the shared-document switch: when the
 * server writes cells itself, neither the live bridge nor the reconcile
 * writes any (nor asks for the cells).
 */
import * as assert from 'node:assert/strict';
import { test } from 'node:test';

import './helpers';
import { AgentCell, AgentCells, AgentCellsRequest, CellStartedEvent, Health } from '../contract.gen';
import {
  agentCellMetadata,
  agentCellOfStarted,
  INotebookState,
  placedIds,
  planReconcile,
  reconcileMessage,
  withPlaced
} from '../model/agentCells';
import { provenanceMetadata } from '../model/review';
import { NotebookBridge } from '../notebook';
import { NotebookReconciler } from '../notebookReconcile';
import { trans } from './helpers';

function cell(id: string, extra: Partial<AgentCell> = {}): AgentCell {
  return {
    seq: 1, thread_id: 't', run_id: 'r', tool_call_id: id, cell_type: 'code', cell_id: `cw-${id}`,
    source: `x = '${id}'`, finished: true, ...extra
  };
}

const EMPTY: INotebookState = { cells: [{ id: 'user-1', toolCallId: null }], placed: [] };

test('the cells a notebook lacks, in the order they ran', () => {
  const plan = planReconcile(EMPTY, [cell('a'), cell('b', { cell_type: 'markdown', cell_id: '' }), cell('c')], false);
  assert.deepEqual(plan.insert.map(c => c.tool_call_id), ['a', 'b', 'c']);
  assert.deepEqual(plan.edit, []);
});

test('a cell present (by tool call or nbformat id), placed before (deleted by the user) or undone is not inserted', () => {
  const notebook: INotebookState = {
    cells: [{ id: 'user-1', toolCallId: null }, { id: 'cw-a', toolCallId: 'a' }, { id: 'cw-b', toolCallId: null }],
    placed: ['a', 'gone']
  };
  const cells = [cell('a'), cell('b'), cell('gone'), cell('undone', { undone: true }), cell('new')];
  assert.deepEqual(planReconcile(notebook, cells, false).insert.map(c => c.tool_call_id), ['new']);
  assert.deepEqual(planReconcile(notebook, [cell('new'), cell('new')], false).insert.length, 1);
});

test('an edit applies once, to a cell the notebook has, and only the last edit of a cell', () => {
  const notebook: INotebookState = { cells: [{ id: 'user-1', toolCallId: null }], placed: [] };
  const e1 = cell('e1', { edit: true, cell_id: 'user-1', source: 'one' });
  const e2 = cell('e2', { edit: true, cell_id: 'user-1', source: 'two' });
  const elsewhere = cell('e3', { edit: true, cell_id: 'deleted-cell' });
  assert.deepEqual(planReconcile(notebook, [e1, e2, elsewhere], false).edit.map(c => c.tool_call_id), ['e2']);
  const carried: INotebookState = { cells: [{ id: 'user-1', toolCallId: 'e2' }], placed: [] };
  assert.deepEqual(planReconcile(carried, [e1, e2], false).edit, []);
  const undone = cell('e2', { ...e2, undone: true });
  assert.deepEqual(planReconcile(notebook, [e1, undone], false).edit.map(c => c.tool_call_id), ['e1']);
});

test("an edit of the agent's own cell that no browser placed yet applies to that cell once inserted", () => {
  const ran = cell('run1');
  const fixed = cell('fix1', { edit: true, cell_id: 'cw-run1', source: 'x = 1 / 1' });
  const plan = planReconcile(EMPTY, [ran, fixed], false);
  assert.deepEqual(plan.insert.map(c => c.tool_call_id), ['run1']);
  assert.deepEqual(plan.edit.map(c => c.tool_call_id), ['fix1']);
  const placed: INotebookState = { cells: EMPTY.cells, placed: ['run1', 'fix1'] }; // then deleted by the user
  assert.deepEqual(planReconcile(placed, [ran, fixed], false), { insert: [], edit: [] });
});

test('with a shared document the server writes the cells: the plan is empty', () => {
  const plan = planReconcile(EMPTY, [cell('a'), cell('e', { edit: true, cell_id: 'user-1' })], true);
  assert.deepEqual(plan, { insert: [], edit: [] });
});

test('live and reconciled cells carry the same provenance', () => {
  const provenance = { thread_id: 't', tool_call_id: 'a', model: 'm', agent: 'main', decision: 'approved' as const, undoable: true };
  const started = {
    type: 'cell_started', seq: 4, thread_id: 't', run_id: 'r', agent: 'main', id: 'a', code: 'x = 1',
    notebook_path: 'n.ipynb', kernel_id: 'k', cell_id: 'cw-a', provenance
  } as CellStartedEvent;
  const live = agentCellOfStarted(started);
  assert.deepEqual(agentCellMetadata(live), provenanceMetadata(started));
  assert.deepEqual(agentCellMetadata(cell('a', { provenance })), provenanceMetadata(started));
  assert.equal(live.cell_id, 'cw-a');
});

test('the placed record: read from any metadata, added to once, capped', () => {
  assert.deepEqual(placedIds({ placed: ['a', 3, 'b'] }), ['a', 'b']);
  assert.deepEqual(placedIds('nonsense'), []);
  assert.deepEqual(withPlaced(['a'], ['b', 'a', 'b']), ['a', 'b']);
  assert.equal(withPlaced([], Array.from({ length: 6000 }, (_, i) => `id${i}`)).length, 5000);
});

test('what a reconcile says it added', () => {
  assert.equal(reconcileMessage(trans, 0, 0), null);
  assert.equal(reconcileMessage(trans, 3, 0), 'Cellwright: 3 cells the agent ran while this notebook was closed were added.');
  assert.equal(reconcileMessage(trans, 1, 1), 'Cellwright: 1 cell the agent ran while this notebook was closed was added; 1 cell the agent edited was updated.');
});

/** A tracker that counts each time the bridge looks for a notebook to write into (it catches errors). */
function untouchableTracker(): { touched: number } {
  const tracker = {
    touched: 0,
    find: () => void tracker.touched++,
    forEach: () => void tracker.touched++
  };
  return tracker;
}

test('shared document: the live bridge writes nothing', () => {
  const tracker = untouchableTracker();
  const bridge = new NotebookBridge(tracker as any);
  bridge.sharedDocument = true;
  const thread = { notebookPath: 'n.ipynb' } as any;
  const base = { seq: 1, thread_id: 't', run_id: 'r', agent: 'main' };
  for (const event of [
    { ...base, type: 'cell_started', id: 'a', code: 'x', notebook_path: 'n.ipynb', kernel_id: 'k', cell_id: 'cw-a' },
    { ...base, type: 'cell_output', id: 'a', output: { output_type: 'stream', name: 'stdout', text: 'x' } },
    { ...base, type: 'cell_finished', id: 'a', status: 'ok', execution_count: 1, duration_ms: 1 },
    { ...base, type: 'tool_call', id: 'm', name: 'add_markdown', args: { content: '# hi' }, needs_approval: false },
    { ...base, type: 'step_undone', id: 'a', restored: [], removed: [], not_undone: [] }
  ]) {
    bridge.handle({ thread, event: event as any });
  }
  bridge.stepUndone('a', 'n.ipynb');
  assert.equal(tracker.touched, 0);
  bridge.sharedDocument = false; // the same events reach for the notebook without it
  bridge.handle({ thread, event: { ...base, type: 'step_undone', id: 'a', restored: [], removed: [], not_undone: [] } as any });
  assert.ok(tracker.touched > 0);
});

test('shared document: the reconcile neither asks for the cells nor writes', async () => {
  const bridge = new NotebookBridge(untouchableTracker() as any);
  const asked: AgentCellsRequest[] = [];
  const api = {
    health: async () => ({ shared_document: true }) as Health,
    agentCells: async (body: AgentCellsRequest): Promise<AgentCells> => {
      asked.push(body);
      return { cells: [cell('a')], next_offset: null };
    }
  };
  const notices: string[] = [];
  const panel = {
    context: { ready: Promise.resolve(), path: 'n.ipynb' },
    isDisposed: false,
    node: { dataset: {} as Record<string, string> },
    content: { model: null }
  } as any;
  await new NotebookReconciler(bridge, api, message => notices.push(message), trans).reconcile(panel);
  assert.equal(bridge.sharedDocument, true);
  assert.deepEqual(asked, []);
  assert.deepEqual(notices, []);
  assert.equal(panel.node.dataset.cwReconciled, undefined);
});

test('without a shared document the reconcile asks for every page of the notebook\'s cells', async () => {
  const bridge = new NotebookBridge(untouchableTracker() as any);
  const asked: AgentCellsRequest[] = [];
  const api = {
    health: async () => ({ shared_document: false }) as Health,
    agentCells: async (body: AgentCellsRequest): Promise<AgentCells> => {
      asked.push(body);
      return { cells: [], next_offset: body.offset === 0 ? 200 : null };
    }
  };
  const panel = {
    context: { ready: Promise.resolve(), path: 'n.ipynb' },
    isDisposed: false,
    node: { dataset: {} as Record<string, string> },
    content: { model: null } // not loaded: nothing is written
  } as any;
  await new NotebookReconciler(bridge, api, () => assert.fail('nothing was added'), trans).reconcile(panel);
  assert.deepEqual(asked, [{ notebook_path: 'n.ipynb', offset: 0 }, { notebook_path: 'n.ipynb', offset: 200 }]);
  assert.equal(bridge.sharedDocument, false);
});

/** A small seeded generator (mulberry32): the same schedules on every run. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

test('200 seeded notebooks: a plan never re-adds, never reorders, edits a cell (there or inserted) at most once', () => {
  for (let seed = 1; seed <= 200; seed++) {
    const next = random(seed);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)];
    const agent: AgentCell[] = Array.from({ length: 1 + Math.floor(next() * 12) }, (_, i) =>
      next() < 0.25
        ? cell(`e${i}`, { edit: true, cell_id: pick(['u0', 'u1', 'cw-a0', 'gone']), undone: next() < 0.2 })
        : cell(`a${i}`, { undone: next() < 0.15 })
    );
    const notebook: INotebookState = {
      cells: [
        { id: 'u0', toolCallId: null },
        { id: 'u1', toolCallId: null },
        ...agent.filter(() => next() < 0.3).map(c => ({ id: c.cell_id, toolCallId: c.tool_call_id }))
      ],
      placed: agent.filter(() => next() < 0.3).map(c => c.tool_call_id)
    };
    const present = new Set(notebook.cells.map(c => c.toolCallId));
    const plan = planReconcile(notebook, agent, false);
    const inserted = plan.insert.map(c => c.tool_call_id);
    for (const id of [...inserted, ...plan.edit.map(c => c.tool_call_id)]) {
      assert.ok(!present.has(id) && !notebook.placed.includes(id), `seed ${seed}: ${id} was there or deleted`);
    }
    assert.deepEqual(inserted, agent.filter(c => inserted.includes(c.tool_call_id)).map(c => c.tool_call_id));
    assert.ok(plan.insert.every(c => !c.edit && !c.undone), `seed ${seed}: an edit or undone step inserted`);
    const edited = plan.edit.map(c => c.cell_id);
    assert.equal(new Set(edited).size, edited.length, `seed ${seed}: a cell edited twice`);
    const placedHere = (id: string) => notebook.cells.some(c => c.id === id) || plan.insert.some(c => c.cell_id === id);
    assert.ok(edited.every(placedHere), `seed ${seed}: an edit of a missing cell`);
    assert.deepEqual(planReconcile(notebook, agent, true), { insert: [], edit: [] });
  }
});
