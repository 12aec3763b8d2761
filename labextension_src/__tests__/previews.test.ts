/**
 * Token previews (`previews=1`): each delta is shown as it arrives, and the
 * coalesced stored row that repeats it replaces it, so the panel ends as the
 * stored events alone leave it — live, after a reconnect, in a sub-agent's block.
 */
import * as assert from 'node:assert/strict';
import { afterEach, test } from 'node:test';

import { CellwrightAPI } from '../api';
import { CellwrightEvent } from '../contract.gen';
import {
  ConversationItem,
  EMPTY_VIEW,
  ISubtaskItem,
  IThreadView,
  reduceEvent,
  reduceEvents,
  ThreadModel
} from '../model';
import {
  asMessages,
  caughtUp,
  ev,
  fakeServer,
  IRecordedMessage,
  resetSeq,
  sse,
  streamResponse,
  trans,
  until
} from './helpers';

/** A preview as `toEvent` hands it over: no `id:` line, so a NaN seq. */
function preview(storedAs: number, text: string, fields: Record<string, unknown> = {}): CellwrightEvent {
  return {
    type: 'token',
    seq: NaN,
    thread_id: 't1',
    run_id: 'r1',
    agent: 'main',
    text,
    live_only: true,
    stored_as: storedAs,
    ...fields
  } as unknown as CellwrightEvent;
}

/** Every assistant text and answer, depth first, in order: what the reader sees. */
function visible(items: readonly ConversationItem[]): string {
  return items
    .map(item => {
      switch (item.kind) {
        case 'assistant':
          return item.text;
        case 'final':
          return item.answer;
        case 'subtask':
          return visible(item.items);
        default:
          return '';
      }
    })
    .join('');
}

function block(view: IThreadView, id: string): ISubtaskItem {
  const found = view.items.find(item => item.kind === 'subtask' && item.id === id);
  assert.ok(found, `a block for ${id}`);
  return found as ISubtaskItem;
}

interface IRow {
  event: CellwrightEvent;
  /** The previews sent before this stored row (a burst's first delta is stored at once, unpreviewed). */
  previews?: string[];
}

/** The server's order: a row's previews, then the row. */
function interleave(rows: IRow[]): CellwrightEvent[] {
  return rows.flatMap(({ event, previews }) => [
    ...(previews ?? []).map(text =>
      preview(event.seq as number, text, { agent: event.agent, task_id: event.task_id })
    ),
    event
  ]);
}

function singleAgentRows(): IRow[] {
  resetSeq();
  return [
    { event: ev('run_started', { message: 'hi', mode: 'single' }) },
    { event: ev('token', { text: 'Hello' }), previews: ['Hel', 'lo'] },
    { event: ev('token', { text: ' world' }), previews: [' wor', 'ld'] },
    { event: ev('token', { text: '! Bye' }), previews: [' Bye'] },
    { event: ev('tool_call', { id: 'c1', name: 'list_files', args: {}, needs_approval: false }) },
    { event: ev('tool_result', { id: 'c1', status: 'ok', summary: '2 files' }) },
    { event: ev('token', { text: 'Done.' }), previews: ['Do', 'ne', '.'] },
    { event: ev('final', { answer: 'Done.' }) },
    { event: ev('run_finished', { status: 'completed' }) }
  ];
}

afterEach(() => resetSeq());

test('previews show at once and end as the stored text alone, never twice', () => {
  const rows = singleAgentRows();
  const stored = rows.map(row => row.event);
  let view = EMPTY_VIEW;
  let storedText = '';
  let pending = '';
  for (const event of interleave(rows)) {
    const before = view;
    view = reduceEvent(view, event);
    if ((event as { live_only?: boolean }).live_only) {
      pending += (event as { text: string }).text;
      assert.equal(view.lastSeq, before.lastSeq, 'a preview never moves the resume point');
    } else if (event.type === 'token') {
      storedText += event.text;
      pending = '';
    }
    assert.equal(visible(view.items), storedText + pending);
  }
  assert.deepEqual(view, reduceEvents(EMPTY_VIEW, stored));
  assert.equal(view.previews, null);
});

test('a preview of a row folded in is dropped; a row never stored takes its previews along', () => {
  resetSeq();
  const start = ev('run_started', { message: 'hi' });
  const token = ev('token', { text: 'Hi' });
  let view = reduceEvents(EMPTY_VIEW, [start, token]);
  assert.equal(reduceEvent(view, preview(2, 'Hi')), view);

  view = reduceEvent(view, preview(3, ' there'));
  assert.equal(visible(view.items), 'Hi there');
  // Stopped before the row was written: the next stored event is later than it.
  const finished = { ...ev('run_finished', { status: 'cancelled' }), seq: 4 } as CellwrightEvent;
  view = reduceEvent(view, finished);
  assert.deepEqual(view, reduceEvents(EMPTY_VIEW, [start, token, finished]));
});

test('sub-agent previews go to their task block; the stored rows replace them there', () => {
  resetSeq();
  const rows: IRow[] = [
    { event: ev('run_started', { message: 'go', mode: 'multi', agent: 'planner' }) },
    { event: ev('token', { agent: 'planner', text: 'Plan.' }), previews: ['Pl', 'an.'] },
    {
      event: ev('tool_call', {
        agent: 'planner',
        id: 'task-a',
        name: 'task',
        args: { agent: 'analyst', description: 'A' },
        needs_approval: false
      })
    },
    {
      event: ev('tool_call', {
        agent: 'planner',
        id: 'task-b',
        name: 'task',
        args: { agent: 'coder', description: 'B' },
        needs_approval: false
      })
    },
    { event: ev('token', { agent: 'analyst', task_id: 'task-a', text: 'Found' }), previews: ['Fou', 'nd'] },
    { event: ev('token', { agent: 'coder', task_id: 'task-b', text: 'Wrote' }), previews: ['Wro', 'te'] },
    { event: ev('token', { agent: 'analyst', task_id: 'task-a', text: ' it' }), previews: [' it'] },
    { event: ev('tool_result', { agent: 'planner', id: 'task-a', status: 'ok' }) },
    { event: ev('tool_result', { agent: 'planner', id: 'task-b', status: 'ok' }) },
    { event: ev('run_finished', { agent: 'planner', status: 'completed' }) }
  ];
  const events = interleave(rows);
  // The view with every preview of a task's first row shown, before the row itself.
  const beforeRow = (taskId: string): IThreadView =>
    reduceEvents(
      EMPTY_VIEW,
      events.slice(0, events.findIndex(e => e.task_id === taskId && !Number.isNaN(e.seq)))
    );

  const midA = beforeRow('task-a');
  assert.equal(visible(block(midA, 'task-a').items), 'Found');
  assert.equal(visible(block(midA, 'task-b').items), '');
  assert.equal(visible(midA.items.filter(item => item.kind !== 'subtask')), 'Plan.');

  const midB = beforeRow('task-b');
  assert.equal(visible(block(midB, 'task-a').items), 'Found');
  assert.equal(visible(block(midB, 'task-b').items), 'Wrote');

  const view = reduceEvents(EMPTY_VIEW, events);
  assert.equal(visible(block(view, 'task-a').items), 'Found it');
  assert.equal(visible(block(view, 'task-b').items), 'Wrote');
  assert.deepEqual(view, reduceEvents(EMPTY_VIEW, rows.map(row => row.event)));
});

// ------------------------------------------------------------------ the stream

const threads: ThreadModel[] = [];
afterEach(() => threads.splice(0).forEach(thread => thread.dispose()));

function previewMessage(event: CellwrightEvent): IRecordedMessage {
  const { seq: _unused, ...data } = event as unknown as Record<string, unknown>;
  return { id: null, event: 'token', data };
}

test('a reconnect between previews and their row shows the text once', async () => {
  const rows = singleAgentRows();
  const stored = rows.map(row => row.event);
  // The first connection breaks after the previews of row 3, before the row itself.
  const cut = 2;
  const first = [
    ...asMessages(stored.slice(0, cut)),
    caughtUp(cut),
    ...interleave([rows[cut]]).filter(e => Number.isNaN(e.seq)).map(previewMessage)
  ];
  const { settings, calls } = fakeServer((_, n) =>
    n === 1
      ? streamResponse({ chunks: [sse(first)], fail: true })
      : streamResponse({
          chunks: [
            sse(asMessages(stored.slice(cut, cut + 1))),
            sse([caughtUp(cut + 1)]),
            ...interleave(rows.slice(cut + 1)).map(e =>
              sse(Number.isNaN(e.seq) ? [previewMessage(e)] : asMessages([e]))
            )
          ]
        })
  );
  const thread = new ThreadModel({ api: new CellwrightAPI(settings, trans), threadId: 'thread-1' });
  threads.push(thread);
  thread.connect({ replay: true });

  await until(() => visible(thread.view.items) === 'Hello world');
  assert.equal(thread.view.lastSeq, cut, 'the previews are shown but not resumed after');
  await until(() => thread.view.status === 'idle' && calls.length === 2);
  await until(() => thread.connection === 'closed');

  assert.match(calls[0].url, /\/threads\/thread-1\/events\?previews=1(&|$)/);
  assert.equal(calls[0].headers.get('Last-Event-ID'), null);
  assert.equal(calls[1].headers.get('Last-Event-ID'), String(cut));
  assert.deepEqual(thread.view, reduceEvents(EMPTY_VIEW, stored));
  assert.equal(visible(thread.view.items), 'Hello world! ByeDone.');
});
