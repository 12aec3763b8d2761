import * as React from 'react';
import { useState } from 'react';

import { errorMessage } from '../api';
import { RewindChoice, RewindResult, ThreadDiff } from '../contract.gen';
import { IToolItem, PanelModel } from '../model';
import { IStepAction } from './StepMenu';
import { StepChanges } from './StepChanges';
import { useTrans } from './translation';
import { VisibleText } from './VisibleText';

/**
 * A finished step's "Rewind to here" (issue 25), an item of the step's menu. It first shows what
 * going back would restore and what cannot go back, per later step, with the
 * choice to revert or keep the agent's notebook cells and file edits; the
 * rewind then leaves the earlier attempt as a branch and can be undone.
 * "Try again from here" undoes nothing: it opens a new thread that continues
 * from just before the step, and this one stays as it is.
 */
export function useRewind(
  model: PanelModel,
  item: IToolItem,
  enabled: boolean
): { actions: IStepAction[]; view: JSX.Element | null } {
  const trans = useTrans();
  const [preview, setPreview] = useState<RewindResult | null>(null);
  const [changes, setChanges] = useState<ThreadDiff | null>(null);
  const [notebook, setNotebook] = useState<RewindChoice>('revert');
  const [files, setFiles] = useState<RewindChoice>('revert');
  const [busy, setBusy] = useState(false);
  const [message, setMessage] = useState<string | null>(null);
  const [undoable, setUndoable] = useState(false);
  const thread = model.thread;
  if (!enabled || !thread || item.inherited || item.status === 'running' || item.status === 'awaiting_approval') {
    return { actions: [], view: null }; // an inherited step is the thread it was forked from's, to go back to there
  }
  const threadId = thread.threadId;
  const act = async (work: () => Promise<void>): Promise<void> => {
    setBusy(true);
    try {
      await work();
    } catch (error) {
      setMessage(errorMessage(trans, error));
    } finally {
      setBusy(false);
    }
  };
  const show = (n: RewindChoice, f: RewindChoice): Promise<void> =>
    act(async () => {
      setNotebook(n);
      setFiles(f);
      setPreview(await model.api.rewind(threadId, { to: item.id, notebook: n, files: f, dry_run: true }));
      setChanges(await model.api.diff(threadId, item.id).catch(() => null)); // the card stands without it
    });
  const confirm = (): Promise<void> =>
    act(async () => {
      const done = await model.api.rewind(threadId, { to: item.id, notebook, files });
      const listed = await model.api.branches(threadId);
      setPreview(null);
      setUndoable(true);
      setMessage(
        trans._n(
          'Went back over %1 step; the earlier attempt is kept as a branch (%2 branches).',
          'Went back over %1 steps; the earlier attempt is kept as a branch (%2 branches).',
          done.steps.length,
          listed.branches.length
        )
      );
      thread.connect(); // the `rewound` event: the timeline and the notebook's cells
    });
  const tryAgain = (): Promise<void> =>
    act(async () => {
      const forked = await model.api.fork(threadId, { from: item.id });
      await model.openThread(forked.thread_id, { notebookPath: thread.notebookPath });
      void model.refreshThreads();
    });
  const undo = (): Promise<void> =>
    act(async () => {
      const undone = await model.api.undoRewind(threadId);
      setUndoable(false);
      setMessage([trans.__('Rewind undone.'), ...undone.not_restored].join(' '));
      thread.connect();
    });
  const disabled = busy || model.running;
  const actions: IStepAction[] = [];
  if (!preview) {
    if (!item.rewoundBy) {
      actions.push({
        label: trans.__('Rewind to here'),
        testId: 'cw-rewind-open',
        disabled,
        onSelect: () => void show(notebook, files)
      });
    }
    actions.push({
      label: trans.__('Try again from here'),
      testId: 'cw-try-again',
      title: trans.__(
        'A new thread with the conversation up to just before this step; nothing is undone and this thread stays as it is'
      ),
      disabled,
      onSelect: () => void tryAgain()
    });
  }
  if (undoable) {
    actions.push({ label: trans.__('Undo rewind'), testId: 'cw-rewind-undo', disabled, onSelect: () => void undo() });
  }
  const view = (
    <div className="cw-rewind" data-testid="cw-rewind" data-tool-call-id={item.id}>
      {item.rewoundBy && <span className="cw-rewind-state">{trans.__('Gone back over: kept in an earlier branch')}</span>}
      {preview && (
        <div className="cw-rewind-card" role="region" aria-label={trans.__('Rewind')} data-testid="cw-rewind-card">
          <div className="cw-rewind-title">
            {trans._n(
              'Go back to just before this step: %1 step undone, newest first',
              'Go back to just before this step: %1 steps undone, newest first',
              preview.steps.length
            )}
          </div>
          <ul className="cw-rewind-steps">
            {preview.steps.map(step => (
              <li key={step.tool_call_id} data-testid="cw-rewind-step" data-tool-call-id={step.tool_call_id}>
                <span className="cw-tool-name">{step.name}</span>:{' '}
                <VisibleText text={step.restores.join('; ') || trans.__('the conversation only')} />
                {step.cannot.map((why, i) => (
                  <div key={i} className="cw-rewind-cannot" data-testid="cw-rewind-cannot">
                    {trans.__('Cannot go back: ')}
                    <VisibleText text={why} />
                  </div>
                ))}
              </li>
            ))}
          </ul>
          {preview.file_diffs?.map(file => (
            <details key={file.path} className="cw-rewind-diff">
              <summary>{trans.__('What going back does to %1', file.path)}</summary>
              <pre className="cw-code" data-testid="cw-rewind-diff">
                <VisibleText text={file.diff} code />
              </pre>
            </details>
          ))}
          {changes && (
            <details className="cw-rewind-diff">
              <summary>{trans.__('What the agent changed from this step on')}</summary>
              <StepChanges diff={changes} />
            </details>
          )}
          <label>
            <input type="checkbox" data-testid="cw-rewind-notebook" checked={notebook === 'revert'} disabled={busy}
              onChange={e => void show(e.target.checked ? 'revert' : 'keep', files)} />
            {trans.__("Revert notebook edits (remove the agent's later cells)")}
          </label>
          <label>
            <input type="checkbox" data-testid="cw-rewind-files" checked={files === 'revert'} disabled={busy}
              onChange={e => void show(notebook, e.target.checked ? 'revert' : 'keep')} />
            {trans.__('Revert file edits')}
          </label>
          <div className="cw-rewind-actions">
            <button type="button" className="cw-button cw-button-primary" data-testid="cw-rewind-confirm" disabled={disabled} onClick={() => void confirm()}>
              {trans.__('Rewind')}
            </button>
            <button type="button" className="cw-button" disabled={busy} onClick={() => setPreview(null)}>
              {trans.__('Cancel')}
            </button>
          </div>
        </div>
      )}
      {message && (
        <span className="cw-rewind-message" role="status" data-testid="cw-rewind-message">
          <VisibleText text={message} />
        </span>
      )}
    </div>
  );
  return { actions, view };
}
