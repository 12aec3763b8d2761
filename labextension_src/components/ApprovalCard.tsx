import * as React from 'react';
import { useEffect, useRef, useState } from 'react';

import { OWN_AGENT, PanelModel } from '../model';
import { originText } from '../model/mcpServers';
import { ApprovalRequest, Todo } from '../contract.gen';
import { agentLabel } from '../tokens';
import { AlwaysAllowButton } from './AgentPicker';
import {
  CodePreview,
  CommandPreview,
  commandOf,
  DiagnosticsList,
  DiffView,
  HiddenControlsWarning,
  OtherArgs
} from './Previews';
import { ImpactView, MakesStaleView, SaveRuleOption } from './ImpactView';
import { offersRerun, suggestedRule } from '../model/review';
import { TodoEditor, todosOf } from './TodoEditor';
import { TodoList } from './TodoList';
import { actionText, editLabel, modKey, restartWarning } from './approvalText';
import { useTrans } from './translation';
import { VisibleText } from './VisibleText';
import { TranslationBundle } from '@jupyterlab/translation';

/** The argument a user edits for each tool; others edit the JSON of all args. */
const EDITABLE_FIELD: Record<string, string> = {
  run_cell: 'code',
  edit_cell: 'source',
  execute_command: 'command',
  sql_query: 'sql'
};

/** What each tool's own preview shows (the rest is listed as other arguments). */
const SHOWN_ARGS: Record<string, readonly string[]> = {
  edit_cell: ['cell_id', 'source'],
  write_todos: ['todos'],
  restart_kernel: [],
  sql_query: ['sql', 'database']
};

/** The card's one title: the verb ("Run a cell"), with who asks when it is a sub-agent. */
export function approvalTitle(trans: TranslationBundle, pending: { agent?: string; name: string }): string {
  const action = actionText(trans, pending.name);
  const agent = pending.agent;
  if (!agent || agent === 'main') {
    return action.charAt(0).toUpperCase() + action.slice(1);
  }
  return trans.__('%1 asks to %2', agentLabel(trans, agent), action);
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
  const trans = useTrans();
  // An outside ACP agent's request is approved or rejected as it stands: ACP has no edited answer.
  const outsideAgent = (model.thread?.agent ?? OWN_AGENT) !== OWN_AGENT;
  const busy = model.deciding;
  const field = EDITABLE_FIELD[pending.name] ?? null;
  const [mode, setMode] = useState<'view' | 'edit' | 'reject'>('view');
  const [draft, setDraft] = useState(() => editableText(pending));
  const [reason, setReason] = useState('');
  const [savingRule, setSavingRule] = useState(false);
  const [rule, setRule] = useState<string | null>(null); // null: follow the suggestion
  const [editError, setEditError] = useState<string | null>(null);
  const isPlan = pending.name === 'write_todos';
  const [todos, setTodos] = useState<Todo[]>(() => todosOf(pending.args));

  // A new pending call resets the card.
  useEffect(() => {
    setMode('view');
    setDraft(editableText(pending));
    setTodos(todosOf(pending.args));
    setReason('');
    setSavingRule(false);
    setRule(null);
    setEditError(null);
  }, [pending.id]);

  const approve = (rerunDependents = false): void => {
    if (mode !== 'edit') {
      void model.decide('approve', rerunDependents ? { rerun_dependents: true } : {});
      return;
    }
    if (isPlan) {
      const kept = todos.filter(todo => todo.content.trim());
      if (!kept.length) {
        setEditError(trans.__('The plan needs at least one step (or reject it).'));
        return;
      }
      if (JSON.stringify(kept) === JSON.stringify(todosOf(pending.args))) {
        void model.decide('approve');
        return;
      }
      setEditError(null);
      void model.decide('edit', {
        args: { ...(pending.args ?? {}), todos: kept.map(t => ({ ...t, content: t.content.trim() })) }
      });
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
          throw new Error(trans.__('the arguments must be a JSON object'));
        }
        args = parsed;
      } catch (error) {
        setEditError(trans.__('Invalid JSON: %1', (error as Error).message));
        return;
      }
    }
    setEditError(null);
    void model.decide('edit', { args });
  };

  const alwaysKind = outsideAgent ? pending.always : null; // the agent offers "always" for this kind

  const reject = (): void => {
    const ruleText = (rule ?? suggestedRule(pending.impact, reason)).trim();
    void model.decide('reject', {
      reason: reason.trim() || undefined,
      save_rule: savingRule && ruleText ? ruleText : undefined
    });
  };

  const args = pending.args ?? {};
  const diagnostics = Array.isArray(pending.diagnostics) ? pending.diagnostics : [];
  const diff = pending.diff ?? (typeof args.diff === 'string' ? args.diff : null);
  // The card's first render: bring it (and its buttons) into view and give it the focus, so the
  // keys below work at once (a screen reader reads its title).
  const ref = useRef<HTMLElement>(null);
  useEffect(() => {
    ref.current?.scrollIntoView?.({ block: 'nearest' });
    ref.current?.focus({ preventScroll: true });
  }, [pending.id]);
  // Ctrl/Cmd+Enter approves (confirms a rejection in its form), E edits, R rejects, Escape goes back.
  const onKeyDown = (event: React.KeyboardEvent): void => {
    if (busy) {
      return;
    }
    if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      event.stopPropagation();
      if (mode === 'reject') {
        reject();
      } else {
        approve();
      }
      return;
    }
    const target = event.target as HTMLElement;
    const typing = target.tagName === 'TEXTAREA' || target.tagName === 'INPUT' || target.tagName === 'SELECT';
    if (event.key === 'Escape' && mode !== 'view') {
      event.preventDefault();
      setMode('view');
      ref.current?.focus();
      return;
    }
    if (typing || mode !== 'view' || event.ctrlKey || event.metaKey || event.altKey) {
      return;
    }
    const key = event.key.toLowerCase();
    if (key === 'e' && !outsideAgent) {
      event.preventDefault();
      setMode('edit');
    } else if (key === 'r') {
      event.preventDefault();
      setMode('reject');
    }
  };
  const title = approvalTitle(trans, pending);
  const isFile = pending.name === 'write_file' || pending.name === 'edit_file';
  const warning = isFailureWarning(pending);

  return (
    <section
      ref={ref}
      className="cw-approval"
      role="region"
      aria-label={trans.__('Approval required: %1', title)}
      tabIndex={-1}
      onKeyDown={onKeyDown}
      data-testid="cw-approval-card"
      data-tool-name={pending.name}
      data-tool-call-id={pending.id}
      data-agent={pending.agent}
    >
      <div className="cw-approval-body" data-testid="cw-approval-body">
      <h3 className="cw-approval-title cw-approval-agent" data-testid="cw-approval-agent" title={pending.name}>
        {title}
      </h3>
      {pending.description &&
        (pending.name !== 'run_cell' || warning || !!args.description) &&
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

      {pending.origin && (
        <div className="cw-approval-origin" data-testid="cw-approval-origin">
          <VisibleText text={originText(trans, pending.origin)} />
        </div>
      )}

      <HiddenControlsWarning
        value={[
          args,
          pending.command !== args.command ? pending.command : null,
          pending.cwd !== args.cwd ? pending.cwd : null
        ]}
      />

      {pending.name === 'execute_command' && mode !== 'edit' && <CommandPreview pending={pending} />}

      {pending.name === 'run_cell' && mode !== 'edit' && (
        <CodePreview code={args.code} />
      )}

      {pending.name === 'edit_cell' && (
        <div className="cw-approval-path">
          <span className="cw-label">{trans.__('Cell: ')}</span>
          <code data-testid="cw-approval-cell-id">
            <VisibleText text={String(args.cell_id ?? '')} />
          </code>
        </div>
      )}
      {pending.name === 'edit_cell' && !diff && mode !== 'edit' && <CodePreview code={args.source} />}
      {pending.name === 'sql_query' && mode !== 'edit' && (
        <CodePreview code={args.sql} description={trans.__('Database: %1', String(args.database ?? ''))} />
      )}

      {pending.name === 'restart_kernel' && (
        <div className="cw-approval-warning" data-testid="cw-restart-warning" role="alert">
          <span className="cw-approval-warning-icon" aria-hidden="true">
            ⚠
          </span>
          <span>{restartWarning(trans)}</span>
        </div>
      )}

      {isPlan && mode !== 'edit' && (
        <TodoList todos={todos} title={trans.__('Proposed plan')} testId="cw-approval-todos" />
      )}
      {isPlan && mode === 'edit' && <TodoEditor todos={todos} onChange={setTodos} disabled={busy} />}

      {isFile && !!args.path && (
        <div className="cw-approval-path">
          <span className="cw-label">{trans.__('File: ')}</span>
          <code>
            <VisibleText text={String(args.path)} />
          </code>
        </div>
      )}

      {mode !== 'edit' && (
        <OtherArgs
          name={pending.name}
          args={args}
          shown={isFile && diff ? ['path', 'content', 'edits', 'diff'] : SHOWN_ARGS[pending.name]}
        />
      )}

      {mode === 'edit' && !isPlan && (
        <div className="cw-approval-edit">
          <textarea
            className="cw-textarea cw-code"
            aria-label={editLabel(trans, field ?? undefined)}
            value={draft}
            spellCheck={false}
            rows={Math.min(20, Math.max(field === 'command' ? 2 : 4, draft.split('\n').length + 1))}
            onChange={e => setDraft(e.target.value)}
            disabled={busy}
          />
        </div>
      )}
      {editError && (
        <div className="cw-approval-edit-error" role="alert">
          {editError}
        </div>
      )}

      <ImpactView impact={pending.impact} />
      <MakesStaleView makesStale={pending.makes_stale} />

      <DiagnosticsList diagnostics={diagnostics} />

      {diff && mode !== 'edit' && <DiffView diff={diff} />}
      </div>

      <div className="cw-approval-footer" data-testid="cw-approval-footer">

      {mode === 'reject' ? (
        <div className="cw-approval-reject">
          <label className="cw-label" htmlFor={`cw-reason-${pending.id}`}>
            {trans.__('Reason for rejecting')}
          </label>
          <textarea
            id={`cw-reason-${pending.id}`}
            className="cw-textarea"
            value={reason}
            rows={3}
            placeholder={trans.__('Tell the agent what to do instead (optional)')}
            onChange={e => setReason(e.target.value)}
            disabled={busy}
            autoFocus
          />
          <SaveRuleOption
            id={pending.id}
            saving={savingRule}
            text={rule ?? suggestedRule(pending.impact, reason)}
            disabled={busy}
            onSaving={setSavingRule}
            onText={setRule}
          />
          <div className="cw-buttons">
            <button
              type="button"
              className="cw-button cw-button-danger"
              onClick={reject}
              disabled={busy}
              aria-keyshortcuts="Control+Enter Meta+Enter"
              title={trans.__('%1+Enter', modKey(trans))}
            >
              {trans.__('Confirm reject')}
              <kbd className="cw-kbd" aria-hidden="true">{`${modKey(trans)}+↵`}</kbd>
            </button>
            <button
              type="button"
              className="cw-button"
              onClick={() => setMode('view')}
              disabled={busy}
            >
              {trans.__('Cancel')}
            </button>
          </div>
        </div>
      ) : (
        <div className="cw-buttons">
          <button
            type="button"
            className="cw-button cw-button-primary"
            onClick={() => approve()}
            disabled={busy}
            aria-keyshortcuts="Control+Enter Meta+Enter"
            title={trans.__('%1+Enter', modKey(trans))}
          >
            {mode === 'edit' ? trans.__('Approve edited') : trans.__('Approve')}
            <kbd className="cw-kbd" aria-hidden="true">{`${modKey(trans)}+↵`}</kbd>
          </button>
          {mode !== 'edit' && !outsideAgent && offersRerun(pending) && (
            <button
              type="button"
              className="cw-button"
              data-testid="cw-approve-rerun"
              onClick={() => approve(true)}
              disabled={busy}
              title={trans.__('Run this cell, then re-run the cells it leaves stale, in dependency order')}
            >
              {trans.__('Approve and re-run dependents')}
            </button>
          )}
          {alwaysKind && mode !== 'edit' && <AlwaysAllowButton model={model} kind={alwaysKind} />}
          {mode === 'edit' ? (
            <button
              type="button"
              className="cw-button"
              onClick={() => {
                setMode('view');
                setDraft(editableText(pending));
                setTodos(todosOf(pending.args));
                setEditError(null);
              }}
              disabled={busy}
            >
              {trans.__('Discard edits')}
            </button>
          ) : outsideAgent ? null : (
            <button
              type="button"
              className="cw-button"
              onClick={() => setMode('edit')}
              disabled={busy}
              aria-keyshortcuts="E"
              title="E"
            >
              {trans.__('Edit')}
              <kbd className="cw-kbd" aria-hidden="true">E</kbd>
            </button>
          )}
          <button
            type="button"
            className="cw-button cw-button-danger"
            onClick={() => setMode('reject')}
            disabled={busy}
            aria-keyshortcuts="R"
            title="R"
          >
            {trans.__('Reject')}
            <kbd className="cw-kbd" aria-hidden="true">R</kbd>
          </button>
        </div>
      )}
      {busy && (
        <div className="cw-approval-busy" role="status">
          {trans.__('Sending your decision…')}
        </div>
      )}
      </div>
    </section>
  );
}
