import * as React from 'react';

import { PanelModel } from '../model';
import { useTrans } from './translation';

/** A timestamp as the server sends it: epoch seconds, or an ISO string. */
function when(value: number | string): string {
  const numeric = typeof value === 'number' ? value : Number(value);
  const date = Number.isFinite(numeric)
    ? new Date(numeric < 1e12 ? numeric * 1000 : numeric)
    : new Date(value);
  return isNaN(date.getTime()) ? String(value) : date.toLocaleString();
}

/** The thread history (newest first); picking one opens it. */
export function ThreadHistory(props: {
  model: PanelModel;
  onPicked: () => void;
}): JSX.Element {
  const { model } = props;
  const trans = useTrans();
  const threads = model.threadList;
  const current = model.thread?.threadId;
  return (
    <div id="cw-history" className="cw-history" data-testid="cw-history">
      {model.threadListLoading && threads === null && (
        <div className="cw-muted" role="status">
          {trans.__('Loading threads…')}
        </div>
      )}
      {threads !== null && threads.length === 0 && (
        <div className="cw-muted">{trans.__('No threads yet.')}</div>
      )}
      {threads !== null && threads.length > 0 && (
        <ul className="cw-history-list" aria-label={trans.__('Thread history')}>
          {threads.map(thread => (
            <li key={thread.thread_id}>
              <button
                type="button"
                className={`cw-history-item${thread.thread_id === current ? ' cw-current' : ''}`}
                aria-current={thread.thread_id === current ? 'true' : undefined}
                onClick={() => {
                  void model.openThread(thread.thread_id, {
                    title: thread.title,
                    notebookPath: thread.notebook_path
                  });
                  props.onPicked();
                }}
              >
                <span className="cw-history-title">{thread.title || thread.thread_id}</span>
                <span className="cw-history-meta">
                  {[
                    thread.notebook_path,
                    when(thread.updated_at),
                    thread.status === 'waiting_for_cell' ? trans.__('running in the background') : thread.status
                  ]
                    .filter(Boolean)
                    .join(' · ')}
                </span>
              </button>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
