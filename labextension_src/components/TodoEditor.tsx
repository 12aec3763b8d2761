import * as React from 'react';

import { Todo, TodoStatus } from '../contract.gen';
import { useTrans } from './translation';

const STATUSES: readonly TodoStatus[] = ['pending', 'in_progress', 'completed'];

/** The todo items of a `write_todos` call's arguments (bad items dropped). */
export function todosOf(args: Record<string, unknown> | null | undefined): Todo[] {
  const list = args?.todos;
  if (!Array.isArray(list)) {
    return [];
  }
  return list
    .filter(item => item && typeof item === 'object' && typeof (item as Todo).content === 'string')
    .map(item => {
      const todo = item as Todo;
      return {
        content: todo.content,
        status: STATUSES.includes(todo.status) ? todo.status : 'pending'
      };
    });
}

/**
 * The plan of a `write_todos` approval, editable: reword, remove or add
 * steps. The card sends the result as `decision: "edit"`.
 */
export function TodoEditor(props: {
  todos: Todo[];
  onChange: (todos: Todo[]) => void;
  disabled: boolean;
}): JSX.Element {
  const { todos, onChange, disabled } = props;
  const trans = useTrans();
  const update = (index: number, content: string): void =>
    onChange(todos.map((todo, i) => (i === index ? { ...todo, content } : todo)));
  const remove = (index: number): void => onChange(todos.filter((_, i) => i !== index));
  const add = (): void => onChange([...todos, { content: '', status: 'pending' }]);
  return (
    <div className="cw-todo-editor" role="group" aria-label={trans.__('Edit the plan')} data-testid="cw-todo-editor">
      <ol className="cw-todo-editor-list">
        {todos.map((todo, i) => (
          <li key={i} className="cw-todo-editor-item">
            <input
              className="cw-input"
              type="text"
              value={todo.content}
              aria-label={trans.__('Step %1', i + 1)}
              disabled={disabled}
              autoFocus={i === todos.length - 1 && !todo.content}
              onChange={e => update(i, e.target.value)}
            />
            <button
              type="button"
              className="cw-icon-button"
              aria-label={trans.__('Remove step %1', i + 1)}
              title={trans.__('Remove this step')}
              disabled={disabled}
              onClick={() => remove(i)}
            >
              ×
            </button>
          </li>
        ))}
      </ol>
      <button type="button" className="cw-button cw-button-small" onClick={add} disabled={disabled}>
        {trans.__('Add a step')}
      </button>
    </div>
  );
}
