import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import * as React from 'react';
import { useEffect, useLayoutEffect, useRef } from 'react';

import { ConversationItem, IThreadView, PanelModel } from '../model';
import { Markdown } from './Markdown';
import { TodoList } from './TodoList';
import { ToolEntry } from './ToolEntry';

function AgentBadge(props: { agent: string }): JSX.Element | null {
  if (!props.agent || props.agent === 'main') {
    return null;
  }
  return <span className="cw-agent-badge">{props.agent}</span>;
}

function Item(props: {
  item: ConversationItem;
  model: PanelModel;
  rendermime: IRenderMimeRegistry;
}): JSX.Element | null {
  const { item, model, rendermime } = props;
  switch (item.kind) {
    case 'user':
      return (
        <div className="cw-message cw-message-user" data-testid="cw-user-message">
          <div className="cw-message-text">{item.text}</div>
        </div>
      );
    case 'assistant':
      return (
        <div className="cw-message cw-message-assistant" data-testid="cw-assistant-message">
          <AgentBadge agent={item.agent} />
          <Markdown rendermime={rendermime} source={item.text} streaming={item.streaming} />
        </div>
      );
    case 'tool':
      return <ToolEntry item={item} rendermime={rendermime} showAgent={item.agent !== 'main'} />;
    case 'final': {
      const disabled = model.running || model.sending;
      return (
        <div className="cw-message cw-final">
          <AgentBadge agent={item.agent} />
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
        </div>
      );
    }
    case 'error':
      return (
        <div className="cw-error-block" data-testid="cw-error">
          <span className="cw-label">{`Error${item.errorKind ? ` (${item.errorKind})` : ''}: `}</span>
          <span className="cw-error-message">{item.message}</span>
          {item.retryable && <span className="cw-error-hint"> You can send the request again.</span>}
        </div>
      );
    case 'agent_switch':
      return (
        <div className="cw-agent-switch">
          <span aria-hidden="true">→ </span>
          {`${item.from} handed over to `}
          <strong>{item.to}</strong>
          {item.task ? `: ${item.task}` : ''}
        </div>
      );
    case 'run_end':
      return (
        <div className={`cw-run-end cw-run-end-${item.status}`}>
          {item.status === 'cancelled' ? 'Run stopped.' : 'Run failed.'}
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

  const streaming = view.items.some(i => i.kind === 'assistant' && i.streaming);
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
