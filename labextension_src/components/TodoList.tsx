import * as React from 'react';
import { TranslationBundle } from '@jupyterlab/translation';

import { Todo, TodoStatus } from '../contract.gen';
import { useTrans } from './translation';

const MARK: Record<TodoStatus, string> = {
  pending: '☐',
  in_progress: '◐',
  completed: '☑'
};

/** A status as a screen reader says it; an unknown one (a newer server) as it is. */
function spokenStatus(trans: TranslationBundle, status: TodoStatus): string {
  switch (status) {
    case 'pending':
      return trans.__('pending');
    case 'in_progress':
      return trans.__('in progress');
    case 'completed':
      return trans.__('completed');
    default:
      return status;
  }
}

/** The agent's live checklist (or, on an approval card, the plan it proposes). */
export function TodoList(props: { todos: Todo[]; title?: string; testId?: string }): JSX.Element | null {
  const { todos } = props;
  const trans = useTrans();
  const title = props.title ?? trans.__('Plan');
  if (!todos.length) {
    return null;
  }
  const done = todos.filter(t => t.status === 'completed').length;
  return (
    <section className="cw-todos" data-testid={props.testId ?? 'cw-todos'} aria-label={props.title === undefined ? trans.__('Todo list') : title}>
      <div className="cw-todos-title">
        {title} <span className="cw-todos-count">{trans.__('%1/%2 done', done, todos.length)}</span>
      </div>
      <ul className="cw-todos-list">
        {todos.map((todo, i) => (
          <li
            key={i}
            className={`cw-todo cw-todo-${todo.status}`}
            data-status={todo.status}
          >
            <span className="cw-todo-mark" aria-hidden="true">
              {MARK[todo.status] ?? '☐'}
            </span>
            <span className="cw-todo-text">{todo.content}</span>
            <span className="cw-visually-hidden">{` (${spokenStatus(trans, todo.status)})`}</span>
          </li>
        ))}
      </ul>
    </section>
  );
}
