/*
 * Unit tests of the panel's core logic (SSE parsing, the event reducer, the
 * REST error handling and the stream client's replay / reconnect), with
 * Node's built-in test runner and no extra dependency.
 *
 * Run with `npm test` (compiles tokens.ts, api.ts and model.ts to CommonJS
 * under lib/__cjs__ first).
 */
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { ServerConnection } = require('@jupyterlab/services');

const api = require('../../lib/__cjs__/api.js');
const model = require('../../lib/__cjs__/model.js');
const tokens = require('../../lib/__cjs__/tokens.js');

// ------------------------------------------------------------------ helpers

let seq = 0;
function ev(type, fields = {}) {
  seq += 1;
  return { type, seq, thread_id: 't1', run_id: 'r1', agent: 'main', ...fields };
}

function sse(events) {
  return events
    .map(e => `id: ${e.seq}\nevent: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`)
    .join('');
}

/** Server settings whose fetch answers from `handler(url, request)`. */
function fakeSettings(handler) {
  const calls = [];
  const settings = ServerConnection.makeSettings({
    baseUrl: 'http://jupyter.test/',
    wsUrl: 'ws://jupyter.test/',
    token: 'secret',
    init: { cache: 'no-store' },
    fetch: async request => {
      calls.push({ url: request.url, method: request.method, headers: request.headers });
      return handler(request.url, request, calls.length);
    }
  });
  return { settings, calls };
}

function streamResponse(chunks) {
  const encoder = new TextEncoder();
  const body = new ReadableStream({
    async start(controller) {
      for (const chunk of chunks) {
        controller.enqueue(encoder.encode(chunk));
        await new Promise(r => setTimeout(r, 1));
      }
      controller.close();
    }
  });
  return new Response(body, { status: 200, headers: { 'Content-Type': 'text/event-stream' } });
}

const sleep = ms => new Promise(r => setTimeout(r, ms));

// ------------------------------------------------------------------ tokens

test('tokens: event and tool names are the contract lists', () => {
  assert.equal(tokens.EVENT_TYPES.length, 13);
  assert.ok(tokens.EVENT_TYPES.includes('approval_required'));
  assert.ok(tokens.TOOL_NAMES.includes('run_cell'));
  assert.equal(tokens.isEventType('final'), true);
  assert.equal(tokens.isEventType('nope'), false);
});

// ------------------------------------------------------------------ SSE parser

test('SSEParser: split chunks, comments, multi-line data, CRLF', () => {
  const parser = new api.SSEParser();
  let out = parser.push(': ping\n\nid: 1\nevent: tok');
  assert.deepEqual(out, []);
  out = parser.push('en\ndata: {"a":\ndata: 1}\r\n\r');
  // the lone trailing \r waits for a possible \n
  assert.deepEqual(out, []);
  out = parser.push('\nid: 2\nevent: final\ndata: {}\n\n');
  assert.deepEqual(out, [
    { id: '1', event: 'token', data: '{"a":\n1}' },
    { id: '2', event: 'final', data: '{}' }
  ]);
});

test('toEvent: type from the event field, seq from the data', () => {
  const event = api.toEvent({ id: '7', event: 'token', data: '{"seq":7,"text":"hi"}' });
  assert.equal(event.type, 'token');
  assert.equal(event.seq, 7);
  assert.equal(event.text, 'hi');
  assert.equal(api.toEvent({ id: '8', event: 'token', data: 'not json' }), null);
});

// ------------------------------------------------------------------ reducer

test('reduceEvent: a run with approval, cell, final and next items', () => {
  seq = 0;
  const events = [
    ev('run_started', { mode: 'single', message: 'compute x' }),
    ev('todos', { todos: [{ content: 'Compute', status: 'in_progress' }] }),
    ev('token', { text: 'Let me ' }),
    ev('token', { text: 'compute.' }),
    ev('tool_call', { id: 'c1', name: 'run_cell', args: { code: 'print(42)' }, needs_approval: true }),
    ev('approval_required', { id: 'c1', name: 'run_cell', args: { code: 'print(42)' }, description: 'Run a cell', diagnostics: [] }),
    ev('run_finished', { status: 'awaiting_approval' })
  ];
  let view = model.reduceEvents(model.EMPTY_VIEW, events);
  assert.equal(view.status, 'awaiting_approval');
  assert.equal(view.pendingApproval.id, 'c1');
  assert.deepEqual(view.items.map(i => i.kind), ['user', 'assistant', 'tool']);
  assert.equal(view.items[1].text, 'Let me compute.');
  assert.equal(view.items[1].streaming, false);
  assert.equal(view.items[2].status, 'awaiting_approval');
  assert.equal(view.todos.length, 1);

  view = model.reduceEvents(view, [
    ev('run_started', { mode: 'single', message: 'compute x' }),
    ev('cell_started', { id: 'c1', code: 'print(42)', notebook_path: 'a.ipynb', kernel_id: 'k' }),
    ev('cell_output', { id: 'c1', output: { output_type: 'stream', name: 'stdout', text: '4' } }),
    ev('cell_output', { id: 'c1', output: { output_type: 'stream', name: 'stdout', text: '2\n' } }),
    ev('cell_finished', { id: 'c1', status: 'ok', execution_count: 3, duration_ms: 12 }),
    ev('tool_result', { id: 'c1', name: 'run_cell', status: 'ok', summary: '42' }),
    ev('tool_call', { id: 'f1', name: 'final_answer', args: {}, needs_approval: false }),
    ev('final', { answer: 'x is **42**', next_items: [{ title: 'Plot', prompt: 'plot x' }] }),
    ev('run_finished', { status: 'completed' })
  ]);
  assert.equal(view.status, 'idle');
  assert.equal(view.pendingApproval, null);
  // the resumed run adds no second user message; final_answer is not a timeline entry
  assert.deepEqual(view.items.map(i => i.kind), ['user', 'assistant', 'tool', 'final']);
  const tool = view.items[2];
  assert.equal(tool.status, 'ok');
  assert.equal(tool.executionCount, 3);
  assert.deepEqual(tool.outputs, [{ output_type: 'stream', name: 'stdout', text: '42\n' }]);
  assert.equal(view.items[3].nextItems[0].prompt, 'plot x');
  assert.equal(view.lastSeq, seq);
});

test('reduceEvent: an event seen twice is applied once', () => {
  seq = 0;
  const first = ev('run_started', { mode: 'single', message: 'hi' });
  const token = ev('token', { text: 'a' });
  const view = model.reduceEvents(model.EMPTY_VIEW, [first, token, token, first]);
  assert.equal(view.items.length, 2);
  assert.equal(view.items[1].text, 'a');
  assert.equal(model.reduceEvent(view, token), view);
});

test('reduceEvent: a final that repeats the streamed text shows once', () => {
  seq = 0;
  const view = model.reduceEvents(model.EMPTY_VIEW, [
    ev('run_started', { mode: 'single', message: 'q' }),
    ev('token', { text: 'The answer ' }),
    ev('token', { text: 'is 42.' }),
    ev('final', { answer: 'The answer is 42.', next_items: [] }),
    ev('run_finished', { status: 'completed' })
  ]);
  assert.deepEqual(view.items.map(i => i.kind), ['user', 'final']);
});

test('reduceEvent: cancel, errors, agent switch', () => {
  seq = 0;
  const view = model.reduceEvents(model.EMPTY_VIEW, [
    ev('run_started', { mode: 'multi', message: 'q' }),
    ev('agent_switch', { from: 'main', to: 'researcher', task: 'look' }),
    ev('tool_call', { id: 'l1', name: 'list_files', args: { path: '.' }, needs_approval: false, agent: 'researcher' }),
    ev('error', { kind: 'llm_error', message: 'model down', retryable: true }),
    ev('run_finished', { status: 'cancelled' })
  ]);
  assert.equal(view.status, 'cancelled');
  // the run's own events say "main": in multi mode the top level is the planner's
  assert.equal(view.agent, 'planner');
  assert.deepEqual(view.subtasks, []);
  assert.deepEqual(view.items.map(i => i.kind), ['user', 'subtask', 'error', 'run_end']);
  const subtask = view.items[1];
  assert.equal(subtask.agent, 'researcher');
  assert.equal(subtask.task, 'look');
  assert.equal(subtask.status, 'cancelled');
  assert.equal(subtask.active, false);
  assert.equal(subtask.items[0].status, 'cancelled');
  assert.equal(view.items[2].message, 'model down');
});

// ------------------------------------------------------------------ multi-agent

/** Events as the server sends them: sub-agent events carry the sub-agent's name. */
function multi(type, agent, fields = {}) {
  return ev(type, { agent, ...fields });
}

test('reduceEvent: multi mode groups each sub-agent\'s steps under its task', () => {
  seq = 0;
  const P = 'planner';
  const R = 'researcher';
  const D = 'python_developer';
  let view = model.reduceEvents(model.EMPTY_VIEW, [
    multi('run_started', P, { mode: 'multi', message: 'What are total sales?' }),
    multi('token', P, { text: 'I will ask the researcher.' }),
    multi('tool_call', P, { id: 'p1', name: 'task', args: { agent: R, description: 'Find the sales file.' }, needs_approval: false }),
    multi('agent_switch', P, { from: P, to: R, task: 'Find the sales file.' }),
    multi('tool_call', R, { id: 'r1', name: 'list_files', args: { path: '.' }, needs_approval: false }),
    multi('tool_result', R, { id: 'r1', name: 'list_files', status: 'ok', summary: '1 file' })
  ]);
  // The planner's task call is a subtask block, open and active.
  assert.deepEqual(view.items.map(i => i.kind), ['user', 'assistant', 'subtask']);
  assert.equal(view.items[1].streaming, false);
  let researcher = view.items[2];
  assert.equal(researcher.id, 'p1');
  assert.equal(researcher.agent, R);
  assert.equal(researcher.parent, P);
  assert.equal(researcher.task, 'Find the sales file.');
  assert.equal(researcher.active, true);
  assert.deepEqual(researcher.items.map(i => [i.kind, i.name, i.status]), [['tool', 'list_files', 'ok']]);
  assert.equal(view.agent, R);
  assert.deepEqual(view.subtasks.map(f => f.agent), [R]);

  view = model.reduceEvents(view, [
    multi('token', R, { text: 'The file is ' }),
    multi('token', R, { text: 'sales.csv.' })
  ]);
  researcher = view.items[2];
  assert.deepEqual(researcher.items.map(i => i.kind), ['tool', 'assistant']);
  assert.equal(researcher.items[1].text, 'The file is sales.csv.');
  assert.equal(researcher.items[1].streaming, true);
  assert.deepEqual(view.streaming, [researcher.key]);
  assert.equal(model.isStreaming(view), true);

  view = model.reduceEvents(view, [
    multi('agent_switch', P, { from: R, to: P, task: 'Find the sales file.' }),
    multi('tool_result', P, { id: 'p1', name: 'task', status: 'ok', summary: 'The file is sales.csv.' }),
    multi('tool_call', P, { id: 'p2', name: 'task', args: { agent: D, description: 'Print the total.' }, needs_approval: false }),
    multi('agent_switch', P, { from: P, to: D, task: 'Print the total.' }),
    multi('tool_call', D, { id: 'd1', name: 'run_cell', args: { code: 'print(42)' }, needs_approval: true }),
    multi('approval_required', D, { id: 'd1', name: 'run_cell', args: { code: 'print(42)' }, description: 'Run a cell', diagnostics: [] }),
    multi('run_finished', P, { status: 'awaiting_approval' })
  ]);
  assert.equal(model.isStreaming(view), false);
  researcher = view.items[2];
  assert.equal(researcher.items[1].streaming, false);
  assert.equal(researcher.active, false);
  assert.equal(researcher.done, true);
  assert.equal(researcher.status, 'ok');
  assert.deepEqual(view.items.map(i => i.kind), ['user', 'assistant', 'subtask', 'subtask']);
  let developer = view.items[3];
  assert.equal(developer.agent, D);
  assert.equal(developer.active, true);
  assert.deepEqual(developer.items.map(i => [i.name, i.status]), [['run_cell', 'awaiting_approval']]);
  assert.equal(view.status, 'awaiting_approval');
  assert.equal(view.pendingApproval.agent, D);
  assert.equal(view.agent, D);
  assert.deepEqual(view.subtasks.map(f => f.id), ['p2']);

  // The resume: the planner's task step re-runs and announces the same switch again.
  view = model.reduceEvents(view, [
    multi('run_started', P, { mode: 'multi', message: 'What are total sales?' }),
    multi('agent_switch', P, { from: P, to: D, task: 'Print the total.' })
  ]);
  assert.equal(view.agent, D, 'the sub-agent keeps control across the resume');
  view = model.reduceEvents(view, [
    multi('cell_started', D, { id: 'd1', code: 'print(42)', notebook_path: 'a.ipynb', kernel_id: 'k' }),
    multi('cell_output', D, { id: 'd1', output: { output_type: 'stream', name: 'stdout', text: '42\n' } }),
    multi('cell_finished', D, { id: 'd1', status: 'ok', execution_count: 1, duration_ms: 5 }),
    multi('tool_result', D, { id: 'd1', name: 'run_cell', status: 'ok', summary: '42' }),
    multi('token', D, { text: 'Total amount is 42.' }),
    multi('agent_switch', P, { from: D, to: P, task: 'Print the total.' }),
    multi('tool_result', P, { id: 'p2', name: 'task', status: 'ok', summary: 'Total amount is 42.' }),
    multi('tool_call', P, { id: 'f1', name: 'final_answer', args: {}, needs_approval: false }),
    multi('final', P, { answer: 'Total sales: **42**.', next_items: [] }),
    multi('run_finished', P, { status: 'completed' })
  ]);
  assert.equal(view.items.filter(i => i.kind === 'user').length, 1);
  assert.deepEqual(view.items.map(i => i.kind), ['user', 'assistant', 'subtask', 'subtask', 'final']);
  developer = view.items[3];
  assert.deepEqual(developer.items.map(i => i.kind), ['tool', 'assistant'], 'one block, not a second one');
  const cell = developer.items[0];
  assert.equal(cell.status, 'ok');
  assert.equal(cell.isCell, true);
  assert.deepEqual(cell.outputs, [{ output_type: 'stream', name: 'stdout', text: '42\n' }]);
  assert.equal(developer.items[1].text, 'Total amount is 42.');
  assert.equal(developer.items[1].streaming, false);
  assert.equal(developer.status, 'ok');
  assert.equal(developer.active, false);
  assert.equal(view.items[4].agent, P);
  assert.equal(view.agent, P);
  assert.deepEqual(view.subtasks, []);
  assert.equal(view.status, 'idle');
});

test('reduceEvent: a failed delegation and a sub-agent that may not delegate', () => {
  seq = 0;
  const view = model.reduceEvents(model.EMPTY_VIEW, [
    multi('run_started', 'planner', { mode: 'multi', message: 'go' }),
    multi('tool_call', 'planner', { id: 'p0', name: 'task', args: { agent: 'data_engineer', description: 'x' }, needs_approval: false }),
    multi('tool_result', 'planner', { id: 'p0', name: 'task', status: 'error', summary: 'may call: python_developer, researcher' }),
    multi('tool_call', 'planner', { id: 'p1', name: 'task', args: { agent: 'python_developer', description: 'Do it.' }, needs_approval: false }),
    multi('agent_switch', 'planner', { from: 'planner', to: 'python_developer', task: 'Do it.' }),
    multi('tool_call', 'python_developer', { id: 'n1', name: 'task', args: { agent: 'researcher', description: 'Help me.' }, needs_approval: false }),
    multi('tool_result', 'python_developer', { id: 'n1', name: 'task', status: 'error', summary: 'no tool named task' }),
    multi('token', 'python_developer', { text: 'I could not delegate.' }),
    multi('agent_switch', 'planner', { from: 'python_developer', to: 'planner', task: 'Do it.' }),
    multi('tool_result', 'planner', { id: 'p1', name: 'task', status: 'ok', summary: 'I could not delegate.' }),
    multi('run_finished', 'planner', { status: 'completed' })
  ]);
  assert.deepEqual(view.items.map(i => [i.kind, i.agent, i.status]), [
    ['user', undefined, undefined],
    ['subtask', 'data_engineer', 'error'],
    ['subtask', 'python_developer', 'ok']
  ]);
  assert.equal(view.items[1].summary, 'may call: python_developer, researcher');
  const inner = view.items[2].items;
  assert.deepEqual(inner.map(i => i.kind), ['subtask', 'assistant']);
  assert.equal(inner[0].status, 'error');
  assert.equal(inner[0].done, true);
  assert.deepEqual(view.subtasks, []);
});

test('reduceEvent: sub-agent events with no delegation seen get a block of their own', () => {
  seq = 0;
  let view = model.reduceEvents(model.EMPTY_VIEW, [
    multi('run_started', 'planner', { mode: 'multi', message: 'go' }),
    // a switch that comes before its task call: the call adopts the block
    multi('agent_switch', 'planner', { from: 'planner', to: 'researcher', task: 'Look around.' }),
    multi('tool_call', 'planner', { id: 'p1', name: 'task', args: { agent: 'researcher', description: 'Look around.' }, needs_approval: false }),
    multi('token', 'researcher', { text: 'Nothing here.' })
  ]);
  assert.deepEqual(view.items.map(i => i.kind), ['user', 'subtask']);
  assert.equal(view.items[1].id, 'p1');
  assert.deepEqual(view.subtasks.map(f => f.id), ['p1']);
  view = model.reduceEvents(view, [
    multi('tool_result', 'planner', { id: 'p1', name: 'task', status: 'ok', summary: 'Nothing here.' }),
    // events of a sub-agent no switch announced
    multi('tool_call', 'python_developer', { id: 'd1', name: 'read_file', args: { path: 'a.py' }, needs_approval: false })
  ]);
  assert.deepEqual(view.items.map(i => [i.kind, i.agent]), [
    ['user', undefined],
    ['subtask', 'researcher'],
    ['subtask', 'python_developer']
  ]);
  assert.equal(view.items[1].done, true);
  assert.equal(view.items[2].items[0].id, 'd1');
  assert.equal(view.agent, 'python_developer');
});

test('reduceEvent: planner and sub-agent tokens never merge', () => {
  seq = 0;
  const view = model.reduceEvents(model.EMPTY_VIEW, [
    multi('run_started', 'planner', { mode: 'multi', message: 'go' }),
    multi('agent_switch', 'planner', { from: 'planner', to: 'researcher', task: 't' }),
    multi('token', 'researcher', { text: 'report' }),
    multi('agent_switch', 'planner', { from: 'researcher', to: 'planner', task: 't' }),
    multi('token', 'planner', { text: 'summary' })
  ]);
  assert.deepEqual(view.items.map(i => i.kind), ['user', 'subtask', 'assistant']);
  assert.equal(view.items[1].items[0].text, 'report');
  assert.equal(view.items[1].items[0].streaming, false);
  assert.equal(view.items[2].text, 'summary');
  assert.deepEqual(view.streaming, []);
});

// ------------------------------------------------------------------ tool output and status

test('reduceEvent: execute_command output stays with its call, not a cell', () => {
  seq = 0;
  const view = model.reduceEvents(model.EMPTY_VIEW, [
    ev('run_started', { mode: 'single', message: 'list' }),
    ev('tool_call', { id: 'x1', name: 'execute_command', args: { command: 'ls' }, needs_approval: true }),
    ev('approval_required', { id: 'x1', name: 'execute_command', args: { command: 'ls' }, description: 'Run a shell command', command: 'ls', cwd: '.' }),
    ev('run_finished', { status: 'awaiting_approval' }),
    ev('run_started', { mode: 'single', message: 'list' }),
    ev('cell_output', { id: 'x1', output: { output_type: 'stream', name: 'stdout', text: 'a\n' } }),
    ev('cell_output', { id: 'x1', output: { output_type: 'stream', name: 'stdout', text: 'b\n' } }),
    ev('cell_output', { id: 'x1', output: { output_type: 'stream', name: 'stderr', text: 'warn\n' } }),
    ev('tool_result', { id: 'x1', name: 'execute_command', status: 'ok', summary: 'exit code 0' })
  ]);
  const tool = view.items[1];
  assert.equal(tool.isCell, false);
  assert.equal(tool.code, null);
  assert.equal(tool.status, 'ok');
  assert.deepEqual(tool.outputs, [
    { output_type: 'stream', name: 'stdout', text: 'a\nb\n' },
    { output_type: 'stream', name: 'stderr', text: 'warn\n' }
  ]);
  assert.equal(view.pendingApproval, null);
});

test('reduceEvent: a call the user stopped keeps its status and reads as stopped', () => {
  seq = 0;
  const view = model.reduceEvents(model.EMPTY_VIEW, [
    ev('run_started', { mode: 'single', message: 'q' }),
    ev('tool_call', { id: 'c1', name: 'run_cell', args: { code: 'sleep()' }, needs_approval: false }),
    ev('cell_started', { id: 'c1', code: 'sleep()', notebook_path: null, kernel_id: null }),
    ev('tool_result', { id: 'c1', name: 'run_cell', status: 'rejected', summary: 'Stopped by the user' }),
    ev('tool_call', { id: 'c2', name: 'run_cell', args: { code: '1' }, needs_approval: true }),
    ev('tool_result', { id: 'c2', name: 'run_cell', status: 'rejected', summary: 'Rejected: no' }),
    ev('run_finished', { status: 'cancelled' })
  ]);
  const [stopped, rejected] = view.items.filter(i => i.kind === 'tool');
  assert.equal(stopped.status, 'rejected');
  assert.equal(model.isStopped(stopped), true);
  assert.equal(rejected.status, 'rejected');
  assert.equal(model.isStopped(rejected), false);
});

test('reduceEvent: tool_result.stopped marks the call stopped whatever its summary', () => {
  seq = 0;
  const view = model.reduceEvents(model.EMPTY_VIEW, [
    ev('run_started', { mode: 'single', message: 'q' }),
    ev('tool_call', { id: 'c1', name: 'execute_command', args: { command: 'sleep 9' }, needs_approval: false }),
    ev('tool_result', { id: 'c1', name: 'execute_command', status: 'error', summary: 'Interrupted.', stopped: true }),
    ev('tool_call', { id: 'c2', name: 'run_cell', args: { code: '1' }, needs_approval: false }),
    ev('tool_result', { id: 'c2', name: 'run_cell', status: 'error', summary: 'Stopped by the user' }),
    ev('run_finished', { status: 'cancelled' })
  ]);
  const [stopped, failed] = view.items.filter(i => i.kind === 'tool');
  assert.equal(stopped.stopped, true);
  assert.equal(model.isStopped(stopped), true);
  // The old summary match stays only for rejected calls (old servers).
  assert.equal(model.isStopped(failed), false);
});

test('reduceEvent: a cell waiting for the kernel, then started, is one entry', () => {
  seq = 0;
  const started = { id: 'c1', code: 'x = 1', notebook_path: 'a.ipynb', kernel_id: 'k' };
  let view = model.reduceEvents(model.EMPTY_VIEW, [
    ev('run_started', { mode: 'single', message: 'q' }),
    ev('tool_call', { id: 'c1', name: 'run_cell', args: { code: 'x = 1' }, needs_approval: false }),
    ev('cell_started', { ...started, waiting_for_kernel: true })
  ]);
  let tools = view.items.filter(i => i.kind === 'tool');
  assert.equal(tools.length, 1);
  assert.equal(tools[0].waitingForKernel, true);
  assert.equal(tools[0].status, 'running');
  view = model.reduceEvents(view, [
    ev('cell_started', { ...started, waiting_for_kernel: false }),
    ev('cell_output', { id: 'c1', output: { output_type: 'stream', name: 'stdout', text: 'hi\n' } })
  ]);
  tools = view.items.filter(i => i.kind === 'tool');
  assert.equal(tools.length, 1);
  assert.equal(tools[0].waitingForKernel, false);
  assert.equal(tools[0].outputs.length, 1);
  // A run stopped while the cell waited does not leave it "waiting".
  view = model.reduceEvents(model.EMPTY_VIEW, [
    ev('run_started', { mode: 'single', message: 'q' }),
    ev('cell_started', { ...started, id: 'c9', waiting_for_kernel: true }),
    ev('tool_result', { id: 'c9', name: 'run_cell', status: 'rejected', summary: 'Stopped', stopped: true })
  ]);
  assert.equal(view.items.find(i => i.kind === 'tool').waitingForKernel, false);
});

test('reduceEvent: live-only outputs stay out of the timeline, the overflow summary goes in', () => {
  seq = 0;
  const out = text => ({ output_type: 'stream', name: 'stdout', text });
  const before = model.reduceEvents(model.EMPTY_VIEW, [
    ev('run_started', { mode: 'single', message: 'q' }),
    ev('cell_started', { id: 'c1', code: 'loop()', notebook_path: null, kernel_id: null }),
    ev('cell_output', { id: 'c1', output: out('1\n') })
  ]);
  const liveOnly = { type: 'cell_output', seq: NaN, thread_id: 't1', run_id: 'r1', agent: 'main', id: 'c1', output: out('2\n'), live_only: true };
  const after = model.reduceEvent(before, liveOnly);
  assert.equal(after, before, 'nothing changes, not even lastSeq');
  const view = model.reduceEvents(after, [
    ev('cell_output', { id: 'c1', output: out('[... 1 lines omitted ...]\n'), overflow_summary: true }),
    ev('cell_output', { id: 'c1', output: out('3\n'), overflow_summary: true })
  ]);
  const tool = view.items.find(i => i.kind === 'tool');
  assert.deepEqual(tool.outputs.map(o => o.text), ['1\n[... 1 lines omitted ...]\n3\n']);
  assert.equal(model.isLiveOnly(liveOnly), true);
});

test('reduceEvent: kernel_unresponsive errors carry the kernel to restart', () => {
  seq = 0;
  const view = model.reduceEvents(model.EMPTY_VIEW, [
    ev('run_started', { mode: 'single', message: 'q' }),
    ev('error', { kind: 'kernel_unresponsive', message: 'Still busy.', retryable: false, kernel_id: 'k-42' }),
    ev('error', { kind: 'llm_error', message: 'Oops', retryable: true })
  ]);
  const [stuck, other] = view.items.filter(i => i.kind === 'error');
  assert.equal(stuck.errorKind, tokens.KERNEL_UNRESPONSIVE);
  assert.equal(stuck.kernelId, 'k-42');
  assert.equal(other.kernelId, null);
});

test('SSEParser: an event without an id line has no id (not the previous one)', () => {
  const parser = new api.SSEParser();
  const out = parser.push(
    'id: 5\nevent: cell_output\ndata: {"seq":5}\n\n' +
      'event: cell_output\ndata: {"live_only":true}\n\n' +
      'event: caught_up\ndata: {"seq":5}\n\n' +
      'id: 6\nevent: run_finished\ndata: {"seq":6}\n\n'
  );
  assert.deepEqual(out.map(m => m.id), ['5', null, null, '6']);
  assert.equal(api.toEvent(out[0]).seq, 5);
  assert.ok(Number.isNaN(api.toEvent(out[1]).seq));
  assert.ok(Number.isNaN(api.toEvent(out[2]).seq), 'caught_up is not stored either');
});

test('ThreadModel: live-only outputs reach the notebook bridge but never the resume point', async () => {
  seq = 0;
  const first = [
    ev('run_started', { mode: 'single', message: 'q' }),
    ev('cell_started', { id: 'c1', code: 'loop()', notebook_path: 'a.ipynb', kernel_id: 'k' })
  ];
  const unstored = { id: 'c1', output: { output_type: 'stream', name: 'stdout', text: 'x\n' }, live_only: true, seq: 99 };
  const rest = [ev('run_finished', { status: 'completed' })];
  const urls = [];
  const { settings } = fakeSettings(async (url, request, n) => {
    urls.push(url);
    if (n > 1) {
      return streamResponse([sse(rest)]);
    }
    const encoder = new TextEncoder();
    const body = new ReadableStream({
      async start(controller) {
        controller.enqueue(encoder.encode(sse(first)));
        controller.enqueue(encoder.encode(`event: caught_up\ndata: {"seq":${first[1].seq}}\n\n`));
        await sleep(20); // well under the quiet period: caught_up alone ends the replay
        controller.enqueue(encoder.encode(`event: cell_output\ndata: ${JSON.stringify(unstored)}\n\n`));
        await sleep(20);
        controller.error(new TypeError('network down'));
      }
    });
    return new Response(body, { status: 200 });
  });
  const thread = new model.ThreadModel({ api: new api.CellwrightAPI(settings), threadId: 't1' });
  const live = [];
  thread.liveEvent.connect((_, e) => live.push([e.type, !!e.live_only]));
  const ended = new Promise(resolve => thread.streamEnded.connect(() => resolve()));
  thread.connect({ replay: true });
  await ended;
  assert.deepEqual(live, [['cell_output', true], ['run_finished', false]]);
  assert.match(urls[1], new RegExp(`after=${first[1].seq}(&|$)`), 'resumes after the last stored event');
  assert.deepEqual(thread.view.items.find(i => i.kind === 'tool').outputs, []);
  thread.dispose();
});

test('agentLabel: readable agent names', () => {
  assert.equal(tokens.agentLabel('python_developer'), 'Python developer');
  assert.equal(tokens.agentLabel('researcher'), 'Researcher');
  assert.equal(tokens.agentLabel('planner'), 'Planner');
  assert.equal(tokens.agentLabel('main'), 'Agent');
  assert.equal(tokens.agentLabel(''), 'Agent');
  assert.equal(tokens.agentLabel('data_engineer'), 'Data engineer');
});

// ------------------------------------------------------------------ requestAPI

test('requestAPI: the server message of an error answer', async () => {
  const { settings, calls } = fakeSettings(
    () =>
      new Response(JSON.stringify({ error: 'run_active', message: 'A run is active.' }), {
        status: 409,
        headers: { 'Content-Type': 'application/json' }
      })
  );
  await assert.rejects(api.requestAPI('threads/t1/runs', { method: 'POST', body: '{}' }, settings), error => {
    assert.ok(error instanceof ServerConnection.ResponseError);
    assert.equal(error.message, 'A run is active.');
    assert.equal(error.kind, 'run_active');
    assert.equal(error.status, 409);
    return true;
  });
  assert.match(calls[0].url, /^http:\/\/jupyter\.test\/cellwright\/api\/threads\/t1\/runs/);
  assert.equal(calls[0].headers.get('Authorization'), 'token secret');
});

test('requestAPI: a non-JSON 404 says the server extension may be missing', async () => {
  const { settings } = fakeSettings(() => new Response('<html>404</html>', { status: 404, statusText: 'Not Found' }));
  await assert.rejects(api.requestAPI('health', {}, settings), /server extension/);
});

// ------------------------------------------------------------------ ThreadModel streaming

test('ThreadModel: replayed backlog is not live; reconnects after the last seq', async () => {
  seq = 0;
  const backlog = [
    ev('run_started', { mode: 'single', message: 'q' }),
    ev('cell_started', { id: 'c1', code: '1', notebook_path: 'a.ipynb', kernel_id: 'k' })
  ];
  const later = [
    ev('cell_output', { id: 'c1', output: { output_type: 'stream', name: 'stdout', text: '1\n' } }),
    ev('run_finished', { status: 'completed' })
  ];
  const urls = [];
  const { settings } = fakeSettings(async (url, request, n) => {
    urls.push(url);
    if (n > 1) {
      return streamResponse([sse([later[1]])]);
    }
    // The backlog, a quiet period, one live event, then the network drops.
    const encoder = new TextEncoder();
    const body = new ReadableStream({
      async start(controller) {
        controller.enqueue(encoder.encode(sse(backlog)));
        await sleep(model.REPLAY_QUIET_MS + 150);
        controller.enqueue(encoder.encode(sse([later[0]])));
        await sleep(20);
        controller.error(new TypeError('network down'));
      }
    });
    return new Response(body, { status: 200 });
  });
  const client = new api.CellwrightAPI(settings);
  const thread = new model.ThreadModel({ api: client, threadId: 't1', notebookPath: 'a.ipynb' });
  const live = [];
  thread.liveEvent.connect((_, e) => live.push(e.type));
  const ended = new Promise(resolve => thread.streamEnded.connect(() => resolve()));
  thread.connect({ replay: true });
  await ended;
  assert.deepEqual(live, ['cell_output', 'run_finished']);
  assert.equal(thread.view.status, 'idle');
  assert.equal(thread.view.lastSeq, later[1].seq);
  assert.doesNotMatch(urls[0], /after=/);
  assert.match(urls[1], new RegExp(`after=${later[0].seq}(&|$)`));
  thread.dispose();
});

test('ThreadModel: an API error ends the stream and is reported', async () => {
  const { settings } = fakeSettings(
    () => new Response(JSON.stringify({ error: 'not_found', message: 'No thread t9.' }), { status: 404 })
  );
  const thread = new model.ThreadModel({ api: new api.CellwrightAPI(settings), threadId: 't9' });
  const errors = [];
  thread.errorRaised.connect((_, e) => errors.push(e.message));
  const ended = new Promise(resolve => thread.streamEnded.connect(() => resolve()));
  thread.connect({ replay: true });
  await ended;
  assert.deepEqual(errors, ['No thread t9.']);
  thread.dispose();
});

test('PanelModel: decide posts once even when clicked twice', async () => {
  seq = 0;
  const posts = [];
  const { settings } = fakeSettings(async (url, request) => {
    if (request.method === 'POST') {
      posts.push([url.split('?')[0], await request.text()]);
      await sleep(20);
      return new Response('{"run_id":"r2"}', { status: 202 });
    }
    return streamResponse([]);
  });
  const panel = new model.PanelModel({ api: new api.CellwrightAPI(settings), version: '0.1.0' });
  const thread = new model.ThreadModel({ api: panel.api, threadId: 't1' });
  thread.applyEvent(ev('run_started', { mode: 'single', message: 'q' }), false);
  thread.applyEvent(
    ev('approval_required', { id: 'c1', name: 'run_cell', args: { code: '1' }, description: '' }),
    false
  );
  thread.applyEvent(ev('run_finished', { status: 'awaiting_approval' }), false);
  // make it the active thread the way openThread does
  panel._track(thread);
  panel._setActive(thread);
  const results = await Promise.all([panel.decide('approve'), panel.decide('approve')]);
  assert.deepEqual(results.sort(), [false, true]);
  assert.equal(posts.length, 1);
  assert.match(posts[0][0], /threads\/t1\/approvals\/c1$/);
  assert.deepEqual(JSON.parse(posts[0][1]), { decision: 'approve' });
  assert.equal(panel.pendingApproval, null);
  panel.dispose();
});
