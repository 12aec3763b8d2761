import * as React from 'react';
import { useState } from 'react';

import { IToolItem, PanelModel } from '../model';
import { canUndo, runStepsToUndo } from '../model/review';
import { undoSteps, undoSummary } from '../model/undo';
import { VisibleText } from './VisibleText';

/**
 * Under a cell step of the timeline: whether it can still be undone, "Undo"
 * (this step) and "Undo run" (the run's undoable steps, newest first), and
 * what an undo did or why it was refused.
 */
export function UndoButtons(props: { model: PanelModel; item: IToolItem }): JSX.Element | null {
  const { model, item } = props;
  const [busy, setBusy] = useState(false);
  const [message, setMessage] = useState<string | null>(null);
  const [refused, setRefused] = useState(false); // a refusal (409) is final: the kernel lost the snapshot
  const state = item.undo;
  const thread = model.thread;
  if (!state || !thread) {
    return null;
  }
  const run = async (ids: string[]): Promise<void> => {
    setBusy(true);
    try {
      const outcome = await undoSteps(model, thread.threadId, ids);
      setMessage(undoSummary(outcome));
      setRefused(!!outcome.error && !outcome.undone.some(u => u.id === item.id));
    } finally {
      setBusy(false);
    }
  };
  const runSteps = runStepsToUndo(model.view.items, item);
  const disabled = busy || model.running;
  return (
    <div className="cw-undo" data-testid="cw-undo" data-tool-call-id={item.id} data-undo-state={state.undone ? 'undone' : state.undoable ? 'undoable' : 'not-undoable'}>
      {state.undone && <span className="cw-undo-state">Undone</span>}
      {!state.undone && !state.undoable && (
        <span className="cw-undo-state" title={state.reason ?? ''}>
          Cannot be undone{state.reason ? ': ' : ''}
          {state.reason && <VisibleText text={state.reason} />}
        </span>
      )}
      {canUndo(item) && !refused && (
        <button type="button" className="cw-button" data-testid="cw-undo-step" disabled={disabled} onClick={() => void run([item.id])}>
          Undo
        </button>
      )}
      {runSteps.length > 1 && !refused && (
        <button type="button" className="cw-button" data-testid="cw-undo-run" disabled={disabled} onClick={() => void run(runSteps)}>
          Undo run ({runSteps.length} steps)
        </button>
      )}
      {message && (
        <span className="cw-undo-message" role="status" data-testid="cw-undo-message">
          <VisibleText text={message} />
        </span>
      )}
    </div>
  );
}
