import * as React from 'react';
import { useState } from 'react';

import { IToolItem, PanelModel } from '../model';
import { canUndo, runStepsToUndo } from '../model/review';
import { undoSteps, undoSummary } from '../model/undo';
import { IStepAction } from './StepMenu';
import { useTrans } from './translation';
import { VisibleText } from './VisibleText';

/**
 * A cell step's undo: "Undo" (this step) and "Undo run" (the run's undoable
 * steps, newest first) as items of the step's menu; under the step, whether
 * it was undone or cannot be, and what an undo did or why it was refused.
 */
export function useUndo(model: PanelModel, item: IToolItem): { actions: IStepAction[]; view: JSX.Element | null } {
  const trans = useTrans();
  const [busy, setBusy] = useState(false);
  const [message, setMessage] = useState<string | null>(null);
  const [refused, setRefused] = useState(false); // a refusal (409) is final: the kernel lost the snapshot
  const state = item.rewoundBy ? null : item.undo;
  const thread = model.thread;
  if (!state || !thread) {
    return { actions: [], view: null };
  }
  const run = async (ids: string[]): Promise<void> => {
    setBusy(true);
    try {
      const outcome = await undoSteps(model, thread.threadId, ids);
      setMessage(undoSummary(trans, outcome));
      setRefused(!!outcome.error && !outcome.undone.some(u => u.id === item.id));
    } finally {
      setBusy(false);
    }
  };
  const runSteps = runStepsToUndo(model.view.items, item);
  const disabled = busy || model.running;
  const actions: IStepAction[] = [];
  if (canUndo(item) && !refused) {
    actions.push({ label: trans.__('Undo'), testId: 'cw-undo-step', disabled, onSelect: () => void run([item.id]) });
  }
  if (runSteps.length > 1 && !refused) {
    actions.push({
      label: trans.__('Undo run (%1 steps)', runSteps.length),
      testId: 'cw-undo-run',
      disabled,
      onSelect: () => void run(runSteps)
    });
  }
  const view = (
    <div
      className="cw-undo"
      data-testid="cw-undo"
      data-tool-call-id={item.id}
      data-undo-state={state.undone ? 'undone' : state.undoable ? 'undoable' : 'not-undoable'}
    >
      {state.undone && <span className="cw-undo-state">{trans.__('Undone')}</span>}
      {!state.undone && !state.undoable && state.reason && (
        <span className="cw-undo-state">
          {trans.__('Cannot be undone: ')}
          <VisibleText text={state.reason} />
        </span>
      )}
      {message && (
        <span className="cw-undo-message" role="status" data-testid="cw-undo-message">
          <VisibleText text={message} />
        </span>
      )}
    </div>
  );
  return { actions, view };
}
