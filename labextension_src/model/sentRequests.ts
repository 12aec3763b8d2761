/**
 * What reached the model, as `GET threads/{id}/requests` records it: the
 * thread's summary ("data that reached the model: ...") and a line per model
 * request, in words for the "What was sent" section.
 */
import type { TranslationBundle } from '@jupyterlab/translation';

import { CellwrightAPI } from '../api';
import {
  DataPolicy,
  ModelRequestRecord,
  ModelRequests,
  RequestKind,
  RequestSource,
  RequestsSummary,
  SentSummary
} from '../contract.gen';
import { agentLabel } from '../tokens';

/** Sizes and sources of every request (no texts): what the section lists. */
export function fetchSent(api: CellwrightAPI, threadId: string): Promise<ModelRequests> {
  return api.request<ModelRequests>(`threads/${encodeURIComponent(threadId)}/requests?text=0`);
}

/** One request with its messages and tools as sent (null once compacted or gone). */
export async function fetchSentText(
  api: CellwrightAPI,
  threadId: string,
  seq: number
): Promise<ModelRequestRecord | null> {
  const answer = await api.request<ModelRequests>(
    `threads/${encodeURIComponent(threadId)}/requests?seq=${seq}`
  );
  return answer.requests[0] ?? null;
}

/** The source kinds, in the order a summary names them. */
const KINDS = [
  'file',
  'dataframe',
  'variable',
  'variables',
  'notebook',
  'cell_output',
  'sql_result',
  'mcp_result',
  'command_output',
  'search_result',
  'image',
  'agent_report',
  'listing',
  'tool_result'
] as const;

/** A source kind's noun, singular or plural for `n` (null for a kind this panel does not know). */
function kindNoun(trans: TranslationBundle, kind: string, n: number): string | null {
  switch (kind) {
    case 'file':
      return trans._n('file', 'files', n);
    case 'dataframe':
      return trans._n('DataFrame', 'DataFrames', n);
    case 'variable':
      return trans._n('variable', 'variables', n);
    case 'variables':
      return trans._n('namespace snapshot', 'namespace snapshots', n);
    case 'notebook':
      return trans._n('notebook', 'notebooks', n);
    case 'cell_output':
      return trans._n('cell output', 'cell outputs', n);
    case 'sql_result':
      return trans._n('SQL result', 'SQL results', n);
    case 'mcp_result':
      return trans._n('MCP result', 'MCP results', n);
    case 'command_output':
      return trans._n('command output', 'command outputs', n);
    case 'search_result':
      return trans._n('search result', 'search results', n);
    case 'image':
      return trans._n('image', 'images', n);
    case 'agent_report':
      return trans._n('sub-agent report', 'sub-agent reports', n);
    case 'listing':
      return trans._n('listing', 'listings', n);
    case 'tool_result':
      return trans._n('tool result', 'tool results', n);
    default:
      return null;
  }
}

/** "3 files": a kind the panel does not know reads as its name. */
function kindCount(trans: TranslationBundle, kind: string, n: number): string {
  return trans._p('a count of sources', '%1 %2', n, kindNoun(trans, kind, n) ?? kind.replace(/_/g, ' '));
}

export function bytesText(trans: TranslationBundle, bytes: number): string {
  if (bytes < 1024) {
    return trans.__('%1 B', bytes);
  }
  if (bytes < 1024 * 1024) {
    return trans.__('%1 KB', (bytes / 1024).toFixed(1));
  }
  return trans.__('%1 MB', (bytes / 1024 / 1024).toFixed(1));
}

function policyText(trans: TranslationBundle, policy: DataPolicy): string {
  switch (policy) {
    case 'full':
      return trans.__('full data');
    case 'redact':
      return trans.__('personal data and secrets redacted');
    case 'schema_only':
      return trans.__('schema only, no values');
    default:
      return policy;
  }
}

function redactionsText(trans: TranslationBundle, n: number): string {
  return trans._n('%1 redaction', '%1 redactions', n);
}

/** "Data that reached the model: 3 files, 2 DataFrames, 4 cell outputs". */
export function sourcesText(trans: TranslationBundle, summary: RequestsSummary): string {
  const known = new Set<string>(KINDS);
  const parts = KINDS.filter(kind => summary.sources[kind]).map(kind => kindCount(trans, kind, summary.sources[kind]));
  for (const [kind, count] of Object.entries(summary.sources)) {
    if (!known.has(kind) && count) {
      parts.push(kindCount(trans, kind, count));
    }
  }
  return parts.length
    ? trans.__('Data that reached the model: %1', parts.join(', '))
    : trans.__('Data that reached the model: none from your files or kernel');
}

/** "12 requests · 340.2 KB · 5 redactions · schema only, no values". */
export function totalsText(trans: TranslationBundle, summary: RequestsSummary): string {
  const parts = [trans._n('%1 request', '%1 requests', summary.requests), bytesText(trans, summary.bytes)];
  if (summary.redactions) {
    parts.push(redactionsText(trans, summary.redactions));
  }
  parts.push(policyText(trans, summary.data_policy));
  return parts.join(' · ');
}

function requestKindText(trans: TranslationBundle, kind: RequestKind): string {
  switch (kind) {
    case 'turn':
      return trans.__('turn');
    case 'summary':
      return trans.__('summary');
    case 'completion':
      return trans.__('completion');
    default:
      return kind;
  }
}

/** "#3 Planner · summary · 24.1 KB · 2 redactions". */
export function requestLine(trans: TranslationBundle, record: ModelRequestRecord): string {
  const parts = [`#${record.seq} ${agentLabel(trans, record.agent)}`];
  if (record.kind !== 'turn') {
    parts.push(requestKindText(trans, record.kind));
  }
  parts.push(bytesText(trans, record.bytes));
  if (record.redactions) {
    parts.push(redactionsText(trans, record.redactions));
  }
  return parts.join(' · ');
}

/** A step's line: "Sent to the model: 12.3 KB · 2 redactions · 4 sources". */
export function stepSentLine(trans: TranslationBundle, sent: SentSummary): string {
  const parts = [trans.__('Sent to the model: %1', bytesText(trans, sent.bytes))];
  if (sent.redactions) {
    parts.push(redactionsText(trans, sent.redactions));
  }
  parts.push(
    sent.sources.length
      ? trans._n('%1 source', '%1 sources', sent.sources.length)
      : trans.__('no data from your files or kernel')
  );
  return parts.join(' · ');
}

/** "cell output: show the people". */
export function sourceText(trans: TranslationBundle, source: RequestSource): string {
  return trans.__('%1: %2', kindNoun(trans, source.kind, 1) ?? source.kind.replace(/_/g, ' '), source.name);
}

/** The sources a request added to the one before (the conversation is sent again each turn). */
export function newSources(records: ModelRequestRecord[], index: number): RequestSource[] {
  const key = (s: RequestSource): string => `${s.kind}\u0000${s.name}`;
  const record = records[index];
  const before = records
    .slice(0, index)
    .filter(r => r.agent === record.agent && (r.task_id ?? null) === (record.task_id ?? null))
    .pop();
  const seen = new Set((before?.sources ?? []).map(key));
  return record.sources.filter(s => !seen.has(key(s)));
}

/** A request's text for reading: the messages and tools as sent, indented. */
export function sentText(trans: TranslationBundle, record: ModelRequestRecord): string {
  if (!record.kept || !record.messages) {
    return trans.__('Compacted: only its size (%1) and SHA-256 %2 are kept.', bytesText(trans, record.bytes), record.sha256);
  }
  const shown: Record<string, unknown> = { messages: record.messages };
  if (record.tools) {
    shown.tools = record.tools;
  }
  return JSON.stringify(shown, null, 2);
}
