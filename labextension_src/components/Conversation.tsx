import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import * as React from 'react';
import { useEffect, useLayoutEffect, useRef, useState } from 'react';

import {
  AUTONOMY_HINTS,
  AUTONOMY_LABELS,
  ConversationItem,
  isStopped,
  isStreaming,
  ISubtaskItem,
  isExplore,
  IThreadView,
  PanelModel,
  ROOT_AGENTS
} from '../model';
import { agentLabel } from '../tokens';
import { ExploreStep } from './ExploreStep';
import { RestartKernelButton } from './KernelRestart';
import { Markdown } from './Markdown';
import { UserMessageText } from './Mentions';
import { TodoList } from './TodoList';
import { UsageFigures } from './Usage';
import { STATUS_ICON, ToolEntry, ToolResultLine } from './ToolEntry';
import { CellProgress } from './CellProgress';
import { RewindControls } from './RewindControls';
import { SentStep } from './SentRequests';
import { UndoButtons } from './UndoButtons';
import { VerifyButton } from './VerifyButton';
import { VisibleText } from './VisibleText';

/** The agent's name, when it is not the one its container already names. */
function AgentBadge(props: { agent: string; container?: string }): JSX.Element | null {
  const { agent, container } = props;
  if (ROOT_AGENTS.has(agent) || agent === container) {
    return null;
  }
  return <span className="cw-agent-badge">{agentLabel(agent)}</span>;
}

/** True when a call inside the block waits for the user (a `task` call itself never does). */
function awaitsApproval(items: ConversationItem[]): boolean {
  return items.some(
    item =>
      (item.kind === 'tool' && item.status === 'awaiting_approval') ||
      (item.kind === 'subtask' && awaitsApproval(item.items))
  );
}

function subtaskStatus(item: ISubtaskItem): string {
  if (!item.done && awaitsApproval(item.items)) {
    return 'awaiting approval';
  }
  switch (item.status) {
    case 'running':
      return item.active ? 'working' : 'starting';
    case 'ok':
      return 'done';
    case 'error':
      return 'failed';
    case 'rejected':
      return isStopped(item) ? 'stopped' : 'rejected';
    case 'cancelled':
      return 'stopped';
    default:
      return item.status;
  }
}

/**
 * A sub-agent's work for one delegated task: the planner's `task` call as
 * the header (agent and task), then what the sub-agent did. Open while the
 * sub-agent has control, folded when it hands back (the user can toggle).
 */
function SubtaskBlock(props: {
  item: ISubtaskItem;
  model: PanelModel;
  rendermime: IRenderMimeRegistry;
}): JSX.Element {
  const { item, model, rendermime } = props;
  const [open, setOpen] = useState(item.active);
  useEffect(() => {
    setOpen(item.active);
  }, [item.active]);
  const label = agentLabel(item.agent);
  const status = subtaskStatus(item);
  const stopped = isStopped(item) || item.status === 'cancelled';
  return (
    <div
      className={`cw-subtask cw-subtask-${item.status}${item.active ? ' cw-subtask-active' : ''}${
        stopped ? ' cw-subtask-stopped' : ''
      }`}
      data-testid="cw-subtask"
      data-agent={item.agent}
      data-status={item.status}
      data-active={item.active ? 'true' : 'false'}
      data-tool-call-id={item.id ?? undefined}
      role="group"
      aria-label={`${label} subtask`}
    >
      <details
        className="cw-subtask-details"
        open={open}
        onToggle={event => setOpen((event.currentTarget as HTMLDetailsElement).open)}
      >
        <summary className="cw-subtask-summary">
          <span className="cw-subtask-icon" aria-hidden="true">
            {stopped ? '■' : ((STATUS_ICON as Record<string, string>)[item.status] ?? '◌')}
          </span>
          <span className="cw-subtask-agent" data-testid="cw-subtask-agent">
            {label}
          </span>
          {item.task && (
            <span className="cw-subtask-task" data-testid="cw-subtask-task">
              <span className="cw-visually-hidden">: </span>
              {item.task}
            </span>
          )}
          <span className="cw-subtask-status">
            <span className="cw-visually-hidden">, </span>
            {status}
          </span>
        </summary>
        <div className="cw-subtask-body">
          {item.items.length === 0 && item.active && (
            <div className="cw-muted">{`${label} is starting…`}</div>
          )}
          {item.items.map(child => (
            <Item
              key={child.key}
              item={child}
              model={model}
              rendermime={rendermime}
              container={item.agent}
            />
          ))}
          {item.summary && item.status !== 'ok' && (
            <ToolResultLine className="cw-subtask-result" summary={item.summary} />
          )}
        </div>
      </details>
    </div>
  );
}

function Item(props: {
  item: ConversationItem;
  model: PanelModel;
  rendermime: IRenderMimeRegistry;
  /** The sub-agent whose block holds the item; undefined at the top level. */
  container?: string;
}): JSX.Element | null {
  const { item, model, rendermime, container } = props;
  switch (item.kind) {
    case 'user':
      return (
        <div
          className="cw-message cw-message-user"
          data-testid="cw-user-message"
          data-autonomy={item.autonomy ?? undefined}
        >
          {item.autonomy && (
            <span className="cw-autonomy-badge" title={AUTONOMY_HINTS[item.autonomy]}>
              <span className="cw-visually-hidden">Mode: </span>
              {AUTONOMY_LABELS[item.autonomy]}
            </span>
          )}
          <div className="cw-message-text">
            <UserMessageText text={item.text} />
          </div>
        </div>
      );
    case 'assistant':
      return (
        <div
          className={`cw-message cw-message-assistant${container ? ' cw-subtask-report' : ''}`}
          data-testid="cw-assistant-message"
          data-agent={item.agent}
        >
          <AgentBadge agent={item.agent} container={container} />
          <Markdown rendermime={rendermime} source={item.text} streaming={item.streaming} />
        </div>
      );
    case 'tool': {
      const showAgent = !ROOT_AGENTS.has(item.agent) && item.agent !== container;
      return (
        <>
          {isExplore(item) ? (
            <ExploreStep item={item} model={model} rendermime={rendermime} showAgent={showAgent} />
          ) : (
            <ToolEntry item={item} rendermime={rendermime} showAgent={showAgent} />
          )}
          <CellProgress item={item} model={model} waiting={model.thread?.view.status === 'waiting_for_cell'} />
          {item.undo && !item.rewoundBy && <UndoButtons model={model} item={item} />}
          {!container && <RewindControls model={model} item={item} />}
        </>
      );
    }
    case 'subtask':
      return <SubtaskBlock item={item} model={model} rendermime={rendermime} />;
    case 'final': {
      const disabled = model.running || model.sending;
      return (
        <div className="cw-message cw-final">
          <AgentBadge agent={item.agent} container={container} />
          <Markdown rendermime={rendermime} source={item.answer} testId="cw-final" />
          {item.nextItems.length > 0 && (
            <div className="cw-next-items" role="group" aria-label="Suggested next steps">
              {item.nextItems.map((next, i) => (
                <button
                  key={i}
                  type="button"
                  className="cw-button cw-next-item"
                  data-testid="cw-next-item"
                  title={next.prompt}
                  disabled={disabled}
                  onClick={() => void model.send(next.prompt)}
                >
                  {next.title || next.prompt}
                </button>
              ))}
            </div>
          )}
          {!container && <VerifyButton model={model} />}
        </div>
      );
    }
    case 'error':
      return (
        <div className="cw-error-block" data-testid="cw-error">
          <AgentBadge agent={item.agent} />
          <span className="cw-label">{`Error${item.errorKind ? ` (${item.errorKind})` : ''}: `}</span>
          <span className="cw-error-message">{item.message}</span>
          {item.retryable && <span className="cw-error-hint"> You can send the request again.</span>}
          {item.errorKind === 'kernel_unresponsive' && item.kernelId && (
            <RestartKernelButton kernelId={item.kernelId} />
          )}
        </div>
      );
    case 'run_end':
      return (
        <div className={`cw-run-end cw-run-end-${item.status}`} data-testid="cw-run-end">
          {item.status === 'cancelled' ? 'Run stopped.' : item.status === 'failed' ? 'Run failed.' : null}
          {item.usage && (
            <span className="cw-run-usage" data-testid="cw-run-usage">
              <span className="cw-label">{item.status === 'completed' ? 'This run: ' : ' This run: '}</span>
              <UsageFigures usage={item.usage} />
            </span>
          )}
        </div>
      );
    case 'sent':
      return model.thread ? (
        <SentStep api={model.api} threadId={model.thread.threadId} sent={item.request} />
      ) : null;
    case 'forked':
      return (
        <div className="cw-forked" role="note" data-testid="cw-forked">
          {'Tried again from just before that step of '}
          <button type="button" className="cw-link-button" onClick={() => void model.openThread(item.fromThread)}>
            <VisibleText text={item.fromTitle || 'the earlier thread'} />
          </button>
          {', which stays as it was. Send a message to continue from here.'}
        </div>
      );
    default:
      return null;
  }
}

/** The conversation log, with the todo list on top. */
export function Conversation(props: {
  model: PanelModel;
  view: IThreadView;
  rendermime: IRenderMimeRegistry;
}): JSX.Element {
  const { model, view, rendermime } = props;
  const log = useRef<HTMLDivElement>(null);
  const pinned = useRef(true);

  // Follow the bottom unless the user scrolled up.
  const onScroll = (): void => {
    const node = log.current;
    if (node) {
      pinned.current = node.scrollHeight - node.scrollTop - node.clientHeight < 40;
    }
  };

  useLayoutEffect(() => {
    const node = log.current;
    if (node && model.autoScroll && pinned.current) {
      node.scrollTop = node.scrollHeight;
    }
  });

  // A newly shown thread starts at its end.
  useEffect(() => {
    pinned.current = true;
  }, [model.thread]);

  const streaming = isStreaming(view);
  return (
    <div
      ref={log}
      className="cw-log"
      role="log"
      aria-label="Conversation"
      aria-busy={streaming || model.loadingThread}
      onScroll={onScroll}
      tabIndex={0}
    >
      <TodoList todos={view.todos} />
      {view.items.length === 0 && !model.loadingThread && (
        <div className="cw-empty">
          <p>Ask Cellwright to explore data, write and run cells, or fix an error.</p>
          <p>
            Code cells, shell commands and file edits wait for your approval; approved cells
            run in this notebook's kernel and appear in the notebook.
          </p>
        </div>
      )}
      {model.loadingThread && view.items.length === 0 && (
        <div className="cw-loading" role="status">
          Loading the conversation…
        </div>
      )}
      {view.items.map(item => (
        <Item key={item.key} item={item} model={model} rendermime={rendermime} />
      ))}
    </div>
  );
}
