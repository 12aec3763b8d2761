import * as React from 'react';
import { useEffect, useState } from 'react';

import { PanelModel } from '../model';
import { ApprovalRequest } from '../contract.gen';
import { agentLabel } from '../tokens';
import {
  CodePreview,
  CommandPreview,
  commandOf,
  DiagnosticsList,
  DiffView,
  HiddenControlsWarning,
  OtherArgs
} from './Previews';
import { VisibleText } from './VisibleText';

/** The argument a user edits for each tool; others edit the JSON of all args. */
const EDITABLE_FIELD: Record<string, string> = {
  run_cell: 'code',
  execute_command: 'command'
};

/** What the agent asks to do, per tool. */
const ACTION: Record<string, string> = {
  run_cell: 'run a cell',
  execute_command: 'run a shell command',
  write_file: 'write a file',
  edit_file: 'edit a file',
  add_markdown: 'add a Markdown cell'
};

/** "Python developer asks to run a cell" ("Cellwright asks …" in single mode). */
export function approvalQuestion(pending: { agent?: string; name: string }): string {
  const agent = pending.agent;
  const who = !agent || agent === 'main' ? 'Cellwright' : agentLabel(agent);
  return `${who} asks to ${ACTION[pending.name] ?? `use ${pending.name}`}`;
}

/**
 * A preview that says the call cannot succeed. Servers before `will_fail`
 * said so only in the description ("… will fail: <reason>").
 */
export function isFailureWarning(pending: {
  will_fail?: boolean | null;
  description?: string | null;
}): boolean {
  if (typeof pending.will_fail === 'boolean') {
    return pending.will_fail;
  }
  return !!pending.description && /\bwill fail\b/i.test(pending.description);
}

function editableText(pending: ApprovalRequest): string {
  const field = EDITABLE_FIELD[pending.name];
  if (field === 'command') {
    return commandOf(pending);
  }
  if (field) {
    return String(pending.args?.[field] ?? '');
  }
  return JSON.stringify(pending.args ?? {}, null, 2);
}

/**
 * The approval card: who asks to do what, a preview fitting the tool (the
 * cell's code with its diagnostics, the shell command and its folder, a file
 * change as a diff), and approve / edit / reject (with a reason). Buttons are
 * disabled while the decision is being sent.
 */
export function ApprovalCard(props: {
  model: PanelModel;
  pending: ApprovalRequest;
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
  const diagnostics = Array.isArray(pending.diagnostics) ? pending.diagnostics : [];
  const diff = pending.diff ?? (typeof args.diff === 'string' ? args.diff : null);
  const isFile = pending.name === 'write_file' || pending.name === 'edit_file';
  const warning = isFailureWarning(pending);

  return (
    <section
      className="cw-approval"
      role="region"
      aria-label="Approval required"
      data-testid="cw-approval-card"
      data-tool-name={pending.name}
      data-tool-call-id={pending.id}
      data-agent={pending.agent}
    >
      <div className="cw-approval-head">
        <span className="cw-approval-title">Approval required</span>
        <span className="cw-approval-tool">{pending.name}</span>
      </div>
      <div className="cw-approval-agent" data-testid="cw-approval-agent">
        {approvalQuestion(pending)}
      </div>
      {pending.description &&
        (warning ? (
          <div className="cw-approval-warning" data-testid="cw-approval-warning" role="alert">
            <span className="cw-approval-warning-icon" aria-hidden="true">
              ⚠
            </span>
            <span>
              <VisibleText text={pending.description} />
            </span>
          </div>
        ) : (
          <div className="cw-approval-description">
            <VisibleText text={pending.description} />
          </div>
        ))}

      <HiddenControlsWarning
        value={[
          args,
          pending.command !== args.command ? pending.command : null,
          pending.cwd !== args.cwd ? pending.cwd : null
        ]}
      />

      {pending.name === 'execute_command' && mode !== 'edit' && <CommandPreview pending={pending} />}

      {pending.name === 'run_cell' && mode !== 'edit' && (
        <CodePreview code={args.code} description={args.description} />
      )}

      {isFile && !!args.path && (
        <div className="cw-approval-path">
          <span className="cw-label">File: </span>
          <code>
            <VisibleText text={String(args.path)} />
          </code>
        </div>
      )}

      {mode !== 'edit' && (
        <OtherArgs
          name={pending.name}
          args={args}
          shown={isFile && diff ? ['path', 'content', 'edits', 'diff'] : undefined}
        />
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
            rows={Math.min(20, Math.max(field === 'command' ? 2 : 4, draft.split('\n').length + 1))}
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

      <DiagnosticsList diagnostics={diagnostics} />

      {diff && mode !== 'edit' && <DiffView diff={diff} />}

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
