/**
 * Issue 26 in the panel's pure part: the Verify badge of a POST verify
 * result (verified / differs at cell N / fails at cell N) and what it explains.
 */
import * as assert from 'node:assert/strict';
import { test } from 'node:test';

import './helpers';
import { VerifyResult } from '../contract.gen';
import { verifyBadge } from '../model/verify';
import { trans } from './helpers';

function result(extra: Partial<VerifyResult>): VerifyResult {
  return {
    status: 'verified', path: 'a.ipynb', kernel_name: 'python3', hidden_state: [], out_of_order: [], seconds: 1.25,
    cells: [
      { index: 0, number: 1, status: 'same' },
      { index: 2, number: 2, status: 'ran' }
    ],
    ...extra
  };
}

test('a notebook that re-runs is verified', () => {
  const badge = verifyBadge(trans, result({}));
  assert.equal(badge.label, 'verified');
  assert.equal(badge.tone, 'ok');
  assert.match(badge.detail, /Re-ran 2 code cells in a fresh python3 kernel in 1\.3 s/);
});

test('a failing cell names its number, its error and the hidden state', () => {
  const badge = verifyBadge(trans, 
    result({
      status: 'fails',
      at_cell: 2,
      hidden_state: ['x'],
      cells: [
        { index: 0, number: 1, status: 'same' },
        { index: 1, number: 2, status: 'fails', detail: "NameError: name 'x' is not defined" }
      ]
    })
  );
  assert.equal(badge.label, 'fails at cell 2');
  assert.equal(badge.tone, 'error');
  assert.match(badge.detail, /Cell 2: NameError/);
  assert.match(badge.detail, /Hidden state .*: x/);
});

test('differing outputs and cells run out of order warn', () => {
  const badge = verifyBadge(trans, 
    result({
      status: 'differs',
      at_cell: 3,
      out_of_order: [2],
      cells: [
        { index: 0, number: 1, status: 'same' },
        { index: 1, number: 2, status: 'same' },
        { index: 2, number: 3, status: 'differs', detail: "recorded 'stream:stdout: 1', re-run gave 'stream:stdout: 2'" }
      ]
    })
  );
  assert.equal(badge.label, 'differs at cell 3');
  assert.equal(badge.tone, 'warn');
  assert.match(badge.detail, /Cell 3: recorded/);
  assert.match(badge.detail, /Run out of order: cells 2/);
});
