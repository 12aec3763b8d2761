import * as React from 'react';
import { useState } from 'react';

import { PanelModel } from '../model';
import { Mode } from '../contract.gen';
import { MODES } from '../tokens';

/**
 * The message box: Enter sends, Shift+Enter adds a line. While a run is
 * active, Send is disabled and Stop cancels the run.
 */
export function Composer(props: {
  model: PanelModel;
  inputRef: React.RefObject<HTMLTextAreaElement>;
}): JSX.Element {
  const { model } = props;
  const [text, setText] = useState('');
  const running = model.running;
  const canSend = !!text.trim() && !model.sending && !running;

  const send = async (): Promise<void> => {
    if (!canSend) {
      return;
    }
    const sent = await model.send(text);
    if (sent) {
      setText('');
    }
  };

  const onKeyDown = (event: React.KeyboardEvent<HTMLTextAreaElement>): void => {
    if (event.key === 'Enter' && !event.shiftKey && !event.nativeEvent.isComposing) {
      event.preventDefault();
      void send();
    }
  };

  const notebook = model.notebook;
  return (
    <div className="cw-composer">
      <textarea
        ref={props.inputRef}
        className="cw-textarea cw-composer-input"
        aria-label="Message Cellwright"
        placeholder={
          notebook
            ? 'Ask Cellwright… (Enter to send, Shift+Enter for a new line)'
            : 'Ask Cellwright… (open a notebook to let it run cells there)'
        }
        rows={3}
        value={text}
        onChange={e => setText(e.target.value)}
        onKeyDown={onKeyDown}
      />
      <div className="cw-composer-bar">
        <label className="cw-mode" title="Agent mode">
          <select
            className="cw-select"
            aria-label="Agent mode"
            value={model.mode}
            disabled={running}
            onChange={e => model.pickMode(e.target.value as Mode)}
          >
            {MODES.map(mode => (
              <option key={mode} value={mode}>
                {mode === 'single' ? 'Single agent' : 'Multi-agent'}
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
            Stop
          </button>
        )}
        <button
          type="button"
          className="cw-button cw-button-primary"
          onClick={() => void send()}
          disabled={!canSend}
          aria-busy={model.sending}
        >
          Send
        </button>
      </div>
    </div>
  );
}
