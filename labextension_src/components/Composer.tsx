import * as React from 'react';
import { useLayoutEffect, useMemo, useRef, useState } from 'react';

import { withCellContext } from '../cellContext';
import { Mode } from '../contract.gen';
import { activeMention, applyMention, menuKey } from '../mentions';
import { MentionSource } from '../mentionSource';
import { PanelModel } from '../model';
import { MODES } from '../tokens';
import { AgentPicker } from './AgentPicker';
import { AutonomyPicker } from './AutonomyPicker';
import { useSignal } from './hooks';
import { MentionList, optionId, useMentionItems } from './Mentions';
import { useTrans } from './translation';

let composerCount = 0;

/**
 * The message box: Enter sends, Shift+Enter adds a line, `@` opens the list
 * of variables and files to mention (the focus stays in the textbox, which
 * points at the active option). While a run is active, Send is disabled and
 * Stop cancels the run.
 */
export function Composer(props: {
  model: PanelModel;
  inputRef: React.RefObject<HTMLTextAreaElement>;
}): JSX.Element {
  const { model } = props;
  const draft = model.draft;
  const trans = useTrans();
  useSignal(draft.changed);
  const [text, setText] = useState('');
  const [caret, setCaret] = useState(0);
  const [focused, setFocused] = useState(false);
  // Escape closes the list for the mention it was open on, until another one starts.
  const [dismissed, setDismissed] = useState<number | null>(null);
  const [active, setActive] = useState(0);
  const pendingCaret = useRef<number | null>(null);
  const listId = useMemo(() => `cw-mentions-${++composerCount}`, []);
  const source = useMemo(() => new MentionSource(model.api, trans), [model.api, trans]);

  const notebook = model.notebook;
  const kernelId = notebook?.kernelId();
  const binding = useMemo(
    () => (notebook ? { path: notebook.path, kernelId } : null),
    [notebook?.path, kernelId]
  );
  const mention = focused ? activeMention(text, caret) : null;
  const open = !!mention && mention.start !== dismissed;
  const { items, loading, notes } = useMentionItems(source, open, mention?.query ?? '', binding);
  const activeIndex = Math.min(active, Math.max(items.length - 1, 0));

  useLayoutEffect(() => {
    const input = props.inputRef.current;
    if (input && pendingCaret.current !== null) {
      input.setSelectionRange(pendingCaret.current, pendingCaret.current);
      pendingCaret.current = null;
    }
  });

  const running = model.running;
  const attached = draft.cell;
  const canSend = (!!text.trim() || !!attached) && !model.sending && !running;

  const send = async (): Promise<void> => {
    if (!canSend) {
      return;
    }
    const sent = await model.send(withCellContext(text, attached));
    if (sent) {
      setText('');
      draft.clear();
    }
  };

  const track = (input: HTMLTextAreaElement): void => {
    if (input.selectionStart === input.selectionEnd) {
      setCaret(input.selectionStart);
    }
  };

  const pick = (index: number): void => {
    const item = items[index];
    if (!mention || !item) {
      return;
    }
    const next = applyMention(text, mention, item.name);
    setText(next.text);
    setCaret(next.caret);
    pendingCaret.current = next.caret;
    setActive(0);
  };

  const onKeyDown = (event: React.KeyboardEvent<HTMLTextAreaElement>): void => {
    if (event.nativeEvent.isComposing) {
      return;
    }
    if (open) {
      const outcome = menuKey(event.key, activeIndex, items.length, {
        shift: event.shiftKey,
        ctrl: event.ctrlKey,
        alt: event.altKey,
        meta: event.metaKey
      });
      if (outcome.kind !== 'pass') {
        event.preventDefault();
        // JupyterLab's own shortcuts (Escape, arrows) must not see the list's keys.
        event.stopPropagation();
        if (outcome.kind === 'move') {
          setActive(outcome.active);
        } else if (outcome.kind === 'pick') {
          pick(outcome.index);
        } else {
          setDismissed(mention!.start);
        }
        return;
      }
    }
    if (event.key === 'Enter' && !event.shiftKey) {
      event.preventDefault();
      void send();
    }
  };

  return (
    <div className="cw-composer">
      {attached && (
        <div className="cw-attachment" data-testid="cw-attachment">
          <span className="cw-attachment-label" title={attached.block}>
            {attached.label}
          </span>
          <button
            type="button"
            className="cw-icon-button"
            aria-label={trans.__('Remove %1', attached.label)}
            onClick={() => draft.clear()}
          >
            ×
          </button>
        </div>
      )}
      {open && (
        <MentionList
          id={listId}
          items={items}
          active={activeIndex}
          loading={loading}
          notes={notes}
          onPick={pick}
          onHover={setActive}
        />
      )}
      <textarea
        ref={props.inputRef}
        className="cw-textarea cw-composer-input"
        aria-label={trans.__('Message Cellwright')}
        aria-autocomplete="list"
        aria-controls={open ? listId : undefined}
        aria-activedescendant={open && items.length ? optionId(listId, activeIndex) : undefined}
        placeholder={
          attached
            ? trans.__('Ask about the attached cell… (Enter to send)')
            : notebook
            ? trans.__('Ask Cellwright… (@ mentions a variable or file; Enter sends, Shift+Enter adds a line)')
            : trans.__('Ask Cellwright… (open a notebook to let it run cells there)')
        }
        rows={3}
        value={text}
        onChange={e => {
          setText(e.target.value);
          track(e.target);
          if (dismissed !== null && activeMention(e.target.value, e.target.selectionStart)?.start !== dismissed) {
            setDismissed(null);
          }
          setActive(0);
        }}
        onSelect={e => track(e.currentTarget)}
        onFocus={e => {
          setFocused(true);
          track(e.currentTarget);
        }}
        onBlur={() => setFocused(false)}
        onKeyDown={onKeyDown}
      />
      <div className="cw-composer-bar">
        <AgentPicker model={model} disabled={running || model.thread !== null} />
        <AutonomyPicker model={model} disabled={running} />
        <label className="cw-mode" title={trans.__('Agent mode')}>
          <select
            className="cw-select"
            aria-label={trans.__('Agent mode')}
            value={model.mode}
            disabled={running}
            onChange={e => model.pickMode(e.target.value as Mode)}
          >
            {MODES.map(mode => (
              <option key={mode} value={mode}>
                {mode === 'single' ? trans.__('Single agent') : trans.__('Multi-agent')}
              </option>
            ))}
          </select>
        </label>
        <span className="cw-spacer" />
        {running && (
          <button
            type="button"
            className="cw-button cw-button-danger"
            onClick={() => void model.cancel()}
          >
            {trans.__('Stop')}
          </button>
        )}
        <button
          type="button"
          className="cw-button cw-button-primary"
          onClick={() => void send()}
          disabled={!canSend}
          aria-busy={model.sending}
        >
          {trans.__('Send')}
        </button>
      </div>
    </div>
  );
}
