import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import * as React from 'react';
import { TranslationBundle } from '@jupyterlab/translation';
import { useEffect, useLayoutEffect, useRef, useState } from 'react';

import {
  autonomyHint,
  autonomyLabel,
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
import { ExploreStep, useRunAsCell } from './ExploreStep';
import { RestartKernelButton } from './KernelRestart';
import { Markdown } from './Markdown';
import { UserMessageText } from './Mentions';
import { TodoList } from './TodoList';
import { UsageFigures } from './Usage';
import { STATUS_ICON, ToolEntry, ToolResultLine } from './ToolEntry';
import { CellProgress } from './CellProgress';
import { useRewind } from './RewindControls';
import { SentStep } from './SentRequests';
import { IStepAction, StepMenu } from './StepMenu';
import { useTrans } from './translation';
import { useUndo } from './UndoButtons';
import { hasNotebookCell, showCell } from '../showCell';
import { SentSummary } from '../contract.gen';
import { usageText } from '../model';
import { IToolItem } from '../model';
import { stepVerb } from './ToolEntry';
import { VerifyButton } from './VerifyButton';
import { VisibleText } from './VisibleText';

/** The agent's name, when it is not the one its container already names. */
function AgentBadge(props: { agent: string; container?: string }): JSX.Element | null {
  const { agent, container } = props;
  const trans = useTrans();
  if (ROOT_AGENTS.has(agent) || agent === container) {
    return null;
  }
  return <span className="cw-agent-badge">{agentLabel(trans, agent)}</span>;
}

/** True when a call inside the block waits for the user (a `task` call itself never does). */
function awaitsApproval(items: ConversationItem[]): boolean {
  return items.some(
    item =>
      (item.kind === 'tool' && item.status === 'awaiting_approval') ||
      (item.kind === 'subtask' && awaitsApproval(item.items))
  );
}

function subtaskStatus(trans: TranslationBundle, item: ISubtaskItem): string {
  if (!item.done && awaitsApproval(item.items)) {
    return trans.__('awaiting approval');
  }
  switch (item.status) {
    case 'running':
      return item.active ? trans.__('working') : trans.__('starting');
    case 'ok':
      return trans.__('done');
    case 'error':
      return trans.__('failed');
    case trans.__('rejected'):
      return isStopped(item) ? trans.__('stopped') : trans.__('rejected');
    case 'cancelled':
      return trans.__('stopped');
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
  /** What the model call that handed over the task sent (in the block's details, as a step's). */
  sent?: React.ReactNode;
}): JSX.Element {
  const { item, model, rendermime } = props;
  const trans = useTrans();
  const [open, setOpen] = useState(item.active);
  useEffect(() => {
    setOpen(item.active);
  }, [item.active]);
  const label = agentLabel(trans, item.agent);
  const status = subtaskStatus(trans, item);
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
      aria-label={trans.__('%1 subtask', label)}
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
          {props.sent}
          {item.items.length === 0 && item.active && (
            <div className="cw-muted">{trans.__('%1 is starting…', label)}</div>
          )}
          <Items items={item.items} model={model} rendermime={rendermime} container={item.agent} />
          {item.summary && item.status !== 'ok' && (
            <ToolResultLine className="cw-subtask-result" summary={item.summary} />
          )}
        </div>
      </details>
    </div>
  );
}

/**
 * One step of the timeline: its line (expandable to code and output), the
 * cell's progress while it runs, and its actions in the step's menu (only
 * those that apply: no rewind under a plan or inside a sub-agent's block).
 */
function ToolStep(props: {
  item: IToolItem;
  model: PanelModel;
  rendermime: IRenderMimeRegistry;
  container?: string;
  sent?: SentSummary;
}): JSX.Element {
  const { item, model, rendermime, container } = props;
  const trans = useTrans();
  const showAgent = !ROOT_AGENTS.has(item.agent) && item.agent !== container;
  const undo = useUndo(model, item);
  const rewind = useRewind(model, item, !container && item.name !== 'write_todos');
  const asCell = useRunAsCell(model, item);
  const actions: IStepAction[] = [];
  if (hasNotebookCell(item)) {
    actions.push({
      label: trans.__('Show in notebook'),
      testId: 'cw-show-in-notebook',
      title: trans.__('Select this cell in the notebook and scroll to it'),
      onSelect: () => showCell(item.id)
    });
  }
  actions.push(...asCell.actions, ...undo.actions, ...rewind.actions);
  const menu = <StepMenu actions={actions} stepLabel={stepVerb(trans, item.name)} toolCallId={item.id} />;
  const sent =
    props.sent && model.thread ? (
      <SentStep api={model.api} threadId={model.thread.threadId} sent={props.sent} />
    ) : undefined;
  return (
    <div className="cw-step" data-testid="cw-step" data-tool-call-id={item.id} data-tool-name={item.name}>
      {isExplore(item) ? (
        <ExploreStep item={item} rendermime={rendermime} showAgent={showAgent} menu={menu} />
      ) : (
        <ToolEntry item={item} rendermime={rendermime} showAgent={showAgent} sent={sent} menu={menu} />
      )}
      <CellProgress item={item} model={model} waiting={model.thread?.view.status === 'waiting_for_cell'} />
      {asCell.view}
      {undo.view}
      {rewind.view}
    </div>
  );
}

function Item(props: {
  item: ConversationItem;
  model: PanelModel;
  rendermime: IRenderMimeRegistry;
  /** The sub-agent whose block holds the item; undefined at the top level. */
  container?: string;
  /** What the model call that produced this item sent (shown in its details). */
  sent?: SentSummary;
}): JSX.Element | null {
  const { item, model, rendermime, container } = props;
  const trans = useTrans();
  const sentView =
    props.sent && model.thread ? (
      <SentStep api={model.api} threadId={model.thread.threadId} sent={props.sent} />
    ) : null;
  switch (item.kind) {
    case 'user':
      return (
        <div
          className="cw-message cw-message-user"
          data-testid="cw-user-message"
          data-autonomy={item.autonomy ?? undefined}
        >
          {item.autonomy && (
            <span className="cw-autonomy-badge" title={autonomyHint(trans, item.autonomy)}>
              <span className="cw-visually-hidden">{trans.__('Mode: ')}</span>
              {autonomyLabel(trans, item.autonomy)}
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
          {sentView}
        </div>
      );
    case 'tool':
      return <ToolStep item={item} model={model} rendermime={rendermime} container={container} sent={props.sent} />;
    case 'subtask':
      return <SubtaskBlock item={item} model={model} rendermime={rendermime} sent={sentView} />;
    case 'final': {
      const disabled = model.running || model.sending;
      return (
        <div className="cw-message cw-final">
          <AgentBadge agent={item.agent} container={container} />
          <Markdown rendermime={rendermime} source={item.answer} testId="cw-final" />
          {item.nextItems.length > 0 && (
            <div className="cw-next-items" role="group" aria-label={trans.__('Suggested next steps')}>
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
          {sentView}
        </div>
      );
    }
    case 'error':
      return (
        <div className="cw-error-block" data-testid="cw-error">
          <AgentBadge agent={item.agent} />
          <span className="cw-label">
            {item.errorKind ? trans.__('Error (%1): ', item.errorKind) : trans.__('Error: ')}
          </span>
          <span className="cw-error-message">{item.message}</span>
          {item.retryable && <span className="cw-error-hint">{' ' + trans.__('You can send the request again.')}</span>}
          {item.errorKind === 'kernel_unresponsive' && item.kernelId && (
            <RestartKernelButton kernelId={item.kernelId} />
          )}
        </div>
      );
    case 'run_end': {
      // Usage once: a run that is the whole thread so far has its figure in the footer only.
      const threadUsage = model.view.usage.thread;
      const ownFigure = !!item.usage && !(threadUsage && usageText(trans, threadUsage) === usageText(trans, item.usage));
      if (item.status === 'completed' && !ownFigure) {
        return null;
      }
      return (
        <div className={`cw-run-end cw-run-end-${item.status}`} data-testid="cw-run-end">
          {item.status === 'cancelled' ? trans.__('Run stopped.') : item.status === 'failed' ? trans.__('Run failed.') : null}
          {item.usage && ownFigure && (
            <span className="cw-run-usage" data-testid="cw-run-usage">
              <span className="cw-label">{(item.status === 'completed' ? '' : ' ') + trans.__('This run: ')}</span>
              <UsageFigures usage={item.usage} />
            </span>
          )}
        </div>
      );
    }
    case 'sent':
      return sentView; // a request no step or message followed (an error's): on its own
    case 'forked':
      return (
        <div className="cw-forked" role="note" data-testid="cw-forked">
          {trans.__('Tried again from just before that step of ')}
          <button type="button" className="cw-link-button" onClick={() => void model.openThread(item.fromThread)}>
            <VisibleText text={item.fromTitle || trans.__('the earlier thread')} />
          </button>
          {trans.__(', which stays as it was. Send a message to continue from here.')}
        </div>
      );
    default:
      return null;
  }
}

/**
 * The items of a thread or a sub-agent's block. What a model call sent goes
 * into the details of what that call produced (a step, a message), not
 * between them; the whole thread's requests are in the footer's view.
 */
function Items(props: {
  items: ConversationItem[];
  model: PanelModel;
  rendermime: IRenderMimeRegistry;
  container?: string;
}): JSX.Element {
  const { items, model, rendermime, container } = props;
  const shown: JSX.Element[] = [];
  let sent: SentSummary | undefined;
  items.forEach((item, index) => {
    if (item.kind === 'sent') {
      sent = item.request;
      const next = items[index + 1];
      if (next && ['tool', 'subtask', 'assistant', 'final', 'sent'].includes(next.kind)) {
        return; // shown with the next item; a call that produced nothing shown (a plan) only in the thread's view
      }
      if (!next) {
        return; // the call is still answering
      }
    }
    shown.push(
      <Item key={item.key} item={item} model={model} rendermime={rendermime} container={container} sent={sent} />
    );
    sent = undefined;
  });
  return <>{shown}</>;
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

  const trans = useTrans();
  const streaming = isStreaming(view);
  return (
    <div
      ref={log}
      className="cw-log"
      role="log"
      aria-label={trans.__('Conversation')}
      aria-live="polite"
      aria-relevant="additions"
      aria-busy={streaming || model.loadingThread}
      onScroll={onScroll}
      tabIndex={0}
    >
      <TodoList todos={view.todos} />
      {view.items.length === 0 && !model.loadingThread && (
        <div className="cw-empty">
          <p>{trans.__('Ask Cellwright to explore data, write and run cells, or fix an error.')}</p>
          <p>
            {trans.__(
              "Code cells, shell commands and file edits wait for your approval; approved cells run in this notebook's kernel and appear in the notebook."
            )}
          </p>
        </div>
      )}
      {model.loadingThread && view.items.length === 0 && (
        <div className="cw-loading" role="status">
          {trans.__('Loading the conversation…')}
        </div>
      )}
      <Items items={view.items} model={model} rendermime={rendermime} />
    </div>
  );
}
