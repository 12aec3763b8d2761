/**
 * Issue 11's panel logic without a browser: usage and autonomy folded from
 * events, the thread detail's figures, the live cells sent with a run, the
 * mode remembered per notebook, the fix message (ANSI-free, bounded), and
 * the settings form's bodies (the key only when typed).
 */
import * as assert from 'node:assert/strict';
import { test } from 'node:test';

import { CellwrightAPI } from '../api';
import { fixMessage, hasError, exceptionLine, tracebackTail, TRACEBACK_LINES } from '../fixCell';
import { splitCellContext, stripAnsi } from '../cellContext';
import {
  AutonomyMemory,
  configUpdate,
  connectionTest,
  contextFraction,
  contextText,
  EMPTY_VIEW,
  formError,
  formFromConfig,
  IRunEndItem,
  IUserItem,
  liveCells,
  PanelModel,
  reduceEvents,
  usageText,
  withThreadDetail
} from '../model';
import { PublicConfig, Usage } from '../contract.gen';
import {
  asMessages,
  caughtUp,
  ev,
  fakeServer,
  jsonResponse,
  memoryStore,
  resetSeq,
  sse,
  streamResponse,
  trans,
  until,
  wantsEvents
} from './helpers';

const usage = (prompt: number, completion: number, extra: Partial<Usage> = {}): Usage => ({
  prompt_tokens: prompt,
  completion_tokens: completion,
  estimated: false,
  ...extra
});

// ------------------------------------------------------------------ reducer: usage and autonomy

test('usage events fill the footer: thread totals, the run, the context meter, summarised once seen', () => {
  resetSeq();
  const view = reduceEvents(EMPTY_VIEW, [
    ev('run_started', { mode: 'single', autonomy: 'plan', message: 'hi' }),
    ev('usage', {
      call: usage(100, 10),
      run: usage(100, 10),
      thread: usage(1100, 60),
      context_tokens: 100,
      context_budget: 1000,
      summarized: true
    }),
    ev('usage', {
      call: usage(120, 5, { cached_tokens: 80 }),
      run: usage(220, 15, { cached_tokens: 80 }),
      thread: usage(1220, 65, { cached_tokens: 80 }),
      context_tokens: 120,
      context_budget: 1000
    })
  ]);
  assert.deepEqual(view.usage.thread, usage(1220, 65, { cached_tokens: 80 }));
  assert.deepEqual(view.usage.run, usage(220, 15, { cached_tokens: 80 }));
  assert.equal(view.usage.contextTokens, 120);
  assert.equal(view.usage.contextBudget, 1000);
  assert.equal(view.usage.summarized, true, 'summarisation, once it happened, stays noted');
  assert.equal(view.autonomy, 'plan');
  assert.equal((view.items[0] as IUserItem).autonomy, 'plan');
});

test("run_finished's usage becomes the run's summary; a pause for approval adds none", () => {
  resetSeq();
  const view = reduceEvents(EMPTY_VIEW, [
    ev('run_started', { mode: 'single', message: 'go' }),
    ev('run_finished', { status: 'awaiting_approval', usage: usage(50, 5) }),
    ev('run_started', { mode: 'single', message: '' }),
    ev('run_finished', { status: 'completed', usage: usage(90, 9, { estimated: true }) }),
    ev('run_started', { mode: 'single', message: 'again' }),
    ev('run_finished', { status: 'failed', usage: null })
  ]);
  const ends = view.items.filter(i => i.kind === 'run_end') as IRunEndItem[];
  assert.deepEqual(
    ends.map(e => [e.status, e.usage?.prompt_tokens ?? null]),
    [
      ['completed', 90],
      ['failed', null]
    ]
  );
  assert.equal(view.autonomy, null, 'a server that does not say leaves the mode unknown');
});

test("the thread detail fills in what no event said, and never overrides the events' figures", () => {
  resetSeq();
  const detail = { usage: usage(7, 3, { estimated: true }), autonomy: 'ask' as const };
  const bare = withThreadDetail(EMPTY_VIEW, detail);
  assert.deepEqual(bare.usage.thread, detail.usage);
  assert.equal(bare.autonomy, 'ask');
  const withEvents = reduceEvents(EMPTY_VIEW, [
    ev('run_started', { mode: 'single', autonomy: 'agent', message: 'x' }),
    ev('usage', { call: usage(1, 1), run: usage(1, 1), thread: usage(500, 20), context_tokens: 1, context_budget: 10 })
  ]);
  const merged = withThreadDetail(withEvents, detail);
  assert.equal(merged.usage.thread?.prompt_tokens, 500);
  assert.equal(merged.autonomy, 'agent');
  assert.equal(withThreadDetail(merged, detail), merged, 'nothing to add: the same view');
});

// ------------------------------------------------------------------ usage text

test('usage text: cached when reported, estimates marked, the context as a fraction', () => {
  assert.equal(usageText(trans, usage(1234, 56)), '1,234 prompt · 56 completion tokens');
  assert.equal(
    usageText(trans, usage(1234, 56, { cached_tokens: 1000, estimated: true })),
    '≈ 1,234 prompt · 56 completion · 1,000 cached tokens (estimated)'
  );
  assert.equal(contextFraction(250, 1000), 0.25);
  assert.equal(contextFraction(5000, 1000), 1);
  assert.equal(contextFraction(10, 0), null);
  assert.equal(contextText(trans, 250, 1000), 'Context: 250 of 1,000 tokens (25%)');
});

// ------------------------------------------------------------------ live cells

test('live cells: id, type and source; past the cap the sources are dropped, not the cells', () => {
  const cells = [
    { id: 'a', cell_type: 'code', source: 'x = 1' },
    { id: 'b', cell_type: 'markdown', source: 'é'.repeat(400) },
    { id: 'c', cell_type: 'code', source: 'y = 2' }
  ];
  assert.deepEqual(liveCells(cells), [
    { id: 'a', cell_type: 'code', source: 'x = 1' },
    { id: 'b', cell_type: 'markdown', source: 'é'.repeat(400) },
    { id: 'c', cell_type: 'code', source: 'y = 2' }
  ]);
  // 'é' is two bytes in UTF-8: 800 bytes do not fit in 700.
  const capped = liveCells(cells, 700);
  assert.deepEqual(
    capped.map(c => [c.id, c.source, c.truncated ?? false]),
    [
      ['a', 'x = 1', false],
      ['b', '', true],
      ['c', '', true]
    ]
  );
});

test('a run and a decision carry the mode and the live notebook cells', async () => {
  resetSeq();
  const runStarted = ev('run_started', { mode: 'single', autonomy: 'plan', message: 'go' });
  const paused = [
    runStarted,
    ev('approval_required', { id: 'call-1', name: 'write_todos', args: { todos: [] }, description: 'plan' }),
    ev('run_finished', { status: 'awaiting_approval' })
  ];
  const { settings, calls } = fakeServer(call => {
    const path = new URL(call.url).pathname.replace('/cellwright/api/', '');
    if (call.method === 'POST' && path === 'threads') {
      return jsonResponse(201, { thread_id: 't1', title: 'go', notebook_path: 'nb.ipynb' });
    }
    if (call.method === 'POST' && !wantsEvents(call)) {
      return jsonResponse(202, { run_id: 'r1' });
    }
    return streamResponse({ chunks: [sse([caughtUp(0), ...asMessages(paused)])] });
  });
  const storage = memoryStore();
  const panel = new PanelModel({ trans, api: new CellwrightAPI(settings, trans), version: '0.1.0', storage });
  try {
    const cells = [{ id: 'c1', cell_type: 'code', source: '1/0' }];
    panel.setNotebook({ path: 'nb.ipynb', kernelId: () => 'k1', cells: () => cells });
    assert.equal(panel.autonomy, 'agent', 'Agent until the user picks another');
    panel.pickAutonomy('plan');
    assert.equal(await panel.send('go'), true);
    const run = JSON.parse(calls.find(c => c.url.includes('/threads/t1/runs'))!.body);
    assert.equal(run.autonomy, 'plan');
    assert.deepEqual(run.notebook_cells, [{ id: 'c1', cell_type: 'code', source: '1/0' }]);
    await until(() => panel.pendingApproval !== null);
    cells.push({ id: 'c2', cell_type: 'markdown', source: '# new' });
    assert.equal(await panel.decide('edit', { args: { todos: [{ content: 'a', status: 'pending' }] } }), true);
    const decision = JSON.parse(calls.find(c => c.url.includes('/approvals/call-1'))!.body);
    assert.equal(decision.decision, 'edit');
    assert.deepEqual(decision.args, { todos: [{ content: 'a', status: 'pending' }] });
    assert.equal(decision.notebook_cells.length, 2, 'the cells as they are at decision time');

    // The mode is the notebook's: another notebook has its own, and coming back restores it.
    panel.setNotebook({ path: 'other.ipynb', kernelId: () => undefined });
    assert.equal(panel.autonomy, 'agent');
    panel.setNotebook({ path: 'nb.ipynb', kernelId: () => undefined });
    assert.equal(panel.autonomy, 'plan');
  } finally {
    panel.dispose();
  }
});

test('the mode memory follows a renamed notebook and ignores junk', () => {
  const storage = memoryStore();
  const memory = new AutonomyMemory(storage);
  memory.remember('a.ipynb', 'ask');
  memory.move('a.ipynb', 'b.ipynb');
  assert.equal(memory.recall('b.ipynb'), 'ask');
  assert.equal(memory.recall('a.ipynb'), 'agent');
  storage.setItem('cellwright:autonomy:c.ipynb', 'yolo');
  assert.equal(memory.recall('c.ipynb'), 'agent');
});

// ------------------------------------------------------------------ fix message

const ESC = '\u001b';
const traceback = [
  `${ESC}[0;31m---------------------------------------------------------------------------${ESC}[0m`,
  `${ESC}[0;31mZeroDivisionError${ESC}[0m                         Traceback (most recent call last)`,
  `Cell ${ESC}[0;32mIn[3], line 2${ESC}[0m`,
  `${ESC}[1;32m----> 2${ESC}[0m x ${ESC}[38;5;241m=${ESC}[39m ${ESC}[38;5;241m1${ESC}[39m${ESC}[38;5;241m/${ESC}[39m${ESC}[38;5;241m0${ESC}[39m`,
  `${ESC}[0;31mZeroDivisionError${ESC}[0m: division by zero`
];

test('ANSI escapes are stripped from tracebacks', () => {
  assert.equal(stripAnsi(traceback[4]), 'ZeroDivisionError: division by zero');
  assert.ok(!tracebackTail({ output_type: 'error', traceback }).includes(ESC));
});

test('a long traceback keeps its last lines and says how many were left out', () => {
  const long = Array.from({ length: 100 }, (_, i) => `${ESC}[1mframe ${i}${ESC}[0m`);
  const tail = tracebackTail({ output_type: 'error', traceback: long }).split('\n');
  assert.equal(tail.length, TRACEBACK_LINES + 1);
  assert.equal(tail[0], '[... 40 traceback lines omitted ...]');
  assert.equal(tail[1], 'frame 40');
  assert.equal(tail[tail.length - 1], 'frame 99');
});

test('the fix message names the cell id, asks for edit_cell, carries code and traceback', () => {
  const error = { output_type: 'error', ename: 'ZeroDivisionError', evalue: 'division by zero', traceback };
  const outputs = [{ output_type: 'stream', name: 'stdout', text: 'before\n' }, error];
  assert.ok(hasError(outputs));
  assert.equal(exceptionLine(error), 'ZeroDivisionError: division by zero');
  const message = fixMessage(
    { id: 'cell-42', cellType: 'code', source: 'y = 2\nx = 1/0', outputs, executionCount: 3, index: 2 },
    'work/analysis.ipynb'
  );
  assert.ok(message.startsWith('Fix the error in cell 3 (cell id `cell-42`)'), message);
  assert.ok(message.includes('edit_cell (cell_id "cell-42")'));
  assert.ok(message.includes('`ZeroDivisionError: division by zero`'));
  assert.ok(message.includes('x = 1/0'));
  assert.ok(message.includes('----> 2 x = 1/0'), 'the traceback, ANSI-free');
  assert.ok(message.includes('before'));
  assert.ok(!message.includes(ESC));
  // The conversation folds the cell block away as it does for "ask about this cell".
  const split = splitCellContext(message);
  assert.equal(split.label, 'Cell 3 [3]');
  assert.ok(split.question.includes('cell-42'));
});

// ------------------------------------------------------------------ settings form

const config: PublicConfig = {
  model: 'gpt-x',
  base_url: 'http://127.0.0.1:9/v1',
  api_key_set: true,
  tool_calling: 'native',
  auto_approve: ['run_cell'],
  max_model_calls: null,
  command_timeout: 60,
  cell_timeout: null,
  checkpointer: 'sqlite',
  prices: { 'gpt-x': { prompt: 1, completion: 2 } },
  context_token_budget: 1000,
  sources: { model: 'environment', base_url: 'config', api_key: 'settings' }
};

test('the form starts from the saved settings, without the key', () => {
  const form = formFromConfig(config);
  assert.equal(form.api_key, '');
  assert.equal(form.price_prompt, '1');
  assert.deepEqual(configUpdate(form, config), {}, 'nothing changed: nothing sent');
});

test('save sends what changed; the key only when typed; prices per model', () => {
  const form = {
    ...formFromConfig(config),
    model: 'gpt-y',
    api_key: 'sk-new',
    auto_approve: ['run_cell', 'edit_cell'],
    price_prompt: '0.5',
    price_completion: '1.5'
  };
  assert.deepEqual(configUpdate(form, config), {
    model: 'gpt-y',
    api_key: 'sk-new',
    auto_approve: ['edit_cell', 'run_cell'],
    prices: { 'gpt-x': { prompt: 1, completion: 2 }, 'gpt-y': { prompt: 0.5, completion: 1.5 } }
  });
  const cleared = { ...formFromConfig(config), price_prompt: '', price_completion: '' };
  assert.deepEqual(configUpdate(cleared, config), { prices: {} });
  assert.deepEqual(connectionTest(form), { base_url: 'http://127.0.0.1:9/v1', model: 'gpt-y', api_key: 'sk-new' });
  assert.deepEqual(connectionTest(formFromConfig(config)), { base_url: 'http://127.0.0.1:9/v1', model: 'gpt-x' });
});

test('the form says what is wrong before anything is sent', () => {
  const form = formFromConfig(config);
  assert.equal(formError(trans, form), null);
  assert.match(formError(trans, { ...form, price_prompt: 'cheap' }) ?? '', /numbers/);
  assert.match(formError(trans, { ...form, price_completion: '' }) ?? '', /both/);
  assert.match(formError(trans, { ...form, base_url: 'localhost:8000' }) ?? '', /http/);
});
