import * as React from 'react';
import { useEffect, useState } from 'react';

import { PanelModel } from '../model';
import { IApprovalRequiredData } from '../tokens';

/** The argument a user edits for each tool; others edit the JSON of all args. */
const EDITABLE_FIELD: Record<string, string> = {
  run_cell: 'code',
  execute_command: 'command'
};

function editableText(pending: IApprovalRequiredData): string {
  const field = EDITABLE_FIELD[pending.name];
  if (field) {
    return String(pending.args?.[field] ?? '');
  }
  return JSON.stringify(pending.args ?? {}, null, 2);
}

/**
 * The approval card: what the agent wants to do and approve / edit / reject
 * (with a reason). Buttons are disabled while the decision is being sent.
 */
export function ApprovalCard(props: {
  model: PanelModel;
  pending: IApprovalRequiredData;
}): JSX.Element {
  const { model, pending } = props;
  const busy = model.deciding;
  const field = EDITABLE_FIELD[pending.name] ?? null;
  const [mode, setMode] = useState<'view' | 'edit' | 'reject'>('view');
  const [draft, setDraft] = useState(() => editableText(pending));
  const [reason, setReason] = useState('');
  const [editError, setEditError] = useState<string | null>(null);

  // A new pending call resets the card.
  useEffect(() => {
    setMode('view');
    setDraft(editableText(pending));
    setReason('');
    setEditError(null);
  }, [pending.id]);

  const approve = (): void => {
    if (mode !== 'edit') {
      void model.decide('approve');
      return;
    }
    const original = editableText(pending);
    if (draft === original) {
      void model.decide('approve');
      return;
    }
    let args: Record<string, unknown>;
    if (field) {
      args = { ...(pending.args ?? {}), [field]: draft };
    } else {
      try {
        const parsed = JSON.parse(draft);
        if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
          throw new Error('the arguments must be a JSON object');
        }
        args = parsed;
      } catch (error) {
        setEditError(`Invalid JSON: ${(error as Error).message}`);
        return;
      }
    }
    setEditError(null);
    void model.decide('edit', { args });
  };

  const reject = (): void => {
    void model.decide('reject', { reason: reason.trim() || undefined });
  };

  const args = pending.args ?? {};
  const diagnostics = pending.diagnostics ?? [];
  const diff = pending.diff ?? (typeof args.diff === 'string' ? args.diff : null);
  const showAgent = pending.agent && pending.agent !== 'main';

  return (
    <section
      className="cw-approval"
      role="region"
      aria-label="Approval required"
      data-testid="cw-approval-card"
      data-tool-name={pending.name}
      data-tool-call-id={pending.id}
    >
      <div className="cw-approval-head">
        <span className="cw-approval-title">Approval required</span>
        <span className="cw-approval-tool">{pending.name}</span>
        {showAgent && <span className="cw-agent-badge">{pending.agent}</span>}
      </div>
      {pending.description && (
        <div className="cw-approval-description">{pending.description}</div>
      )}

      {pending.name === 'execute_command' && mode !== 'edit' && (
        <div className="cw-approval-command">
          <div>
            <span className="cw-label">Command: </span>
            <code>{String(args.command ?? '')}</code>
          </div>
          <div>
            <span className="cw-label">Directory: </span>
            <code>{String(args.cwd ?? '.')}</code>
          </div>
          {args.timeout !== undefined && (
            <div>
              <span className="cw-label">Timeout: </span>
              <code>{`${args.timeout} s`}</code>
            </div>
          )}
        </div>
      )}

      {pending.name === 'run_cell' && mode !== 'edit' && (
        <pre className="cw-code cw-approval-code" data-testid="cw-approval-code">
          <code>{String(args.code ?? '')}</code>
        </pre>
      )}

      {(pending.name === 'write_file' || pending.name === 'edit_file') && args.path && (
        <div className="cw-approval-path">
          <span className="cw-label">File: </span>
          <code>{String(args.path)}</code>
        </div>
      )}

      {!field && !diff && mode !== 'edit' && pending.name !== 'run_cell' && (
        <pre className="cw-code cw-approval-args">{JSON.stringify(args, null, 2)}</pre>
      )}

      {mode === 'edit' && (
        <div className="cw-approval-edit">
          <textarea
            className="cw-textarea cw-code"
            aria-label={
              field === 'code'
                ? 'Edit code'
                : field === 'command'
                  ? 'Edit command'
                  : 'Edit arguments (JSON)'
            }
            value={draft}
            spellCheck={false}
            rows={Math.min(20, Math.max(4, draft.split('\n').length + 1))}
            onChange={e => setDraft(e.target.value)}
            disabled={busy}
          />
          {editError && (
            <div className="cw-approval-edit-error" role="alert">
              {editError}
            </div>
          )}
        </div>
      )}

      {diagnostics.length > 0 && (
        <div className="cw-diagnostics">
          <div className="cw-label">Diagnostics</div>
          <ul>
            {diagnostics.map((d, i) => (
              <li key={i} className={`cw-diagnostic cw-diagnostic-${d.severity}`}>
                <span className="cw-diagnostic-pos">{`${d.line}:${d.column}`}</span>{' '}
                <span className="cw-diagnostic-severity">{d.severity}</span>{' '}
                {d.code && <span className="cw-diagnostic-code">{d.code}</span>}{' '}
                <span className="cw-diagnostic-message">{d.message}</span>
                {d.source && <span className="cw-diagnostic-source">{` (${d.source})`}</span>}
              </li>
            ))}
          </ul>
        </div>
      )}

      {diff && (
        <pre className="cw-diff" aria-label="Proposed changes (unified diff)">
          {diff.split('\n').map((line, i) => (
            <span
              key={i}
              className={
                line.startsWith('+') && !line.startsWith('+++')
                  ? 'cw-diff-add'
                  : line.startsWith('-') && !line.startsWith('---')
                    ? 'cw-diff-del'
                    : line.startsWith('@@')
                      ? 'cw-diff-hunk'
                      : undefined
              }
            >
              {line + '\n'}
            </span>
          ))}
        </pre>
      )}

      {mode === 'reject' ? (
        <div className="cw-approval-reject">
          <label className="cw-label" htmlFor={`cw-reason-${pending.id}`}>
            Reason for rejecting
          </label>
          <textarea
            id={`cw-reason-${pending.id}`}
            className="cw-textarea"
            value={reason}
            rows={3}
            placeholder="Tell the agent what to do instead (optional)"
            onChange={e => setReason(e.target.value)}
            disabled={busy}
            autoFocus
          />
          <div className="cw-buttons">
            <button
              type="button"
              className="cw-button cw-button-danger"
              onClick={reject}
              disabled={busy}
            >
              Confirm reject
            </button>
            <button
              type="button"
              className="cw-button"
              onClick={() => setMode('view')}
              disabled={busy}
            >
              Cancel
            </button>
          </div>
        </div>
      ) : (
        <div className="cw-buttons">
          <button
            type="button"
            className="cw-button cw-button-primary"
            onClick={approve}
            disabled={busy}
          >
            Approve
          </button>
          {mode === 'edit' ? (
            <button
              type="button"
              className="cw-button"
              onClick={() => {
                setMode('view');
                setDraft(editableText(pending));
                setEditError(null);
              }}
              disabled={busy}
            >
              Discard edits
            </button>
          ) : (
            <button
              type="button"
              className="cw-button"
              onClick={() => setMode('edit')}
              disabled={busy}
            >
              Edit
            </button>
          )}
          <button
            type="button"
            className="cw-button cw-button-danger"
            onClick={() => setMode('reject')}
            disabled={busy}
          >
            Reject
          </button>
        </div>
      )}
      {busy && (
        <div className="cw-approval-busy" role="status">
          Sending your decision…
        </div>
      )}
    </section>
  );
}
