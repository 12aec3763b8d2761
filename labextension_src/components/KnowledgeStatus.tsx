import * as React from 'react';
import { useEffect, useState } from 'react';

import { CellwrightAPI, errorMessage } from '../api';
import { KnowledgeStatus } from '../contract.gen';
import {
  fetchKnowledgeStatus,
  KNOWLEDGE_STATUS_INTERVAL_MS,
  knowledgeText
} from '../model/knowledge';
import { useTrans } from './translation';

/** The workspace index's state, files, passages, last update and latest errors; refreshed while shown. */
export function KnowledgeStatusView(props: { api: CellwrightAPI }): JSX.Element {
  const { api } = props;
  const trans = useTrans();
  const [status, setStatus] = useState<KnowledgeStatus | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let alive = true;
    const load = (): void => {
      fetchKnowledgeStatus(api).then(
        answer => alive && (setStatus(answer), setError(null)),
        reason => alive && setError(errorMessage(trans, reason))
      );
    };
    load();
    const timer = setInterval(load, KNOWLEDGE_STATUS_INTERVAL_MS);
    return () => {
      alive = false;
      clearInterval(timer);
    };
  }, [api]);
  return (
    <div className="cw-knowledge-status" data-testid="cw-knowledge-status">
      <span className="cw-knowledge-status-label">{trans.__('Workspace index')}</span>{' '}
      {status && <span data-testid="cw-knowledge-status-text">{knowledgeText(trans, status)}</span>}
      {error && <span className="cw-knowledge-status-error">{error}</span>}
      {status && status.errors.length > 0 && (
        <ul className="cw-knowledge-status-errors">
          {status.errors.slice(-5).map((item, index) => (
            <li key={index} className="cw-knowledge-status-error">
              {item.path ? `${item.path}: ` : ''}
              {item.message}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
