import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';
import { useState } from 'react';

import { ExploreState, exploreState, IToolItem, PanelModel, runAsCell, runnableCode } from '../model';
import { agentLabel } from '../tokens';
import { OutputView } from './OutputView';
import { IStepAction } from './StepMenu';
import { firstLine, shortArgs, STATUS_ICON } from './ToolEntry';
import { useTrans } from './translation';
import { VisibleText } from './VisibleText';

function stateLabel(trans: TranslationBundle, state: ExploreState): string {
  switch (state) {
    case 'running':
      return trans.__('exploring…');
    case 'awaiting_approval':
      return trans.__('explore (awaiting approval: no sandbox here)');
    case 'sandboxed':
      return trans.__('explored (sandboxed)');
    case 'unsandboxed':
      return trans.__('explored (approved, not sandboxed)');
    case 'rejected':
      return trans.__('explore rejected');
    case 'stopped':
      return trans.__('explore stopped');
    default:
      return trans.__('explore failed');
  }
}

/**
 * An explore step (issue 37): one compact line saying how it ran, its code
 * on demand, and its outputs as a scratchpad that is plainly not a notebook
 * cell (nothing of it is in the notebook or the kernel), with what the
 * sandbox blocked. "Run as cell" (useRunAsCell, in the step's menu)
 * proposes the code as a real cell, which then waits for the usual approval.
 */
export function ExploreStep(props: {
  item: IToolItem;
  rendermime: IRenderMimeRegistry;
  showAgent: boolean;
  /** The step's menu: on the step's line, before the scratchpad, in reading (and focus) order. */
  menu?: React.ReactNode;
}): JSX.Element {
  const { item, rendermime } = props;
  const trans = useTrans();
  const state = exploreState(item);
  const code = typeof item.args?.code === 'string' ? item.args.code : '';
  const blocked = item.exploration?.blocked ?? [];
  return (
    <div
      className={`cw-tool cw-explore cw-tool-${item.status} cw-explore-${state}`}
      data-testid="cw-explore"
      data-tool-name={item.name}
      data-tool-status={item.status}
      data-tool-call-id={item.id}
      data-explore-state={state}
      role="group"
      aria-label={trans.__('Exploration, not in the notebook')}
    >
      <details className="cw-tool-details">
        <summary className="cw-tool-summary">
          <span className="cw-tool-icon" aria-hidden="true">
            {state === 'stopped' ? STATUS_ICON.cancelled : STATUS_ICON[item.status]}
          </span>
          <span className="cw-explore-label" data-testid="cw-explore-label">
            {stateLabel(trans, state)}
          </span>
          <span className="cw-tool-args">{shortArgs(trans, item.name, item.args)}</span>
        </summary>
        <div className="cw-tool-body">
          {props.showAgent && (
            <div className="cw-tool-agent">
              <span className="cw-label">{trans.__('Agent: ')}</span>
              {agentLabel(trans, item.agent)}
            </div>
          )}
          {code && (
            <pre className="cw-code" data-testid="cw-explore-code">
              <VisibleText text={code} code />
            </pre>
          )}
        </div>
      </details>
      {props.menu}
      {item.outputs.length > 0 && (
        <div
          className="cw-explore-scratchpad"
          role="group"
          aria-label={trans.__('Scratchpad of the exploration')}
          data-testid="cw-explore-outputs"
        >
          <div className="cw-explore-scratchpad-note">
            {trans.__('Scratchpad: ran in a copy of the kernel, not in the notebook')}
          </div>
          {item.outputs.map((output, i) => (
            <OutputView key={i} rendermime={rendermime} output={output} />
          ))}
        </div>
      )}
      {blocked.length > 0 && (
        <div className="cw-explore-blocked" data-testid="cw-explore-blocked">
          {trans.__('Blocked by the sandbox: %1', blocked.join('; '))}
        </div>
      )}
      {!item.exploration && item.summary && item.status !== 'ok' && (
        <div className="cw-tool-inline-result">{firstLine(item.summary, 200)}</div>
      )}
    </div>
  );
}

/**
 * "Run as cell" for an explore step that ran: an item of the step's menu, like the other steps'
 * actions; under the step, why the server refused, if it did.
 */
export function useRunAsCell(model: PanelModel, item: IToolItem): { actions: IStepAction[]; view: JSX.Element | null } {
  const trans = useTrans();
  const [busy, setBusy] = useState(false);
  const [message, setMessage] = useState<string | null>(null);
  if (runnableCode(item) === null) {
    return { actions: [], view: null };
  }
  const asCell = async (): Promise<void> => {
    setBusy(true);
    setMessage(null);
    try {
      setMessage(await runAsCell(model, item));
    } finally {
      setBusy(false);
    }
  };
  const action: IStepAction = {
    label: trans.__('Run as cell'),
    testId: 'cw-run-as-cell',
    title: trans.__('Add this code to the notebook as a cell; it runs in the kernel once you approve it'),
    disabled: busy || model.running || !!model.pendingApproval,
    onSelect: () => void asCell()
  };
  const view = message ? (
    <div className="cw-explore-message" role="status" data-testid="cw-run-as-cell-message">
      <VisibleText text={message} />
    </div>
  ) : null;
  return { actions: [action], view };
}
