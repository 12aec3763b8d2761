import { settingsIcon } from '@jupyterlab/ui-components';
import * as React from 'react';

import { autonomyHint, autonomyLabel, DisplayStatus, PanelModel } from '../model';
import { agentLabel } from '../tokens';
import { AgentNotice } from './AgentPicker';
import { ThreadHistory } from './ThreadHistory';
import { TranslationBundle } from '@jupyterlab/translation';
import { useTrans } from './translation';

function statusText(trans: TranslationBundle, status: DisplayStatus): string {
  switch (status) {
    case 'idle':
      return trans.__('idle');
    case 'running':
      return trans.__('running');
    case 'awaiting_approval':
      return trans.__('awaiting approval');
    case 'cancelled':
      return trans.__('cancelled');
    case 'failed':
      return trans.__('failed');
    case 'waiting_for_cell':
      return trans.__('running in the background');
    default:
      return status;
  }
}

/** The thread's title, else its first message, else its id. */
function threadTitle(model: PanelModel): string {
  const thread = model.thread;
  if (!thread) {
    return '';
  }
  const first = model.view.items.find(item => item.kind === 'user');
  return thread.title || (first && first.kind === 'user' ? first.text : '') || thread.threadId;
}

/** Notebook binding, thread controls and the history list. */
export function Header(props: {
  model: PanelModel;
  historyOpen: boolean;
  setHistoryOpen: (open: boolean) => void;
}): JSX.Element {
  const { model, historyOpen, setHistoryOpen } = props;
  const notebook = model.notebook;
  const thread = model.thread;
  const trans = useTrans();
  return (
    <div className="cw-header">
      <div className="cw-header-row">
        <h2 className="cw-title">Cellwright</h2>
        <span className="cw-spacer" />
        <button
          type="button"
          className="cw-button cw-button-small"
          aria-expanded={historyOpen}
          aria-controls="cw-history"
          onClick={() => {
            const open = !historyOpen;
            setHistoryOpen(open);
            if (open) {
              void model.refreshThreads();
            }
          }}
        >
          {trans.__('History')}
        </button>
        <button
          type="button"
          className="cw-button cw-button-small"
          onClick={() => {
            model.newThread();
            setHistoryOpen(false);
          }}
          disabled={!thread}
        >
          {trans.__('New thread')}
        </button>
        <button
          type="button"
          className={`cw-icon-button cw-settings-button${model.settingsOpen ? ' cw-mod-active' : ''}`}
          aria-label={trans.__('Model settings')}
          aria-pressed={model.settingsOpen}
          title={trans.__('Model settings: endpoint, model, API key')}
          onClick={() => model.openSettings(!model.settingsOpen)}
          disabled={model.needsSetup}
        >
          <settingsIcon.react tag="span" className="cw-settings-icon" />
        </button>
      </div>
      <div className="cw-binding" data-testid="cw-notebook-path" title={notebook?.path ?? ''}>
        {notebook ? (
          <>
            <span className="cw-label">{trans.__('Notebook: ')}</span>
            <span className="cw-path">{notebook.path}</span>
          </>
        ) : (
          <span className="cw-muted">{trans.__('No notebook open: open one so the agent can use its kernel.')}</span>
        )}
      </div>
      {thread && (
        <div className="cw-thread-title" title={thread.threadId}>
          <span className="cw-label">{trans.__('Thread: ')}</span>
          {threadTitle(model)}
        </div>
      )}
      {thread && (
        <AgentNotice
          agent={thread.agent}
          alwaysAllowed={thread.alwaysAllowed}
          onAskAgain={() => void thread.askAgain().catch(error => model.reportError(error))}
        />
      )}
      {historyOpen && (
        <ThreadHistory
          model={model}
          onPicked={() => setHistoryOpen(false)}
        />
      )}
    </div>
  );
}

/** The small status line: run status, active agent, connection. */
export function StatusLine(props: { model: PanelModel }): JSX.Element {
  const { model } = props;
  const view = model.view;
  const thread = model.thread;
  const connection = thread?.connection ?? 'closed';
  const agent = view.agent || 'main';
  const trans = useTrans();
  return (
    <div
      className={`cw-status cw-status-${view.status}`}
      data-testid="cw-status"
      data-status={view.status}
      role="status"
    >
      <span className={`cw-status-dot cw-status-dot-${view.status}`} aria-hidden="true" />
      <span className="cw-status-text">{statusText(trans, view.status)}</span>
      {/* The agent by name only where there are several: "Agent" beside the mode "Agent" said it twice. */}
      <span
        className="cw-status-agent"
        data-testid="cw-agent"
        data-agent={agent}
        data-mode={view.mode ?? undefined}
        title={view.mode === 'multi' ? trans.__('Active agent (multi-agent mode)') : trans.__('Active agent')}
        hidden={view.mode !== 'multi' && agent === 'main'}
      >
        <span className="cw-visually-hidden">{trans.__('Active agent: ')}</span>
        {agentLabel(trans, agent)}
      </span>
      {view.autonomy && (
        <span className="cw-status-autonomy" data-testid="cw-thread-autonomy" title={autonomyHint(trans, view.autonomy)}>
          <span className="cw-visually-hidden">{trans.__('Mode of the last run: ')}</span>
          {autonomyLabel(trans, view.autonomy)}
        </span>
      )}
      {connection === 'reconnecting' && (
        <span className="cw-status-conn">
          {thread?.lastError ? trans.__('reconnecting… (%1)', thread.lastError) : trans.__('reconnecting…')}
        </span>
      )}
    </div>
  );
}
