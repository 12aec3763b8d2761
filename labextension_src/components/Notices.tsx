import * as React from 'react';

import { PanelModel } from '../model';
import { useTrans } from './translation';

/** Health notices, threads waiting for a decision elsewhere, and dismissable error banners. */
export function Notices(props: { model: PanelModel }): JSX.Element | null {
  const { model } = props;
  const trans = useTrans();
  const notices = model.notices;
  const errors = model.errors;
  const waiting = model.waitingThreads;
  if (!notices.length && !errors.length && !waiting.length) {
    return null;
  }
  return (
    <div className="cw-notices">
      {waiting.map(thread => (
        <div key={thread.thread_id} className="cw-notice cw-waiting" data-testid="cw-waiting" role="status">
          <span className="cw-waiting-text">{trans.__('%1 is waiting for your approval.', thread.title)}</span>
          <button
            type="button"
            className="cw-button cw-button-small"
            aria-label={trans.__('Review: %1', thread.title)}
            onClick={() => void model.reviewWaiting(thread)}
          >
            {trans.__('Review')}
          </button>
        </div>
      ))}
      {notices.map((text, i) => (
        <div key={`n${i}`} className="cw-notice" data-testid="cw-notice" role="note">
          {text}
        </div>
      ))}
      {errors.map(error => (
        <div key={error.id} className="cw-error-banner" data-testid="cw-error-banner" role="alert">
          <span className="cw-error-banner-text">{error.message}</span>
          <button
            type="button"
            className="cw-icon-button"
            aria-label={trans.__('Dismiss error')}
            title={trans.__('Dismiss')}
            onClick={() => model.dismissError(error.id)}
          >
            ×
          </button>
        </div>
      ))}
    </div>
  );
}
