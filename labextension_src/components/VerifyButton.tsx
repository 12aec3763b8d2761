import * as React from 'react';
import { useState } from 'react';

import { PanelModel } from '../model';
import { IVerifyBadge, verifyNotebook } from '../model/verify';
import { VisibleText } from './VisibleText';
import { useTrans } from './translation';

/**
 * Under the final answer: "Verify" re-runs the saved notebook from the top
 * in a fresh kernel (never the notebook's own) and shows the result as a
 * badge (verified / differs at cell N / fails at cell N).
 */
export function VerifyButton(props: { model: PanelModel }): JSX.Element | null {
  const { model } = props;
  const [busy, setBusy] = useState(false);
  const [badge, setBadge] = useState<IVerifyBadge | null>(null);
  if (!model.notebook) {
    return null;
  }
  const trans = useTrans();
  const verify = async (): Promise<void> => {
    setBusy(true);
    try {
      setBadge(await verifyNotebook(trans, model));
    } finally {
      setBusy(false);
    }
  };
  return (
    <div className="cw-verify" data-testid="cw-verify">
      <button
        type="button"
        className="cw-button"
        data-testid="cw-verify-button"
        title={trans.__('Save the notebook and re-run it from the top in a fresh kernel (yours is untouched)')}
        disabled={busy || model.running}
        onClick={() => void verify()}
      >
        {busy ? trans.__('Verifying…') : trans.__('Verify')}
      </button>
      {badge && (
        <span
          className={`cw-verify-badge cw-verify-${badge.tone}`}
          role="status"
          data-testid="cw-verify-badge"
          title={badge.detail}
        >
          <VisibleText text={badge.label} />
        </span>
      )}
      {badge?.detail && badge.tone !== 'ok' && (
        <div className="cw-verify-detail">
          <VisibleText text={badge.detail} />
        </div>
      )}
    </div>
  );
}
