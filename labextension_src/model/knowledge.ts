/**
 * The workspace index behind search_knowledge, as `GET knowledge/status`
 * reports it, in words for the settings view.
 */
import type { TranslationBundle } from '@jupyterlab/translation';

import { CellwrightAPI } from '../api';
import { KnowledgeStatus } from '../contract.gen';

export const KNOWLEDGE_STATUS_INTERVAL_MS = 10000;

export function fetchKnowledgeStatus(api: CellwrightAPI): Promise<KnowledgeStatus> {
  return api.request<KnowledgeStatus>('knowledge/status');
}

/** "ready · 200 files · 610 passages · 3 tables · updated 12:04:31". */
export function knowledgeText(trans: TranslationBundle, status: KnowledgeStatus): string {
  if (status.state === 'off') {
    return trans.__('off (%1)', 'c.Cellwright.knowledge_index');
  }
  const parts: string[] = [
    knowledgeState(trans, status.state),
    trans._n('%1 file', '%1 files', status.files),
    trans._n('%1 passage', '%1 passages', status.chunks)
  ];
  if (status.tables) {
    parts.push(trans._n('%1 table', '%1 tables', status.tables));
  }
  if (status.skipped) {
    parts.push(trans.__('%1 skipped (size caps)', status.skipped));
  }
  if (status.embedding_model) {
    parts.push(trans.__('embeddings: %1', status.embedding_model));
  }
  if (status.last_update !== null) {
    parts.push(trans.__('updated %1', new Date(status.last_update * 1000).toLocaleTimeString()));
  }
  return parts.join(' · ');
}

/** The index's state in words (the server's names are identifiers). */
function knowledgeState(trans: TranslationBundle, state: KnowledgeStatus['state']): string {
  switch (state) {
    case 'off':
      return trans.__('off');
    case 'idle':
      return trans.__('idle');
    case 'building':
      return trans.__('building');
    case 'ready':
      return trans.__('ready');
    case 'stopped':
      return trans.__('stopped');
  }
}
