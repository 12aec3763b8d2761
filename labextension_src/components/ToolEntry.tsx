import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import * as React from 'react';

import { isStopped, IToolItem, ToolItemStatus } from '../model';
import { agentLabel } from '../tokens';
import { visibleString } from '../visibleControls';
import { CommandOutput } from './CommandOutput';
import { CellOutputs } from './CellOutputs';
import { TranslationBundle } from '@jupyterlab/translation';
import { useTrans } from './translation';
import { VisibleText } from './VisibleText';

/** "Result: <summary>", under a tool entry or a sub-agent's task. */
export function ToolResultLine(props: { className: string; summary: string }): JSX.Element {
  const trans = useTrans();
  return (
    <div className={props.className}>
      <span className="cw-label">{trans.__('Result: ')}</span>
      <span className="cw-tool-result-text">{props.summary}</span>
    </div>
  );
}

function statusLabel(trans: TranslationBundle, status: ToolItemStatus): string {
  switch (status) {
    case 'running':
      return trans.__('running');
    case 'awaiting_approval':
      return trans.__('awaiting approval');
    case 'ok':
      return trans.__('done');
    case 'error':
      return trans.__('error');
    case 'rejected':
      return trans.__('rejected');
    case 'cancelled':
      return trans.__('stopped');
    default:
      return status;
  }
}

/** The verb a step's line opens with ("Run cell", "Shell"...); the tool's own name otherwise. */
export function stepVerb(trans: TranslationBundle, name: string): string {
  switch (name) {
    case 'run_cell':
      return trans.__('Run cell');
    case 'edit_cell':
      return trans.__('Edit cell');
    case 'add_markdown':
      return trans.__('Add Markdown');
    case 'execute_command':
      return trans.__('Shell');
    case 'write_file':
      return trans.__('Write');
    case 'edit_file':
      return trans.__('Edit');
    case 'read_file':
      return trans.__('Read');
    case 'list_files':
      return trans.__('List');
    case 'search_workspace':
    case 'search_notebooks':
      return trans.__('Search');
    case 'write_todos':
      return trans.__('Plan');
    case 'check_resource':
      return trans.__('Check');
    case 'load_skill':
      return trans.__('Load skill');
    case 'sql_query':
      return trans.__('SQL');
    case 'restart_kernel':
      return trans.__('Restart kernel');
    case 'read_notebook':
      return trans.__('Read notebook');
    default:
      return name;
  }
}

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
export function shortArgs(trans: TranslationBundle, name: string, args: Record<string, any>): string {
  if (!args) {
    return '';
  }
  switch (name) {
    case 'run_cell':
      return firstLine(args.description) || firstLine(args.code);
    case 'execute_command':
      return firstLine(args.command);
    case 'edit_cell':
      return trans.__('cell %1: %2', firstLine(args.cell_id, 40), firstLine(args.source));
    case 'check_resource':
      return [...(args.files ?? []), ...(args.dataframes ?? [])].join(', ');
    default: {
      const value =
        args.path ?? args.pattern ?? args.name ?? args.notebook_path ?? args.content ?? args.code;
      return firstLine(value) || firstLine(JSON.stringify(args));
    }
  }
}

function formatDuration(trans: TranslationBundle, ms: number | null): string {
  if (ms === null || ms === undefined) {
    return '';
  }
  return ms < 1000 ? trans.__('%1 ms', Math.round(ms)) : trans.__('%1 s', (ms / 1000).toFixed(1));
}

/** The status as the entry shows it: a call the user's Stop ended reads "stopped". */
export function toolStatusLabel(item: IToolItem, trans: TranslationBundle): string {
  if (isStopped(item)) {
    return trans.__('stopped');
  }
  if (item.status === 'running' && item.waitingForKernel) {
    return trans.__('waiting for the kernel…');
  }
  return statusLabel(trans, item.status);
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
  /** What the model call that asked for this step sent (the call's details). */
  sent?: React.ReactNode;
  /** The step's menu: on the step's line, before its outputs, in reading (and focus) order. */
  menu?: React.ReactNode;
}): JSX.Element {
  const { item, rendermime } = props;
  const trans = useTrans();
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
          <span className="cw-tool-name" title={item.name}>
            {stepVerb(trans, item.name)}
          </span>
          <span className="cw-tool-args">{shortArgs(trans, item.name, item.args)}</span>
          <span className="cw-tool-status" data-testid="cw-tool-status">
            <span className="cw-visually-hidden">, </span>
            {toolStatusLabel(item, trans)}
            {item.executionCount !== null ? ` · [${item.executionCount}]` : ''}
            {item.durationMs !== null ? ` · ${formatDuration(trans, item.durationMs)}` : ''}
          </span>
        </summary>
        <div className="cw-tool-body">
          {props.showAgent && (
            <div className="cw-tool-agent">
              <span className="cw-label">{trans.__('Agent: ')}</span>
              {agentLabel(trans, item.agent)}
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
          {props.sent}
        </div>
      </details>
      {props.menu}
      {item.outputs.length > 0 && !isCell && (
        <CommandOutput
          outputs={item.outputs}
          rendermime={rendermime}
          label={item.name}
          running={item.status === 'running'}
        />
      )}
      {item.outputs.length > 0 && isCell && (
        <CellOutputs outputs={item.outputs} rendermime={rendermime} label={trans.__('Outputs of %1', item.name)} />
      )}
      {item.summary && item.status !== 'ok' && (item.outputs.length === 0 || !isCell) && (
        <div className="cw-tool-inline-result">{firstLine(item.summary, 200)}</div>
      )}
    </div>
  );
}
