/**
 * The event reducer over recorded event streams (fixtures/, written by
 * devtools/record_panel_streams.py from real runs) and over hand-made events
 * for what no recording shows: threads recorded before `task_id`, nesting
 * deeper than the shipped agents allow, stops and overflowing cells.
 */
import * as assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  ConversationItem,
  EMPTY_VIEW,
  isStopped,
  isStreaming,
  ISubtaskItem,
  IThreadView,
  IToolItem,
  reduceEvent,
  reduceEvents
} from '../model';
import { CellwrightEvent } from '../contract.gen';
import { ev, recording, resetSeq } from './helpers';

function kinds(items: readonly ConversationItem[]): string[] {
  return items.map(item => item.kind);
}

function subtask(item: ConversationItem | undefined): ISubtaskItem {
  assert.equal(item?.kind, 'subtask');
  return item as ISubtaskItem;
}

function tool(item: ConversationItem | undefined): IToolItem {
  assert.equal(item?.kind, 'tool');
  return item as IToolItem;
}

/** The seq of a recorded (hence stored) event. */
function seq(event: CellwrightEvent): number {
  assert.equal(typeof event.seq, 'number');
  return event.seq as number;
}

/** The view after the events up to and including seq `upto`. */
function foldUpTo(events: readonly CellwrightEvent[], upto: number): IThreadView {
  return reduceEvents(EMPTY_VIEW, events.filter(e => seq(e) <= upto));
}

function seqOf(events: readonly CellwrightEvent[], match: (e: CellwrightEvent) => boolean): number {
  const found = events.find(match);
  assert.ok(found, 'the recording has the event the test needs');
  return seq(found);
}

// ------------------------------------------------------------------ recorded: one agent

test('single-agent recording: the pause for approval', () => {
  const { events } = recording('single_agent.json');
  const paused = seqOf(events, e => e.type === 'run_finished' && e.status === 'awaiting_approval');
  const view = foldUpTo(events, paused);
  assert.equal(view.status, 'awaiting_approval');
  assert.equal(view.pendingApproval?.id, 'call_load');
  assert.deepEqual(kinds(view.items), ['user', 'assistant', 'tool']);
  assert.equal((view.items[1] as { text: string }).text, 'Loading the file first.');
  assert.equal(isStreaming(view), false);
  const cell = tool(view.items[2]);
  assert.equal(cell.status, 'awaiting_approval');
  assert.equal(cell.needsApproval, true);
  assert.deepEqual(view.todos.map(t => t.status), ['in_progress', 'pending']);
});

test('single-agent recording: approved, run as a cell, answered', () => {
  const { events } = recording('single_agent.json');
  const view = reduceEvents(EMPTY_VIEW, events);
  assert.equal(view.status, 'idle');
  assert.equal(view.pendingApproval, null);
  assert.equal(view.lastSeq, events[events.length - 1].seq);
  // The resumed segment adds no second user message; final_answer and write_todos are no entries.
  assert.deepEqual(kinds(view.items), ['user', 'assistant', 'tool', 'final']);
  const cell = tool(view.items[2]);
  assert.equal(cell.status, 'ok');
  assert.equal(cell.isCell, true);
  assert.equal(cell.executionCount, 1);
  assert.deepEqual(cell.outputs, [{ output_type: 'stream', name: 'stdout', text: 'shape (3, 2)\n' }]);
  const final = view.items[3];
  assert.equal(final.kind, 'final');
  assert.deepEqual(final.kind === 'final' && final.nextItems, [{ title: 'Plot it', prompt: 'plot the data' }]);
  assert.equal(view.agent, 'main');
});

test('single-agent recording: every event twice, or the log twice, folds the same', () => {
  const { events } = recording('single_agent.json');
  const once = reduceEvents(EMPTY_VIEW, events);
  assert.deepEqual(reduceEvents(EMPTY_VIEW, events.flatMap(e => [e, e])), once);
  assert.equal(reduceEvents(once, events), once, 'a replay of what was seen changes nothing');
});

// ------------------------------------------------------------------ recorded: several agents

test('multi-agent recording: each sub-agent works inside its task block', () => {
  const { events } = recording('multi_agent.json');
  const streamed = seqOf(events, e => e.type === 'token' && e.agent === 'researcher');
  let view = foldUpTo(events, streamed);
  const researcher = subtask(view.items[2]);
  assert.equal(researcher.id, 'call_p1');
  assert.equal(researcher.agent, 'researcher');
  assert.equal(researcher.task, 'Find the sales file.');
  assert.equal(researcher.active, true);
  assert.deepEqual(kinds(researcher.items), ['tool', 'assistant']);
  assert.deepEqual(view.streaming, ['task-call_p1']);
  assert.equal(view.agent, 'researcher');

  const paused = seqOf(events, e => e.type === 'run_finished' && e.status === 'awaiting_approval');
  view = foldUpTo(events, paused);
  assert.deepEqual(kinds(view.items), ['user', 'assistant', 'subtask', 'subtask']);
  const done = subtask(view.items[2]);
  assert.equal(done.done, true);
  assert.equal(done.active, false);
  assert.equal(done.summary, 'The file is sales.csv.');
  const developer = subtask(view.items[3]);
  assert.equal(developer.agent, 'python_developer');
  assert.equal(developer.active, true);
  assert.deepEqual(
    developer.items.map(i => [i.kind, tool(i).name, tool(i).status]),
    [['tool', 'run_cell', 'awaiting_approval']]
  );
  assert.equal(view.pendingApproval?.agent, 'python_developer');
  assert.equal(view.agent, 'python_developer', 'the agent that asks is the one in control');
  assert.deepEqual(view.tasks, { call_p1: ['task-call_p1'], call_p2: ['task-call_p2'] });

  // The resume re-announces the delegation: the same block, the same agent.
  const resumed = seqOf(events, e => e.type === 'agent_switch' && seq(e) > paused);
  view = foldUpTo(events, resumed);
  assert.equal(view.agent, 'python_developer');
  assert.equal(view.items.length, 4);
});

test('multi-agent recording: the finished run', () => {
  const { events } = recording('multi_agent.json');
  const view = reduceEvents(EMPTY_VIEW, events);
  assert.deepEqual(kinds(view.items), ['user', 'assistant', 'subtask', 'subtask', 'final']);
  const developer = subtask(view.items[3]);
  assert.deepEqual(kinds(developer.items), ['tool', 'assistant']);
  const cell = tool(developer.items[0]);
  assert.equal(cell.isCell, true);
  assert.equal(cell.status, 'ok');
  assert.deepEqual(cell.outputs, [{ output_type: 'stream', name: 'stdout', text: '42\n' }]);
  assert.equal(developer.status, 'ok');
  assert.equal(developer.done, true);
  assert.equal(view.agent, 'planner');
  assert.equal(view.status, 'idle');
  assert.equal(view.streaming, null);
});

// ------------------------------------------------------------------ hand-made: delegation

test('task_id nests a delegation inside a delegation', () => {
  resetSeq();
  const view = reduceEvents(EMPTY_VIEW, [
    ev('run_started', { agent: 'planner', mode: 'multi', message: 'go' }),
    ev('tool_call', { agent: 'planner', id: 't1', name: 'task', args: { agent: 'python_developer', description: 'Build it.' }, needs_approval: false }),
    ev('tool_call', { agent: 'python_developer', task_id: 't1', id: 't2', name: 'task', args: { agent: 'researcher', description: 'Find the data.' }, needs_approval: false }),
    ev('tool_call', { agent: 'researcher', task_id: 't2', id: 'r1', name: 'read_file', args: { path: 'a.csv' }, needs_approval: false }),
    ev('token', { agent: 'researcher', task_id: 't2', text: 'Found a.csv.' }),
    ev('tool_result', { agent: 'python_developer', task_id: 't1', id: 't2', name: 'task', status: 'ok', summary: 'Found a.csv.' }),
    ev('token', { agent: 'python_developer', task_id: 't1', text: 'Built.' })
  ]);
  const outer = subtask(view.items[1]);
  assert.deepEqual(kinds(outer.items), ['subtask', 'assistant']);
  const inner = subtask(outer.items[0]);
  assert.equal(inner.agent, 'researcher');
  assert.equal(inner.done, true);
  assert.deepEqual(kinds(inner.items), ['tool', 'assistant']);
  assert.equal(outer.done, false);
  assert.deepEqual(view.tasks.t2, ['task-t1', 'task-t2']);
  assert.deepEqual(view.streaming, ['task-t1']);
});

test('a failed delegation, and a sub-agent that may not delegate', () => {
  resetSeq();
  const view = reduceEvents(EMPTY_VIEW, [
    ev('run_started', { agent: 'planner', mode: 'multi', message: 'go' }),
    ev('tool_call', { agent: 'planner', id: 'p0', name: 'task', args: { agent: 'data_engineer', description: 'x' }, needs_approval: false }),
    ev('tool_result', { agent: 'planner', id: 'p0', name: 'task', status: 'error', summary: 'may call: python_developer, researcher' }),
    ev('tool_call', { agent: 'planner', id: 'p1', name: 'task', args: { agent: 'python_developer', description: 'Do it.' }, needs_approval: false }),
    ev('tool_call', { agent: 'python_developer', task_id: 'p1', id: 'n1', name: 'task', args: { agent: 'researcher', description: 'Help me.' }, needs_approval: false }),
    ev('tool_result', { agent: 'python_developer', task_id: 'p1', id: 'n1', name: 'task', status: 'error', summary: 'no tool named task' }),
    ev('tool_result', { agent: 'planner', id: 'p1', name: 'task', status: 'ok', summary: 'I could not delegate.' }),
    ev('run_finished', { agent: 'planner', status: 'completed' })
  ]);
  assert.deepEqual(
    view.items.slice(1).map(i => [subtask(i).agent, subtask(i).status]),
    [['data_engineer', 'error'], ['python_developer', 'ok']]
  );
  const refused = subtask(subtask(view.items[2]).items[0]);
  assert.equal(refused.status, 'error');
  assert.equal(refused.done, true);
});

test('sub-agent events without task_id (older threads) go to that agent\'s open block', () => {
  resetSeq();
  const view = reduceEvents(EMPTY_VIEW, [
    ev('run_started', { agent: 'planner', mode: 'multi', message: 'go' }),
    ev('tool_call', { agent: 'planner', id: 'p1', name: 'task', args: { agent: 'researcher', description: 'Look.' }, needs_approval: false }),
    ev('agent_switch', { agent: 'planner', from: 'planner', to: 'researcher', task: 'Look.' }),
    ev('token', { agent: 'researcher', text: 'report' }),
    ev('agent_switch', { agent: 'planner', from: 'researcher', to: 'planner', task: 'Look.' }),
    ev('tool_result', { agent: 'planner', id: 'p1', name: 'task', status: 'ok', summary: 'report' }),
    ev('token', { agent: 'planner', text: 'summary' }),
    // a sub-agent no task call announced gets a block of its own
    ev('tool_call', { agent: 'python_developer', id: 'd1', name: 'read_file', args: { path: 'a.py' }, needs_approval: false })
  ]);
  assert.deepEqual(kinds(view.items), ['user', 'subtask', 'assistant', 'subtask']);
  const researcher = subtask(view.items[1]);
  assert.equal((researcher.items[0] as { text: string }).text, 'report');
  assert.equal((view.items[2] as { text: string }).text, 'summary', 'planner and sub-agent tokens never merge');
  const orphan = subtask(view.items[3]);
  assert.equal(orphan.id, null);
  assert.equal(tool(orphan.items[0]).id, 'd1');
  assert.equal(view.agent, 'python_developer');
});

test('a new run after one that never finished settles what was left running', () => {
  resetSeq();
  const view = reduceEvents(EMPTY_VIEW, [
    ev('run_started', { agent: 'planner', mode: 'multi', message: 'first' }),
    ev('tool_call', { agent: 'planner', id: 'p1', name: 'task', args: { agent: 'researcher', description: 'x' }, needs_approval: false }),
    ev('tool_call', { agent: 'researcher', task_id: 'p1', id: 'r1', name: 'list_files', args: {}, needs_approval: false }),
    ev('run_started', { agent: 'planner', mode: 'multi', message: 'second' })
  ]);
  const block = subtask(view.items[1]);
  assert.equal(block.status, 'cancelled');
  assert.equal(block.active, false);
  assert.equal(tool(block.items[0]).status, 'cancelled');
  assert.equal(view.status, 'running');
  assert.deepEqual(kinds(view.items), ['user', 'subtask', 'user']);
});

// ------------------------------------------------------------------ hand-made: calls and cells

test('a final that repeats the streamed text shows once', () => {
  resetSeq();
  const view = reduceEvents(EMPTY_VIEW, [
    ev('run_started', { mode: 'single', message: 'q' }),
    ev('token', { text: 'The answer ' }),
    ev('token', { text: 'is 42.' }),
    ev('final', { answer: 'The answer is 42.', next_items: [] }),
    ev('run_finished', { status: 'completed' })
  ]);
  assert.deepEqual(kinds(view.items), ['user', 'final']);
});

test('execute_command output stays with its call, merged by stream', () => {
  resetSeq();
  const out = (name: string, text: string) => ({ id: 'x1', output: { output_type: 'stream', name, text } });
  const view = reduceEvents(EMPTY_VIEW, [
    ev('run_started', { mode: 'single', message: 'list' }),
    ev('tool_call', { id: 'x1', name: 'execute_command', args: { command: 'ls' }, needs_approval: false }),
    ev('cell_output', out('stdout', 'a\n')),
    ev('cell_output', out('stdout', 'b\n')),
    ev('cell_output', out('stderr', 'warn\n')),
    ev('tool_result', { id: 'x1', name: 'execute_command', status: 'ok', summary: 'exit code 0' })
  ]);
  const call = tool(view.items[1]);
  assert.equal(call.isCell, false);
  assert.deepEqual(call.outputs, [
    { output_type: 'stream', name: 'stdout', text: 'a\nb\n' },
    { output_type: 'stream', name: 'stderr', text: 'warn\n' }
  ]);
});

test('stopped calls: the stopped field, and the summary of older servers', () => {
  resetSeq();
  const view = reduceEvents(EMPTY_VIEW, [
    ev('run_started', { mode: 'single', message: 'q' }),
    ev('tool_call', { id: 'c1', name: 'execute_command', args: { command: 'sleep 9' }, needs_approval: false }),
    ev('tool_result', { id: 'c1', name: 'execute_command', status: 'error', summary: 'Interrupted.', stopped: true }),
    ev('tool_call', { id: 'c2', name: 'run_cell', args: { code: '1' }, needs_approval: false }),
    ev('tool_result', { id: 'c2', name: 'run_cell', status: 'rejected', summary: 'Stopped by the user' }),
    ev('tool_call', { id: 'c3', name: 'run_cell', args: { code: '2' }, needs_approval: false }),
    ev('tool_result', { id: 'c3', name: 'run_cell', status: 'error', summary: 'Stopped by the user' }),
    ev('tool_call', { id: 'c4', name: 'run_cell', args: { code: '3' }, needs_approval: true }),
    ev('tool_result', { id: 'c4', name: 'run_cell', status: 'rejected', summary: 'Rejected: no' }),
    ev('run_finished', { status: 'cancelled' })
  ]);
  const calls = view.items.filter((i): i is IToolItem => i.kind === 'tool');
  assert.deepEqual(calls.map(isStopped), [true, true, false, false]);
  assert.equal(view.items[view.items.length - 1].kind, 'run_end');
});

test('a cell waiting for the kernel, then started, is one entry', () => {
  resetSeq();
  const started = { id: 'c1', code: 'x = 1', notebook_path: 'a.ipynb', kernel_id: 'k' };
  let view = reduceEvents(EMPTY_VIEW, [
    ev('run_started', { mode: 'single', message: 'q' }),
    ev('tool_call', { id: 'c1', name: 'run_cell', args: { code: 'x = 1' }, needs_approval: false }),
    ev('cell_started', { ...started, waiting_for_kernel: true })
  ]);
  assert.equal(tool(view.items[1]).waitingForKernel, true);
  view = reduceEvents(view, [
    ev('cell_started', { ...started, waiting_for_kernel: false }),
    ev('tool_result', { id: 'c1', name: 'run_cell', status: 'rejected', summary: 'Stopped', stopped: true })
  ]);
  assert.equal(view.items.length, 2);
  assert.equal(tool(view.items[1]).waitingForKernel, false);
});

test('live-only outputs stay out of the timeline and never move lastSeq', () => {
  resetSeq();
  const out = (text: string) => ({ output_type: 'stream', name: 'stdout', text });
  const before = reduceEvents(EMPTY_VIEW, [
    ev('run_started', { mode: 'single', message: 'q' }),
    ev('cell_started', { id: 'c1', code: 'loop()', notebook_path: null, kernel_id: null }),
    ev('cell_output', { id: 'c1', output: out('1\n') })
  ]);
  const liveOnly = { ...ev('cell_output', { id: 'c1', output: out('2\n'), live_only: true }), seq: NaN };
  assert.equal(reduceEvent(before, liveOnly), before);
  const view = reduceEvents(before, [
    ev('cell_output', { id: 'c1', output: out('[... 1 lines omitted ...]\n'), overflow_summary: true }),
    ev('cell_output', { id: 'c1', output: out('3\n'), overflow_summary: true })
  ]);
  const outputs = tool(view.items[1]).outputs as { text: string }[];
  assert.deepEqual(outputs.map(o => o.text), ['1\n[... 1 lines omitted ...]\n3\n']);
});

test('kernel_unresponsive errors carry the kernel to restart', () => {
  resetSeq();
  const view = reduceEvents(EMPTY_VIEW, [
    ev('run_started', { mode: 'single', message: 'q' }),
    ev('error', { kind: 'kernel_unresponsive', message: 'Still busy.', retryable: false, kernel_id: 'k-42' }),
    ev('error', { kind: 'llm_error', message: 'Oops', retryable: true })
  ]);
  const errors = view.items.filter(i => i.kind === 'error');
  assert.deepEqual(
    errors.map(e => e.kind === 'error' && [e.errorKind, e.kernelId]),
    [['kernel_unresponsive', 'k-42'], ['llm_error', null]]
  );
});
