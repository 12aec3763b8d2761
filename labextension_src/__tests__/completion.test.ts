/**
 * The inline completion client's logic: JSON lines split anywhere (a UTF-8
 * character too), the suggestion deltas build and `done` settles or clears,
 * the bounded cells above, the debounce's abort, one request per editor.
 */
import * as assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  cellsAbove,
  ChunkReader,
  completionUsageText,
  InFlight,
  MAX_CELL_CHARS,
  MAX_CELLS_ABOVE,
  Suggestion,
  wait
} from '../completion/lines';
import { trans } from './helpers';

test('ChunkReader: lines split across reads, a character split across bytes', () => {
  const reader = new ChunkReader();
  const body = new TextEncoder().encode('{"type":"delta","text":"é"}\n{"type":"done","text":"é + 1"}\n');
  const cut = body.indexOf(0xa9); // the second byte of é
  assert.deepEqual(reader.feed(body.slice(0, cut)), []);
  const first = reader.feed(body.slice(cut, cut + 10));
  assert.deepEqual(first, [{ type: 'delta', text: 'é' }]);
  assert.deepEqual(reader.feed(body.slice(cut + 10)), [{ type: 'done', text: 'é + 1' }]);
  assert.deepEqual(reader.end(), []);
  assert.deepEqual(new ChunkReader().feed('not json\n{"no":"type"}\n'), []);
  const tail = new ChunkReader();
  tail.feed('{"type":"done","text":"x"}');
  assert.deepEqual(tail.end(), [{ type: 'done', text: 'x' }]);
});

test('Suggestion: deltas append, done settles it (and an empty done clears it)', () => {
  const s = new Suggestion(trans);
  assert.equal(s.apply({ type: 'delta', text: 'groupby(' }), true);
  s.apply({ type: 'delta', text: "'city')\n" });
  assert.equal(s.text, "groupby('city')\n");
  assert.equal(s.apply({ type: 'done', text: "groupby('city')" }), true);
  assert.equal(s.done, true);
  assert.equal(s.apply({ type: 'delta', text: 'more' }), false);
  const dropped = new Suggestion(trans);
  dropped.apply({ type: 'delta', text: 'groupby(' });
  dropped.apply({ type: 'done', text: '', dropped: 'does not parse' });
  assert.equal(dropped.text, '');
  const failed = new Suggestion(trans);
  failed.apply({ type: 'error', kind: 'llm_unreachable', message: 'Cannot reach it' });
  assert.equal(failed.error, 'Cannot reach it');
  assert.equal(failed.done, true);
});

test('cellsAbove: code cells only, nearest first, bounded in number and size', () => {
  const cells = [
    { type: 'code', source: 'import pandas as pd' },
    { type: 'markdown', source: '# Title' },
    { type: 'code', source: '' },
    { type: 'code', source: 'x'.repeat(MAX_CELL_CHARS + 10) + 'END' },
    { type: 'code', source: 'df = pd.read_csv("a.csv")' },
    { type: 'code', source: 'df.' }
  ];
  const above = cellsAbove(cells, 5);
  assert.equal(above[0], 'df = pd.read_csv("a.csv")');
  assert.equal(above[1].length, MAX_CELL_CHARS);
  assert.ok(above[1].endsWith('END'));
  assert.equal(above[2], 'import pandas as pd');
  assert.equal(above.length, 3);
  const many = Array.from({ length: 50 }, (_, i) => ({ type: 'code', source: `x${i} = ${i}` }));
  assert.equal(cellsAbove(many, 50).length, MAX_CELLS_ABOVE);
  assert.equal(cellsAbove(many, 50)[0], 'x49 = 49');
});

test('InFlight: a new request in the same editor aborts the one before; other editors keep theirs', () => {
  const inFlight = new InFlight();
  const first = inFlight.start('cell-a');
  const other = inFlight.start('file-b');
  const second = inFlight.start('cell-a');
  assert.equal(first.signal.aborted, true);
  assert.equal(second.signal.aborted, false);
  assert.equal(other.signal.aborted, false);
  inFlight.finish('cell-a', first); // a late finish of the aborted one changes nothing
  assert.equal(inFlight.size, 2);
  inFlight.finish('cell-a', second);
  assert.equal(inFlight.size, 1);
});

test('wait: true after the pause, false as soon as the signal aborts', async () => {
  const controller = new AbortController();
  assert.equal(await wait(1, controller.signal), true);
  const pending = wait(10_000, controller.signal);
  controller.abort();
  assert.equal(await pending, false);
  assert.equal(await wait(1, controller.signal), false);
});

test('completionUsageText: nothing before the first completion, then requests, cache and tokens', () => {
  const none = { requests: 0, cached: 0, cancelled: 0, dropped: 0, prompt_tokens: 0, completion_tokens: 0, estimated: false };
  assert.equal(completionUsageText(trans, none), null);
  assert.equal(
    completionUsageText(trans, { ...none, requests: 12, cached: 5, prompt_tokens: 3400, completion_tokens: 210 }),
    'Inline completion: 12 requests (5 more from the cache) · 3,400 prompt · 210 completion tokens'
  );
  assert.equal(
    completionUsageText(trans, { ...none, requests: 1, prompt_tokens: 40, completion_tokens: 2, estimated: true }),
    'Inline completion: 1 request · ≈ 40 prompt · 2 completion tokens'
  );
});
