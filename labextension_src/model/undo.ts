/**
 * Undo from the panel: a step, or a run (its undoable steps, newest first),
 * through `POST threads/{id}/undo/{tool_call_id}`. The thread then reads its
 * log again, so `step_undone` reaches the timeline and, live, the notebook
 * (which removes the step's cell or gives an edited cell its source back).
 */
import type { TranslationBundle } from '@jupyterlab/translation';

import { errorMessage } from '../api';
import { UndoResult } from '../contract.gen';
import { PanelModel } from './panel';

export interface IStepUndone {
  threadId: string;
  id: string;
  result: UndoResult;
}

const listeners = new Set<(undone: IStepUndone) => void>();

/**
 * Called for each step undone from this page, at once (the notebook bridge
 * removes or restores its cell without waiting for the thread's stream).
 */
export function onStepUndone(listener: (undone: IStepUndone) => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

export interface IUndoOutcome {
  undone: { id: string; result: UndoResult }[];
  /** The first refusal (409: cannot be undone any more) or failure: later steps are not tried. */
  error: string | null;
}

/** Undo `ids` of `threadId` in this order; stops at the first refusal. */
export async function undoSteps(model: PanelModel, threadId: string, ids: readonly string[]): Promise<IUndoOutcome> {
  const outcome: IUndoOutcome = { undone: [], error: null };
  for (const id of ids) {
    try {
      const result = await model.api.undo(threadId, id);
      outcome.undone.push({ id, result });
      listeners.forEach(listener => listener({ threadId, id, result }));
    } catch (error) {
      outcome.error = errorMessage(model.trans, error);
      break;
    }
  }
  const thread = model.thread;
  if (thread && thread.threadId === threadId) {
    thread.connect(); // the `step_undone` events, live
  }
  return outcome;
}

/** One line for the user: what the undo restored, removed and left. */
export function undoSummary(trans: TranslationBundle, outcome: IUndoOutcome): string {
  const restored = outcome.undone.flatMap(u => u.result.restored);
  const removed = outcome.undone.flatMap(u => u.result.removed);
  const left = outcome.undone.flatMap(u => u.result.not_undone);
  const parts = [
    outcome.undone.length ? trans._n('Undid %1 step', 'Undid %1 steps', outcome.undone.length) : '',
    restored.length ? trans.__('restored %1', [...new Set(restored)].join(', ')) : '',
    removed.length ? trans.__('removed %1', [...new Set(removed)].join(', ')) : '',
    left.length ? trans.__('not undone: %1', left.join('; ')) : '',
    outcome.error ?? ''
  ];
  return parts.filter(Boolean).join(' · ');
}
