import * as React from 'react';
import { useEffect } from 'react';

import { OWN_AGENT, PanelModel } from '../model';
import { useTrans } from './translation';

/**
 * Which agent a new thread is for: Cellwright's own, or an outside ACP
 * agent the server hosts. Shown only when the server offers more than ours;
 * an agent that cannot start is listed, disabled, with what to install.
 */
export function AgentPicker(props: { model: PanelModel; disabled: boolean }): JSX.Element | null {
  const { model, disabled } = props;
  const trans = useTrans();
  useEffect(() => {
    void model.agents.load();
  }, [model]);
  const agents = model.agents.agents;
  if (agents.length < 2) {
    return null;
  }
  return (
    <label className="cw-mode" title={trans.__('Which agent answers in a new thread')}>
      <select
        className="cw-select"
        aria-label={trans.__('Agent')}
        data-testid="cw-agent-picker"
        value={model.agents.chosen}
        disabled={disabled}
        onChange={e => model.agents.pick(e.target.value)}
      >
        {agents.map(agent => (
          <option key={agent.name} value={agent.name} disabled={!agent.available} title={agent.reason ?? ''}>
            {agent.name === OWN_AGENT
              ? trans.__('Cellwright')
              : agent.available
                ? agent.name
                : trans.__('%1 (not available)', agent.name)}
          </option>
        ))}
      </select>
    </label>
  );
}

/**
 * On a thread of an outside agent: which one, that our data policy does not
 * govern it, and the kinds of its requests allowed unasked here ("always"),
 * with the button that takes them back.
 */
export function AgentNotice(props: {
  agent: string;
  alwaysAllowed?: readonly string[];
  onAskAgain?: () => void;
}): JSX.Element | null {
  const trans = useTrans();
  if (props.agent === OWN_AGENT) {
    return null;
  }
  const always = props.alwaysAllowed ?? [];
  return (
    <div className="cw-agent-notice" data-testid="cw-agent-notice">
      {trans.__(
        'Agent: %1. It talks to its own model under its own account and settings; Cellwright\'s data policy governs what Cellwright sends, not what this agent sends. Its file writes and permission requests still wait for your approval here.',
        props.agent
      )}
      {always.length > 0 && (
        <div className="cw-agent-always" data-testid="cw-agent-always">
          {trans.__('Allowed without asking in this thread: %1. ', always.join(', '))}
          <button type="button" className="cw-button" onClick={props.onAskAgain}>
            {trans.__('Ask again')}
          </button>
        </div>
      )}
    </div>
  );
}

/**
 * On an outside agent's card that offers "always": approve, and let that
 * kind of its requests run without asking in this thread (until "Ask again").
 */
export function AlwaysAllowButton(props: { model: PanelModel; kind: string }): JSX.Element {
  const { model, kind } = props;
  const trans = useTrans();
  const approveAlways = (): void => {
    const thread = model.thread;
    void model.decide('approve', { always: true }).then(done => {
      if (done) {
        thread?.allowAlways(kind);
      }
    });
  };
  return (
    <button
      type="button"
      className="cw-button"
      data-testid="cw-approve-always"
      onClick={approveAlways}
      disabled={model.deciding}
      title={trans.__('Approve, and allow %1 requests of this agent without asking in this thread', kind)}
    >
      {trans.__('Always allow')}
    </button>
  );
}
