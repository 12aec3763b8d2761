/**
 * What reached the model, as `GET threads/{id}/requests` records it: the
 * thread's summary ("data that reached the model: ...") and a line per model
 * request, in words for the "What was sent" section.
 */
import { CellwrightAPI } from '../api';
import { ModelRequestRecord, ModelRequests, RequestSource, RequestsSummary, SentSummary } from '../contract.gen';
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

/** Singular and plural of each source kind, in the order a summary names them. */
const KIND_WORDS: [string, string, string][] = [
  ['file', 'file', 'files'],
  ['dataframe', 'DataFrame', 'DataFrames'],
  ['variable', 'variable', 'variables'],
  ['variables', 'namespace snapshot', 'namespace snapshots'],
  ['notebook', 'notebook', 'notebooks'],
  ['cell_output', 'cell output', 'cell outputs'],
  ['sql_result', 'SQL result', 'SQL results'],
  ['mcp_result', 'MCP result', 'MCP results'],
  ['command_output', 'command output', 'command outputs'],
  ['search_result', 'search result', 'search results'],
  ['image', 'image', 'images'],
  ['agent_report', 'sub-agent report', 'sub-agent reports'],
  ['listing', 'listing', 'listings'],
  ['tool_result', 'tool result', 'tool results']
];

function counted(count: number, one: string, many: string): string {
  return `${count} ${count === 1 ? one : many}`;
}

export function bytesText(bytes: number): string {
  if (bytes < 1024) {
    return `${bytes} B`;
  }
  if (bytes < 1024 * 1024) {
    return `${(bytes / 1024).toFixed(1)} KB`;
  }
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

const POLICY_WORDS: Record<string, string> = {
  full: 'full data',
  redact: 'personal data and secrets redacted',
  schema_only: 'schema only, no values'
};

/** "Data that reached the model: 3 files, 2 DataFrames, 4 cell outputs". */
export function sourcesText(summary: RequestsSummary): string {
  const known = new Set(KIND_WORDS.map(([kind]) => kind));
  const parts = KIND_WORDS.filter(([kind]) => summary.sources[kind]).map(([kind, one, many]) =>
    counted(summary.sources[kind], one, many)
  );
  for (const [kind, count] of Object.entries(summary.sources)) {
    if (!known.has(kind) && count) {
      parts.push(`${count} ${kind.replace(/_/g, ' ')}`);
    }
  }
  return `Data that reached the model: ${parts.length ? parts.join(', ') : 'none from your files or kernel'}`;
}

/** "12 requests · 340.2 KB · 5 redactions · schema only, no values". */
export function totalsText(summary: RequestsSummary): string {
  const parts = [counted(summary.requests, 'request', 'requests'), bytesText(summary.bytes)];
  if (summary.redactions) {
    parts.push(counted(summary.redactions, 'redaction', 'redactions'));
  }
  parts.push(POLICY_WORDS[summary.data_policy] ?? summary.data_policy);
  return parts.join(' · ');
}

/** "#3 Planner · summary · 24.1 KB · 2 redactions". */
export function requestLine(record: ModelRequestRecord): string {
  const parts = [`#${record.seq} ${agentLabel(record.agent)}`];
  if (record.kind !== 'turn') {
    parts.push(record.kind);
  }
  parts.push(bytesText(record.bytes));
  if (record.redactions) {
    parts.push(counted(record.redactions, 'redaction', 'redactions'));
  }
  return parts.join(' · ');
}

/** A step's line: "Sent to the model: 12.3 KB · 2 redactions · 4 sources". */
export function stepSentLine(sent: SentSummary): string {
  const parts = [`Sent to the model: ${bytesText(sent.bytes)}`];
  if (sent.redactions) {
    parts.push(counted(sent.redactions, 'redaction', 'redactions'));
  }
  parts.push(sent.sources.length ? counted(sent.sources.length, 'source', 'sources') : 'no data from your files or kernel');
  return parts.join(' · ');
}

/** "cell output: show the people". */
export function sourceText(source: RequestSource): string {
  const words = KIND_WORDS.find(([kind]) => kind === source.kind);
  return `${words ? words[1] : source.kind.replace(/_/g, ' ')}: ${source.name}`;
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
export function sentText(record: ModelRequestRecord): string {
  if (!record.kept || !record.messages) {
    return `Compacted: only its size (${bytesText(record.bytes)}) and SHA-256 ${record.sha256} are kept.`;
  }
  const shown: Record<string, unknown> = { messages: record.messages };
  if (record.tools) {
    shown.tools = record.tools;
  }
  return JSON.stringify(shown, null, 2);
}
