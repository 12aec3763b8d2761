/** The words of the knowledge-index status and of the kernel usage line. */
import * as assert from 'node:assert/strict';
import { test } from 'node:test';

import { bytesText, usageLine } from '../model/kernelUsage';
import { knowledgeText } from '../model/knowledge';
import { trans } from './helpers';

const READY = {
  state: 'ready' as const,
  files: 200,
  chunks: 610,
  tables: 3,
  last_update: null,
  skipped: 0,
  errors: [],
  embedding_model: 'embed-small'
};

test('knowledge status says files, passages, tables and the model', () => {
  assert.equal(knowledgeText(trans, READY), 'ready · 200 files · 610 passages · 3 tables · embeddings: embed-small');
  assert.match(knowledgeText(trans, { ...READY, state: 'off' }), /^off/);
});

test('kernel usage shows CPU and memory, and GPU memory only when reported', () => {
  assert.equal(usageLine(trans, { cpu_percent: 12.4, memory_bytes: 600 * 1024 ** 2 }), 'CPU 12% · memory 600 MiB');
  assert.equal(
    usageLine(trans, { cpu_percent: 0, memory_bytes: 3 * 1024 ** 3, gpu_memory_bytes: 1024 ** 3 }),
    'CPU 0% · memory 3.0 GiB · GPU 1.0 GiB'
  );
  assert.equal(bytesText(trans, 1536 * 1024 ** 2), '1.5 GiB');
});
