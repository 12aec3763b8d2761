/**
 * The workspace index behind search_knowledge, as `GET knowledge/status`
 * reports it, in words for the settings view.
 */
import { CellwrightAPI } from '../api';
import { KnowledgeStatus } from '../contract.gen';

export const KNOWLEDGE_STATUS_INTERVAL_MS = 10000;

export function fetchKnowledgeStatus(api: CellwrightAPI): Promise<KnowledgeStatus> {
  return api.request<KnowledgeStatus>('knowledge/status');
}

/** "ready · 200 files · 610 passages · 3 tables · updated 12:04:31". */
export function knowledgeText(status: KnowledgeStatus): string {
  if (status.state === 'off') {
    return 'off (c.Cellwright.knowledge_index)';
  }
  const parts: string[] = [status.state, `${status.files} files`, `${status.chunks} passages`];
  if (status.tables) {
    parts.push(`${status.tables} tables`);
  }
  if (status.skipped) {
    parts.push(`${status.skipped} skipped (size caps)`);
  }
  if (status.embedding_model) {
    parts.push(`embeddings: ${status.embedding_model}`);
  }
  if (status.last_update !== null) {
    parts.push(`updated ${new Date(status.last_update * 1000).toLocaleTimeString()}`);
  }
  return parts.join(' · ');
}
