import * as React from 'react';
import { useState } from 'react';

import { errorMessage } from '../api';
import { RewindChoice, RewindResult, ThreadDiff } from '../contract.gen';
import { IToolItem, PanelModel } from '../model';
import { StepChanges } from './StepChanges';
import { VisibleText } from './VisibleText';

/**
 * Under a finished step: "Rewind to here" (issue 25). It first shows what
 * going back would restore and what cannot go back, per later step, with the
 * choice to revert or keep the agent's notebook cells and file edits; the
 * rewind then leaves the earlier attempt as a branch and can be undone.
 * "Try again from here" undoes nothing: it opens a new thread that continues
 * from just before the step, and this one stays as it is.
 */
export function RewindControls(props: { model: PanelModel; item: IToolItem }): JSX.Element | null {
  const { model, item } = props;
  const [preview, setPreview] = useState<RewindResult | null>(null);
  const [changes, setChanges] = useState<ThreadDiff | null>(null);
  const [notebook, setNotebook] = useState<RewindChoice>('revert');
  const [files, setFiles] = useState<RewindChoice>('revert');
  const [busy, setBusy] = useState(false);
  const [message, setMessage] = useState<string | null>(null);
  const [undoable, setUndoable] = useState(false);
  const thread = model.thread;
  if (!thread || item.inherited || item.status === 'running' || item.status === 'awaiting_approval') {
    return null; // an inherited step is the thread it was forked from's, to go back to there
  }
  const threadId = thread.threadId;
  const act = async (work: () => Promise<void>): Promise<void> => {
    setBusy(true);
    try {
      await work();
    } catch (error) {
      setMessage(errorMessage(error));
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
        `Went back over ${done.steps.length} step${done.steps.length === 1 ? '' : 's'}; the earlier attempt is ` +
          `kept as a branch (${listed.branches.length} branches).`
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
      setMessage(['Rewind undone.', ...undone.not_restored].join(' '));
      thread.connect();
    });
  const disabled = busy || model.running;
  return (
    <div className="cw-rewind" data-testid="cw-rewind" data-tool-call-id={item.id}>
      {item.rewoundBy && <span className="cw-rewind-state">Gone back over: kept in an earlier branch</span>}
      {!item.rewoundBy && !preview && (
        <button type="button" className="cw-button" data-testid="cw-rewind-open" disabled={disabled} onClick={() => void show(notebook, files)}>
          Rewind to here
        </button>
      )}
      {!preview && (
        <button
          type="button"
          className="cw-button"
          data-testid="cw-try-again"
          title="A new thread with the conversation up to just before this step; nothing is undone and this thread stays as it is"
          disabled={disabled}
          onClick={() => void tryAgain()}
        >
          Try again from here
        </button>
      )}
      {preview && (
        <div className="cw-rewind-card" role="region" aria-label="Rewind" data-testid="cw-rewind-card">
          <div className="cw-rewind-title">
            Go back to just before this step: {preview.steps.length} step{preview.steps.length === 1 ? '' : 's'} undone, newest first
          </div>
          <ul className="cw-rewind-steps">
            {preview.steps.map(step => (
              <li key={step.tool_call_id} data-testid="cw-rewind-step" data-tool-call-id={step.tool_call_id}>
                <span className="cw-tool-name">{step.name}</span>:{' '}
                <VisibleText text={step.restores.join('; ') || 'the conversation only'} />
                {step.cannot.map((why, i) => (
                  <div key={i} className="cw-rewind-cannot" data-testid="cw-rewind-cannot">
                    Cannot go back: <VisibleText text={why} />
                  </div>
                ))}
              </li>
            ))}
          </ul>
          {preview.file_diffs?.map(file => (
            <details key={file.path} className="cw-rewind-diff">
              <summary>{`What going back does to ${file.path}`}</summary>
              <pre className="cw-code" data-testid="cw-rewind-diff">
                <VisibleText text={file.diff} code />
              </pre>
            </details>
          ))}
          {changes && (
            <details className="cw-rewind-diff">
              <summary>What the agent changed from this step on</summary>
              <StepChanges diff={changes} />
            </details>
          )}
          <label>
            <input type="checkbox" data-testid="cw-rewind-notebook" checked={notebook === 'revert'} disabled={busy}
              onChange={e => void show(e.target.checked ? 'revert' : 'keep', files)} />
            Revert notebook edits (remove the agent's later cells)
          </label>
          <label>
            <input type="checkbox" data-testid="cw-rewind-files" checked={files === 'revert'} disabled={busy}
              onChange={e => void show(notebook, e.target.checked ? 'revert' : 'keep')} />
            Revert file edits
          </label>
          <div className="cw-rewind-actions">
            <button type="button" className="cw-button cw-button-primary" data-testid="cw-rewind-confirm" disabled={disabled} onClick={() => void confirm()}>
              Rewind
            </button>
            <button type="button" className="cw-button" disabled={busy} onClick={() => setPreview(null)}>
              Cancel
            </button>
          </div>
        </div>
      )}
      {undoable && (
        <button type="button" className="cw-button" data-testid="cw-rewind-undo" disabled={disabled} onClick={() => void undo()}>
          Undo rewind
        </button>
      )}
      {message && (
        <span className="cw-rewind-message" role="status" data-testid="cw-rewind-message">
          <VisibleText text={message} />
        </span>
      )}
    </div>
  );
}
