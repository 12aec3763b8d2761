/** The words of "What was sent to the model": the thread's summary and each request's line. */
import * as assert from 'node:assert/strict';
import { test } from 'node:test';

import { ModelRequestRecord, RequestsSummary } from '../contract.gen';
import {
  newSources,
  requestLine,
  sentText,
  sourcesText,
  sourceText,
  stepSentLine,
  totalsText
} from '../model/sentRequests';
import { EMPTY_VIEW, reduceEvents } from '../model';
import { ev, resetSeq, trans } from './helpers';

const ZERO = { prompt_tokens: 0, completion_tokens: 0, estimated: false };

const SUMMARY: RequestsSummary = {
  requests: 12,
  bytes: 348_365,
  redactions: 5,
  sources: { file: 3, dataframe: 2, cell_output: 4, mcp_result: 1, custom_kind: 2 },
  data_policy: 'schema_only'
};

function record(seq: number, fields: Partial<ModelRequestRecord> = {}): ModelRequestRecord {
  return {
    seq,
    agent: 'planner',
    kind: 'turn',
    bytes: 24_700,
    redactions: 0,
    sources: [],
    sha256: 'ab'.repeat(32),
    created_at: 0,
    kept: true,
    ...fields
  };
}

test('the summary names the data that reached the model, by kind', () => {
  assert.equal(
    sourcesText(trans, SUMMARY),
    'Data that reached the model: 3 files, 2 DataFrames, 4 cell outputs, 1 MCP result, 2 custom kind'
  );
  assert.equal(
    sourcesText(trans, { ...SUMMARY, sources: {} }),
    'Data that reached the model: none from your files or kernel'
  );
  assert.equal(totalsText(trans, SUMMARY), '12 requests · 340.2 KB · 5 redactions · schema only, no values');
  assert.equal(totalsText(trans, { ...SUMMARY, requests: 1, redactions: 0, data_policy: 'full' }), '1 request · 340.2 KB · full data');
});

test('a request says who asked, what kind, its size and redactions', () => {
  assert.equal(requestLine(trans, record(3, { redactions: 2 })), '#3 Planner · 24.1 KB · 2 redactions');
  assert.equal(requestLine(trans, record(4, { kind: 'summary', bytes: 900 })), '#4 Planner · summary · 900 B');
  assert.equal(sourceText(trans, { kind: 'cell_output', name: 'show the people' }), 'cell output: show the people');
});

test("each request shows the sources it added to the same agent's previous request", () => {
  const file = { kind: 'file', name: 'people.csv' };
  const cell = { kind: 'cell_output', name: 'print(df)' };
  const records = [
    record(1, { sources: [file] }),
    record(2, { agent: 'researcher', task_id: 'p1', sources: [cell] }),
    record(3, { sources: [file, cell] })
  ];
  assert.deepEqual(newSources(records, 0), [file]);
  assert.deepEqual(newSources(records, 1), [cell]);
  assert.deepEqual(newSources(records, 2), [cell]);
});

test('the full text is the messages and tools as sent, or says it was compacted', () => {
  const messages = [{ role: 'user', content: 'hi' }];
  assert.deepEqual(JSON.parse(sentText(trans, record(1, { messages }))), { messages });
  assert.match(sentText(trans, record(1, { kept: false })), /^Compacted: only its size \(24.1 KB\) and SHA-256 abab/);
});

test('a model call\'s usage event puts what its request sent under the step, in its agent\'s place', () => {
  resetSeq();
  const request = { request_seq: 3, bytes: 2048, redactions: 2, sources: [{ kind: 'file', name: 'people.csv' }] };
  const usage = { call: ZERO, run: ZERO, thread: ZERO, context_tokens: 10, context_budget: 100 };
  const view = reduceEvents(EMPTY_VIEW, [
    ev('run_started', { mode: 'single', message: 'go' }),
    ev('usage', { ...usage, request }),
    ev('usage', usage) // requests not recorded: nothing under the step
  ]);
  const sent = view.items.filter(item => item.kind === 'sent');
  assert.deepEqual(sent.map(item => (item.kind === 'sent' ? item.request : null)), [request]);
  // Before the call's streamed text, which a final answer repeating it still replaces: shown once.
  const answered = reduceEvents(EMPTY_VIEW, [
    ev('run_started', { mode: 'single', message: 'go' }),
    ev('token', { text: 'There are 50.' }),
    ev('usage', { ...usage, request }),
    ev('final', { answer: 'There are 50.' })
  ]);
  assert.deepEqual(answered.items.map(item => item.kind), ['user', 'sent', 'final']);
  assert.equal(stepSentLine(trans, request), 'Sent to the model: 2.0 KB · 2 redactions · 1 source');
  assert.equal(stepSentLine(trans, { ...request, redactions: 0, sources: [] }), 'Sent to the model: 2.0 KB · no data from your files or kernel');
});
