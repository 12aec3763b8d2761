import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import * as React from 'react';

import { isStopped, IToolItem, ToolItemStatus } from '../model';
import { agentLabel } from '../tokens';
import { visibleString } from '../visibleControls';
import { CommandOutput } from './CommandOutput';
import { CellOutputs } from './CellOutputs';
import { hasNotebookCell, showCell } from '../showCell';
import { VisibleText } from './VisibleText';

/** "Result: <summary>", under a tool entry or a sub-agent's task. */
export function ToolResultLine(props: { className: string; summary: string }): JSX.Element {
  return (
    <div className={props.className}>
      <span className="cw-label">Result: </span>
      <span className="cw-tool-result-text">{props.summary}</span>
    </div>
  );
}

const STATUS_LABEL: Record<ToolItemStatus, string> = {
  running: 'running',
  awaiting_approval: 'awaiting approval',
  ok: 'done',
  error: 'error',
  rejected: 'rejected',
  cancelled: 'stopped'
};

export const STATUS_ICON: Record<ToolItemStatus, string> = {
  running: '◌',
  awaiting_approval: '?',
  ok: '✓',
  error: '✕',
  rejected: '⊘',
  cancelled: '■'
};

export function firstLine(text: unknown, max = 80): string {
  if (typeof text !== 'string') {
    return '';
  }
  const line = visibleString(text.trim().split('\n')[0] ?? '');
  return line.length > max ? line.slice(0, max - 1) + '…' : line;
}

/** A one-line summary of a tool call's arguments. */
export function shortArgs(name: string, args: Record<string, any>): string {
  if (!args) {
    return '';
  }
  switch (name) {
    case 'run_cell':
      return firstLine(args.description) || firstLine(args.code);
    case 'execute_command':
      return firstLine(args.command);
    case 'edit_cell':
      return `cell ${firstLine(args.cell_id, 40)}: ${firstLine(args.source)}`;
    case 'check_resource':
      return [...(args.files ?? []), ...(args.dataframes ?? [])].join(', ');
    default: {
      const value =
        args.path ?? args.pattern ?? args.name ?? args.notebook_path ?? args.content ?? args.code;
      return firstLine(value) || firstLine(JSON.stringify(args));
    }
  }
}

function formatDuration(ms: number | null): string {
  if (ms === null || ms === undefined) {
    return '';
  }
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

/** The status as the entry shows it: a call the user's Stop ended reads "stopped". */
export function toolStatusLabel(item: IToolItem): string {
  if (isStopped(item)) {
    return 'stopped';
  }
  if (item.status === 'running' && item.waitingForKernel) {
    return 'waiting for the kernel…';
  }
  return STATUS_LABEL[item.status] ?? item.status;
}

/**
 * A compact, expandable entry of the tool-call timeline. A notebook cell's
 * outputs show under it as the notebook renders them; another tool's live
 * output (execute_command) shows as terminal text.
 */
export function ToolEntry(props: {
  item: IToolItem;
  rendermime: IRenderMimeRegistry;
  showAgent: boolean;
}): JSX.Element {
  const { item, rendermime } = props;
  const stopped = isStopped(item);
  const isCell = item.isCell || item.name === 'run_cell' || item.name === 'edit_cell';
  const code =
    item.code ??
    (item.name === 'run_cell' ? item.args.code : item.name === 'edit_cell' ? item.args.source : null);
  const description = typeof item.args?.description === 'string' ? item.args.description : null;
  const otherArgs = Object.fromEntries(
    Object.entries(item.args ?? {}).filter(
      ([k]) =>
        !((k === 'code' || (k === 'source' && item.name === 'edit_cell')) && code) &&
        !(k === 'description' && description !== null)
    )
  );
  return (
    <div
      className={`cw-tool cw-tool-${item.status}${stopped ? ' cw-tool-stopped' : ''}`}
      data-testid="cw-tool"
      data-tool-name={item.name}
      data-tool-status={item.status}
      data-waiting-for-kernel={item.waitingForKernel ? 'true' : undefined}
    >
      <details className="cw-tool-details">
        <summary className="cw-tool-summary">
          <span className="cw-tool-icon" aria-hidden="true">
            {stopped ? STATUS_ICON.cancelled : STATUS_ICON[item.status]}
          </span>
          <span className="cw-tool-name">{item.name}</span>
          <span className="cw-tool-args">{shortArgs(item.name, item.args)}</span>
          <span className="cw-tool-status" data-testid="cw-tool-status">
            {toolStatusLabel(item)}
            {item.executionCount !== null ? ` · [${item.executionCount}]` : ''}
            {item.durationMs !== null ? ` · ${formatDuration(item.durationMs)}` : ''}
          </span>
        </summary>
        <div className="cw-tool-body">
          {props.showAgent && (
            <div className="cw-tool-agent">
              <span className="cw-label">Agent: </span>
              {agentLabel(item.agent)}
            </div>
          )}
          {description && <div className="cw-tool-description">{description}</div>}
          {code && (
            <pre className="cw-code">
              <VisibleText text={String(code)} code />
            </pre>
          )}
          {Object.keys(otherArgs).length > 0 && (
            <pre className="cw-tool-argsfull">
              <VisibleText text={JSON.stringify(otherArgs, null, 2)} />
            </pre>
          )}
          {item.summary && <ToolResultLine className="cw-tool-result" summary={item.summary} />}
        </div>
      </details>
      {hasNotebookCell(item) && (
        <button
          type="button"
          className="cw-show-cell jp-mod-styled"
          data-testid="cw-show-in-notebook"
          data-tool-call-id={item.id}
          title="Select this cell in the notebook and scroll to it"
          onClick={() => showCell(item.id)}
        >
          Show in notebook
        </button>
      )}
      {item.outputs.length > 0 && !isCell && (
        <CommandOutput
          outputs={item.outputs}
          rendermime={rendermime}
          label={item.name}
          running={item.status === 'running'}
        />
      )}
      {item.outputs.length > 0 && isCell && (
        <CellOutputs outputs={item.outputs} rendermime={rendermime} label={`Outputs of ${item.name}`} />
      )}
      {item.summary && item.status !== 'ok' && (item.outputs.length === 0 || !isCell) && (
        <div className="cw-tool-inline-result">{firstLine(item.summary, 200)}</div>
      )}
    </div>
  );
}
