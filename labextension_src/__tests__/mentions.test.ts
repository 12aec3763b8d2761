/**
 * The `@` mention rules the composer and the conversation share: finding the
 * mention under the caret, ranking candidates, the list's keyboard, what a
 * pick inserts, chips in a sent message; and the cell context block's bounds.
 */
import * as assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  cellContext,
  CODE_LIMIT,
  OUTPUT_LIMIT,
  splitCellContext,
  stripAnsi,
  withCellContext
} from '../cellContext';
import {
  activeMention,
  applyMention,
  fileCandidates,
  filterCandidates,
  foldersFor,
  IMentionCandidate,
  isMentionable,
  menuKey,
  splitMentions,
  variableCandidates
} from '../mentions';

const v = (name: string, type = 'int', shape?: string): IMentionCandidate => ({
  kind: 'variable',
  name,
  type,
  ...(shape ? { shape } : {})
});
const f = (name: string): IMentionCandidate => ({ kind: 'file', name, type: 'file' });

test('activeMention: the @token under the caret, only at a word start', () => {
  assert.deepEqual(activeMention('@', 1), { start: 0, end: 1, query: '' });
  assert.deepEqual(activeMention('plot @sal', 9), { start: 5, end: 9, query: 'sal' });
  // the caret inside the token: the query is what precedes it, the pick replaces it all
  assert.deepEqual(activeMention('plot @sales_df now', 8), { start: 5, end: 14, query: 'sa' });
  assert.deepEqual(activeMention('(@data/x.c', 10), { start: 1, end: 10, query: 'data/x.c' });
  assert.equal(activeMention('mail a@b.com', 12), null, 'an email is no mention');
  assert.equal(activeMention('plot @sal ', 10), null, 'a space ends it');
  assert.equal(activeMention('no at here', 5), null);
  assert.equal(activeMention('@x', 5), null, 'caret out of range');
  assert.deepEqual(activeMention('line\n@é', 7), { start: 5, end: 7, query: 'é' });
});

test('filterCandidates: prefix before basename before substring, variables first, bounded', () => {
  const all = [f('data/sales.csv'), v('resale'), v('sales_df', 'DataFrame', '(3, 2)'), f('sales.csv'), v('x')];
  assert.deepEqual(
    filterCandidates(all, 'sal').map(c => c.name),
    ['sales_df', 'sales.csv', 'data/sales.csv', 'resale']
  );
  assert.deepEqual(filterCandidates(all, 'SAL').map(c => c.name)[0], 'sales_df', 'case is ignored');
  assert.equal(filterCandidates(all, '').length, 5);
  assert.equal(filterCandidates(all, '', 2).length, 2);
  assert.deepEqual(filterCandidates(all, 'zzz'), []);
  // duplicates and names a mention cannot carry are dropped
  assert.deepEqual(filterCandidates([v('a'), v('a'), f('my file.csv')], '').map(c => c.name), ['a']);
});

test('isMentionable: the one rule for names (no spaces or quotes; no trailing dot)', () => {
  for (const ok of ['sales_df', 'data/sales.csv', 'naïve', 'a-b.ipynb']) {
    assert.ok(isMentionable(ok), ok);
  }
  for (const bad of ['my file.csv', "it's", 'a(b)', 'end.', '/abs', '']) {
    assert.ok(!isMentionable(bad), bad);
  }
});

test('applyMention: replaces the typed token, adds one space, puts the caret after it', () => {
  const text = 'plot @sa by month';
  const at = activeMention(text, 8)!;
  assert.deepEqual(applyMention(text, at, 'sales_df'), { text: 'plot @sales_df by month', caret: 15 });
  const end = activeMention('@sa', 3)!;
  assert.deepEqual(applyMention('@sa', end, 'sales_df'), { text: '@sales_df ', caret: 10 });
});

test('menuKey: arrows wrap, Enter/Tab pick, Escape closes, an empty list passes Enter', () => {
  assert.deepEqual(menuKey('ArrowDown', 0, 3), { kind: 'move', active: 1 });
  assert.deepEqual(menuKey('ArrowDown', 2, 3), { kind: 'move', active: 0 });
  assert.deepEqual(menuKey('ArrowUp', 0, 3), { kind: 'move', active: 2 });
  assert.deepEqual(menuKey('Enter', 1, 3), { kind: 'pick', index: 1 });
  assert.deepEqual(menuKey('Tab', 5, 3), { kind: 'pick', index: 2 });
  assert.deepEqual(menuKey('Escape', 0, 0), { kind: 'close' });
  assert.deepEqual(menuKey('Enter', 0, 0), { kind: 'pass' });
  assert.deepEqual(menuKey('ArrowDown', 0, 0), { kind: 'pass' });
  assert.deepEqual(menuKey('Enter', 0, 3, { shift: true }), { kind: 'pass' });
  assert.deepEqual(menuKey('Tab', 0, 3, { shift: true }), { kind: 'pass' });
  assert.deepEqual(menuKey('ArrowDown', 0, 3, { ctrl: true }), { kind: 'pass' });
  assert.deepEqual(menuKey('a', 0, 3), { kind: 'pass' });
});

test('splitMentions: chips for @tokens at word starts, sentence punctuation left out', () => {
  assert.deepEqual(splitMentions('@sales_df plot revenue, see @data/q1.csv.'), [
    { kind: 'mention', name: 'sales_df' },
    { kind: 'text', text: ' plot revenue, see ' },
    { kind: 'mention', name: 'data/q1.csv' },
    { kind: 'text', text: '.' }
  ]);
  assert.deepEqual(splitMentions('mail a@b.com <img src=x>'), [{ kind: 'text', text: 'mail a@b.com <img src=x>' }]);
  assert.deepEqual(splitMentions('(@x)'), [
    { kind: 'text', text: '(' },
    { kind: 'mention', name: 'x' },
    { kind: 'text', text: ')' }
  ]);
  assert.deepEqual(splitMentions('just @ alone'), [{ kind: 'text', text: 'just @ alone' }]);
  assert.deepEqual(splitMentions(''), []);
});

test('sources: variables and contents listings become candidates; hidden and bad entries dropped', () => {
  assert.deepEqual(
    variableCandidates({
      variables: [
        { name: 'sales_df', type: 'DataFrame', shape: [3, 2] },
        { name: 'n', type: 'int', shape: null },
        { name: 'arr', type: 'ndarray', shape: [5] },
        { name: 's', type: 'str', shape: '(given)' } as any,
        { bad: true } as any
      ],
      note: null
    }),
    [v('sales_df', 'DataFrame', '(3, 2)'), v('n'), v('arr', 'ndarray', '(5,)'), v('s', 'str', '(given)')]
  );
  assert.deepEqual(variableCandidates(null), []);
  assert.deepEqual(variableCandidates({ oops: 1 } as any), []);
  const listing = [
    { name: 'a.csv', path: 'data/a.csv', type: 'file' },
    { name: '.env', path: 'data/.env', type: 'file' },
    { name: 'sub', path: 'data/sub', type: 'directory' },
    { name: 'n.ipynb', path: 'data/n.ipynb', type: 'notebook' },
    { name: 'my file.csv', path: 'data/my file.csv', type: 'file' }
  ];
  assert.deepEqual(fileCandidates(listing).map(c => c.name), ['data/a.csv', 'data/n.ipynb']);
  assert.equal(fileCandidates(listing, 1).length, 1);
  assert.deepEqual(foldersFor('sal', 'work/nb.ipynb'), ['work', '']);
  assert.deepEqual(foldersFor('data/sa', 'nb.ipynb'), ['', 'data']);
  assert.deepEqual(foldersFor('.git/x', null), ['']);
});

test('cellContext: code and outputs digest, bounded, ANSI stripped, images as a marker', () => {
  const red = '\u001b[0;31mZeroDivisionError\u001b[0m: division by zero';
  const ctx = cellContext(
    {
      cellType: 'code',
      source: 'x = 1/0\n',
      executionCount: 4,
      index: 2,
      outputs: [
        { output_type: 'stream', name: 'stdout', text: ['hello\n'] },
        { output_type: 'display_data', data: { 'image/png': 'iVBOR...', 'text/plain': '<Figure>' } },
        { output_type: 'error', ename: 'ZeroDivisionError', evalue: 'division by zero', traceback: [red] }
      ]
    },
    'work/analysis.ipynb'
  );
  assert.equal(ctx.label, 'Cell 3 [4] of analysis.ipynb');
  assert.ok(ctx.block.startsWith('#### Cell 3 [4] of `work/analysis.ipynb`'));
  assert.ok(ctx.block.includes('```python\nx = 1/0\n```'));
  assert.ok(ctx.block.includes('hello\n[image output]\n<Figure>\nZeroDivisionError: division by zero'));
  assert.ok(!ctx.block.includes('\u001b'));
  assert.ok(!ctx.block.includes('iVBOR'));
  assert.equal(stripAnsi(red), 'ZeroDivisionError: division by zero');

  const long = cellContext(
    {
      cellType: 'code',
      source: 'a'.repeat(CODE_LIMIT * 3),
      index: 0,
      outputs: [{ output_type: 'stream', name: 'stdout', text: 'o'.repeat(OUTPUT_LIMIT * 5) }]
    },
    'n.ipynb'
  );
  assert.ok(long.block.length < CODE_LIMIT + OUTPUT_LIMIT + 400, `${long.block.length}`);
  assert.ok(long.block.includes('characters omitted'));
  assert.equal(long.label, 'Cell 1 of n.ipynb');

  // backticks in the code cannot close the fence early
  const ticks = cellContext({ cellType: 'code', source: 's = """```"""', index: 0, outputs: [] }, 'n.ipynb');
  assert.ok(ticks.block.includes('````python\ns = """```"""\n````'));
  assert.ok(ticks.block.endsWith('(no outputs)'));

  assert.equal(withCellContext('  why?  ', null), 'why?');
  assert.equal(withCellContext('why?', ctx), `why?\n\n${ctx.block}`);
  assert.ok(withCellContext('', ctx).startsWith('About this cell:'));

  // the conversation folds the block of a sent message back out of it
  assert.deepEqual(splitCellContext(withCellContext('why?', ctx)), {
    question: 'why?',
    block: ctx.block,
    label: 'Cell 3 [4]'
  });
  assert.equal(splitCellContext(withCellContext('', ctx)).question, '');
  assert.deepEqual(splitCellContext('plain #### Cell 1 text'), {
    question: 'plain #### Cell 1 text',
    block: null,
    label: ''
  });
});
