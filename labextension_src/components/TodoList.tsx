import * as React from 'react';

import { Todo, TodoStatus } from '../contract.gen';

const MARK: Record<TodoStatus, string> = {
  pending: '☐',
  in_progress: '◐',
  completed: '☑'
};

const SPOKEN: Record<TodoStatus, string> = {
  pending: 'pending',
  in_progress: 'in progress',
  completed: 'completed'
};

/** The agent's live checklist (or, on an approval card, the plan it proposes). */
export function TodoList(props: { todos: Todo[]; title?: string; testId?: string }): JSX.Element | null {
  const { todos } = props;
  const title = props.title ?? 'Plan';
  if (!todos.length) {
    return null;
  }
  const done = todos.filter(t => t.status === 'completed').length;
  return (
    <section className="cw-todos" data-testid={props.testId ?? 'cw-todos'} aria-label={title === 'Plan' ? 'Todo list' : title}>
      <div className="cw-todos-title">
        {title} <span className="cw-todos-count">{`${done}/${todos.length} done`}</span>
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
            <span className="cw-visually-hidden">{` (${SPOKEN[todo.status] ?? todo.status})`}</span>
          </li>
        ))}
      </ul>
    </section>
  );
}
