/**
 * What an approval card shows of a proposed call: the code, the shell
 * command with everything that shapes its run, a file change as a unified
 * diff, the linter's diagnostics, and any other argument. Every string goes
 * through VisibleText: a hidden control character is shown, never obeyed.
 */
import * as React from 'react';

import { ApprovalRequest, Diagnostic } from '../contract.gen';
import { countHiddenControls } from '../visibleControls';
import { VisibleText } from './VisibleText';
import { useTrans } from './translation';
import { TranslationBundle } from '@jupyterlab/translation';

// ---------------------------------------------------------------- arguments

/** Arguments a tool's own preview shows; the others are listed after it. */
export const PREVIEWED_ARGS: Record<string, readonly string[]> = {
  run_cell: ['code', 'description'],
  execute_command: ['command', 'cwd', 'stdin', 'timeout']
};

function asText(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value, null, 2) ?? String(value);
}

/** The arguments no preview shows, as JSON (null when there are none). */
export function OtherArgs(props: {
  name: string;
  args: Record<string, unknown>;
  /** What the card shows elsewhere (default: the tool's preview). */
  shown?: readonly string[];
}): JSX.Element | null {
  const shown = props.shown ?? PREVIEWED_ARGS[props.name] ?? [];
  const trans = useTrans();
  const rest = Object.fromEntries(Object.entries(props.args).filter(([key]) => !shown.includes(key)));
  if (!Object.keys(rest).length) {
    return null;
  }
  return (
    <>
      {shown.length > 0 && <div className="cw-label">{trans.__('Other arguments')}</div>}
      <pre className="cw-code cw-approval-args" data-testid="cw-approval-args">
        <VisibleText text={JSON.stringify(rest, null, 2)} />
      </pre>
    </>
  );
}

/** The shell command line: what the approval runs (the args), else the server's preview. */
export function commandOf(pending: ApprovalRequest): string {
  const command = pending.args?.command;
  return typeof command === 'string' ? command : String(pending.command ?? command ?? '');
}

/** The shell command, its folder, its input and its time limit. */
export function CommandPreview(props: { pending: ApprovalRequest }): JSX.Element {
  const trans = useTrans();
  const { pending } = props;
  const args = pending.args ?? {};
  const cwd = asText(pending.cwd ?? args.cwd ?? '.') || '.';
  const root = cwd === '.' || cwd === './';
  const hasStdin = args.stdin !== undefined && args.stdin !== null && args.stdin !== '';
  const hasTimeout = args.timeout !== undefined && args.timeout !== null;
  return (
    <div className="cw-approval-command">
      <div className="cw-label">{trans.__('Command')}</div>
      <pre className="cw-code" data-testid="cw-approval-command">
        <code>
          <VisibleText text={commandOf(pending)} />
        </code>
      </pre>
      <div className="cw-approval-cwd">
        <span className="cw-label">{trans.__('Working directory: ')}</span>
        <span className="cw-path" data-testid="cw-approval-cwd">
          <VisibleText text={cwd} />
        </span>
        {root && <span className="cw-muted">{' ' + trans.__('(the workspace root)')}</span>}
      </div>
      {hasStdin && (
        <>
          <div className="cw-label">{trans.__('Input (stdin)')}</div>
          <pre className="cw-code" data-testid="cw-approval-stdin">
            <VisibleText text={asText(args.stdin)} />
          </pre>
        </>
      )}
      <div data-testid="cw-approval-timeout">
        <span className="cw-label">{trans.__('Timeout: ')}</span>
        {hasTimeout ? (
          <VisibleText text={typeof args.timeout === 'number' ? `${args.timeout} s` : asText(args.timeout)} />
        ) : (
          <span className="cw-muted">{trans.__("the server's default")}</span>
        )}
      </div>
    </div>
  );
}

/** A cell's code exactly as the kernel will read it. */
export function CodePreview(props: { code: unknown; description?: unknown }): JSX.Element {
  return (
    <>
      {typeof props.description === 'string' && props.description && (
        <div className="cw-approval-description cw-muted">
          <VisibleText text={props.description} />
        </div>
      )}
      <pre className="cw-code cw-approval-code" data-testid="cw-approval-code">
        <code>
          <VisibleText text={asText(props.code ?? '')} code />
        </code>
      </pre>
    </>
  );
}

/** A warning when the arguments hold characters that show nothing on their own. */
export function HiddenControlsWarning(props: { value: unknown }): JSX.Element | null {
  const trans = useTrans();
  const n = countHiddenControls(props.value);
  if (!n) {
    return null;
  }
  return (
    <div className="cw-approval-warning" data-testid="cw-hidden-controls" role="alert">
      <span className="cw-approval-warning-icon" aria-hidden="true">
        ⚠
      </span>
      <span>
        {n === 1
          ? trans.__('1 hidden control character, shown as a boxed marker: check what it does before approving.')
          : trans.__('%1 hidden control characters, shown as boxed markers: check what they do before approving.', n)}
      </span>
    </div>
  );
}

// ---------------------------------------------------------------- diff

export type DiffLineKind = 'add' | 'del' | 'hunk' | 'meta' | 'context';

/** Classify the lines of a unified diff (file headers only before the first hunk). */
export function classifyDiff(diff: string): { kind: DiffLineKind; text: string }[] {
  const lines = diff.replace(/\n$/, '').split('\n');
  let inHunk = false;
  return lines.map(text => {
    let kind: DiffLineKind;
    if (text.startsWith('@@')) {
      inHunk = true;
      kind = 'hunk';
    } else if (!inHunk) {
      kind = 'meta'; // "--- a/x", "+++ b/x", "diff ...", a note before the diff
    } else if (text.startsWith('+')) {
      kind = 'add';
    } else if (text.startsWith('-')) {
      kind = 'del';
    } else if (text.startsWith('\\')) {
      kind = 'meta'; // "\ No newline at end of file"
    } else {
      kind = 'context';
    }
    return { kind, text };
  });
}

const SPOKEN_DIFF: Partial<Record<DiffLineKind, string>> = {
  add: 'added: ',
  del: 'removed: '
};

/** A unified diff with added and removed lines set apart. */
export function DiffView(props: { diff: string }): JSX.Element {
  const trans = useTrans();
  const lines = classifyDiff(props.diff);
  const added = lines.filter(l => l.kind === 'add').length;
  const removed = lines.filter(l => l.kind === 'del').length;
  return (
    <div className="cw-diff-view" role="group" aria-label={trans.__('Proposed changes')}>
      <div className="cw-diff-stat">
        <span className="cw-diff-stat-add">{`+${added}`}</span>{' '}
        <span className="cw-diff-stat-del">{`−${removed}`}</span>
        <span className="cw-visually-hidden">{' ' + trans.__('(%1 lines added, %2 removed)', added, removed)}</span>
      </div>
      <pre className="cw-diff" data-testid="cw-diff">
        <span className="cw-diff-lines">
          {lines.map((line, i) => (
            <span key={i} className={`cw-diff-line cw-diff-${line.kind}`} data-kind={line.kind}>
              {SPOKEN_DIFF[line.kind] && (
                <span className="cw-visually-hidden">{SPOKEN_DIFF[line.kind]}</span>
              )}
              <VisibleText text={line.text} />
              {'\n'}
            </span>
          ))}
        </span>
      </pre>
    </div>
  );
}

// ---------------------------------------------------------------- diagnostics

const SEVERITY_ICON: Record<string, string> = {
  error: '✕',
  warning: '⚠',
  information: 'ℹ',
  hint: '•'
};

const SEVERITY_ORDER = ['error', 'warning', 'information', 'hint'];

/** "2 errors", "1 warning": a count of one severity. */
function severityCount(trans: TranslationBundle, severity: string, n: number): string {
  switch (severity) {
    case 'error':
      return trans._n('%1 error', '%1 errors', n);
    case 'warning':
      return trans._n('%1 warning', '%1 warnings', n);
    case 'hint':
      return trans._n('%1 hint', '%1 hints', n);
    default:
      return trans._n('%1 note', '%1 notes', n);
  }
}

/** A severity's name, as a screen reader says it before the finding. */
function severityName(trans: TranslationBundle, severity: string): string {
  switch (severity) {
    case 'error':
      return trans.__('error');
    case 'warning':
      return trans.__('warning');
    case 'hint':
      return trans.__('hint');
    default:
      return trans.__('note');
  }
}

/** "2 errors, 1 warning". */
export function diagnosticsSummary(trans: TranslationBundle, diagnostics: Diagnostic[]): string {
  const counts = new Map<string, number>();
  for (const d of diagnostics) {
    const severity = SEVERITY_ORDER.includes(d.severity) ? d.severity : 'information';
    counts.set(severity, (counts.get(severity) ?? 0) + 1);
  }
  return SEVERITY_ORDER.filter(s => counts.has(s))
    .map(s => severityCount(trans, s, counts.get(s)!))
    .join(trans.__(', '));
}

/** "line 3: undefined name 'x' (F821)". */
export function diagnosticText(trans: TranslationBundle, d: Diagnostic): string {
  const text = trans.__('line %1: %2', d.line, d.message);
  return d.code ? trans.__('%1 (%2)', text, d.code) : text;
}

/** The linter's findings on a proposed cell, one compact line each. */
export function DiagnosticsList(props: { diagnostics: Diagnostic[] }): JSX.Element | null {
  const trans = useTrans();
  const { diagnostics } = props;
  if (!diagnostics.length) {
    return null;
  }
  return (
    <div className="cw-diagnostics" data-testid="cw-diagnostics" role="group" aria-label={trans.__('Diagnostics')}>
      <div className="cw-diagnostics-title">
        <span className="cw-label">{trans.__('Diagnostics: ')}</span>
        {diagnosticsSummary(trans, diagnostics)}
      </div>
      <ul className="cw-diagnostics-list">
        {diagnostics.map((d, i) => {
          const severity = SEVERITY_ORDER.includes(d.severity) ? d.severity : 'information';
          return (
            <li
              key={i}
              className={`cw-diagnostic cw-diagnostic-${severity}`}
              data-severity={severity}
              title={trans.__('line %1, column %2', d.line, d.column) + (d.source ? ` · ${d.source}` : '')}
            >
              <span className="cw-diagnostic-icon" aria-hidden="true">
                {SEVERITY_ICON[severity]}
              </span>
              <span className="cw-visually-hidden">{trans.__('%1: ', severityName(trans, severity))}</span>
              <span className="cw-diagnostic-text">{diagnosticText(trans, d)}</span>
            </li>
          );
        })}
      </ul>
    </div>
  );
}
