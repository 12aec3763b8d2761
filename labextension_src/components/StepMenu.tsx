/**
 * A step's actions behind one "⋯" button (a menu button, as VS Code's chat
 * and jupyterlab-chat do): the timeline stays one line per step and every
 * action is one click or key away. The menu's items stay in the page while
 * it is closed (hidden), so a step's actions can be counted and named.
 * Keys: Enter/Space/ArrowDown open it on the first item; ArrowUp/ArrowDown,
 * Home/End move; Escape closes it and gives focus back to the button.
 */
import * as React from 'react';
import { useEffect, useRef, useState } from 'react';

import { useTrans } from './translation';

export interface IStepAction {
  /** What the item says (already translated). */
  label: string;
  testId: string;
  onSelect(): void;
  disabled?: boolean;
  /** A longer explanation (already translated). */
  title?: string;
}

export function StepMenu(props: { actions: IStepAction[]; stepLabel: string; toolCallId?: string }): JSX.Element | null {
  const { actions, stepLabel } = props;
  const trans = useTrans();
  const [open, setOpen] = useState(false);
  const button = useRef<HTMLButtonElement>(null);
  const menu = useRef<HTMLDivElement>(null);

  const items = (): HTMLButtonElement[] =>
    Array.from(menu.current?.querySelectorAll<HTMLButtonElement>('[role="menuitem"]:not([disabled])') ?? []);
  const focusItem = (index: number): void => {
    const all = items();
    if (all.length) {
      all[(index + all.length) % all.length].focus();
    }
  };
  const close = (refocus: boolean): void => {
    setOpen(false);
    if (refocus) {
      button.current?.focus();
    }
  };

  useEffect(() => {
    if (!open) {
      return;
    }
    focusItem(0);
    const outside = (event: MouseEvent): void => {
      const target = event.target as Node;
      if (!menu.current?.contains(target) && !button.current?.contains(target)) {
        setOpen(false);
      }
    };
    document.addEventListener('mousedown', outside);
    return () => document.removeEventListener('mousedown', outside);
  }, [open]);

  if (!actions.length) {
    return null;
  }
  const onMenuKey = (event: React.KeyboardEvent): void => {
    const all = items();
    const at = all.indexOf(document.activeElement as HTMLButtonElement);
    switch (event.key) {
      case 'ArrowDown':
        focusItem(at + 1);
        break;
      case 'ArrowUp':
        focusItem(at - 1);
        break;
      case 'Home':
        focusItem(0);
        break;
      case 'End':
        focusItem(all.length - 1);
        break;
      case 'Escape':
        close(true);
        break;
      case 'Tab':
        setOpen(false);
        return;
      default:
        return;
    }
    event.preventDefault();
    event.stopPropagation();
  };
  return (
    <div className="cw-step-menu">
      <button
        ref={button}
        type="button"
        className="cw-icon-button cw-step-menu-button"
        data-testid="cw-step-menu-button"
        aria-label={trans.__('Step actions: %1', stepLabel)}
        title={trans.__('Actions for this step')}
        aria-haspopup="menu"
        aria-expanded={open}
        onClick={() => setOpen(!open)}
        onKeyDown={event => {
          if (event.key === 'ArrowDown' && !open) {
            event.preventDefault();
            setOpen(true);
          }
        }}
      >
        <span aria-hidden="true">⋯</span>
      </button>
      <div
        ref={menu}
        className="cw-step-menu-list"
        role="menu"
        aria-label={trans.__('Step actions: %1', stepLabel)}
        data-testid="cw-step-menu"
        hidden={!open}
        onKeyDown={onMenuKey}
      >
        {actions.map(action => (
          <button
            key={action.testId}
            type="button"
            role="menuitem"
            tabIndex={-1}
            className="cw-step-menu-item"
            data-testid={action.testId}
            data-tool-call-id={props.toolCallId}
            disabled={action.disabled}
            title={action.title}
            onClick={() => {
              close(true);
              action.onSelect();
            }}
          >
            {action.label}
          </button>
        ))}
      </div>
    </div>
  );
}
