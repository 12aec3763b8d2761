/**
 * What an approval card shows of a proposed call: a file change as a
 * unified diff, and the linter's diagnostics of a cell's code.
 */
import * as React from 'react';

import { IDiagnostic } from '../tokens';

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
  const lines = classifyDiff(props.diff);
  const added = lines.filter(l => l.kind === 'add').length;
  const removed = lines.filter(l => l.kind === 'del').length;
  return (
    <div className="cw-diff-view" role="group" aria-label="Proposed changes">
      <div className="cw-diff-stat">
        <span className="cw-diff-stat-add">{`+${added}`}</span>{' '}
        <span className="cw-diff-stat-del">{`−${removed}`}</span>
        <span className="cw-visually-hidden">{` (${added} lines added, ${removed} removed)`}</span>
      </div>
      <pre className="cw-diff" data-testid="cw-diff">
        <span className="cw-diff-lines">
          {lines.map((line, i) => (
            <span key={i} className={`cw-diff-line cw-diff-${line.kind}`} data-kind={line.kind}>
              {SPOKEN_DIFF[line.kind] && (
                <span className="cw-visually-hidden">{SPOKEN_DIFF[line.kind]}</span>
              )}
              {line.text + '\n'}
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

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/** "2 errors, 1 warning". */
export function diagnosticsSummary(diagnostics: IDiagnostic[]): string {
  const counts = new Map<string, number>();
  for (const d of diagnostics) {
    const severity = SEVERITY_ORDER.includes(d.severity) ? d.severity : 'information';
    counts.set(severity, (counts.get(severity) ?? 0) + 1);
  }
  const words: Record<string, string> = {
    error: 'error',
    warning: 'warning',
    information: 'note',
    hint: 'hint'
  };
  return SEVERITY_ORDER.filter(s => counts.has(s))
    .map(s => plural(counts.get(s)!, words[s]))
    .join(', ');
}

/** "line 3: undefined name 'x' (F821)". */
export function diagnosticText(d: IDiagnostic): string {
  return `line ${d.line}: ${d.message}${d.code ? ` (${d.code})` : ''}`;
}

/** The linter's findings on a proposed cell, one compact line each. */
export function DiagnosticsList(props: { diagnostics: IDiagnostic[] }): JSX.Element | null {
  const { diagnostics } = props;
  if (!diagnostics.length) {
    return null;
  }
  return (
    <div className="cw-diagnostics" data-testid="cw-diagnostics" role="group" aria-label="Diagnostics">
      <div className="cw-diagnostics-title">
        <span className="cw-label">Diagnostics: </span>
        {diagnosticsSummary(diagnostics)}
      </div>
      <ul className="cw-diagnostics-list">
        {diagnostics.map((d, i) => {
          const severity = SEVERITY_ORDER.includes(d.severity) ? d.severity : 'information';
          return (
            <li
              key={i}
              className={`cw-diagnostic cw-diagnostic-${severity}`}
              data-severity={severity}
              title={`line ${d.line}, column ${d.column}${d.source ? ` · ${d.source}` : ''}`}
            >
              <span className="cw-diagnostic-icon" aria-hidden="true">
                {SEVERITY_ICON[severity]}
              </span>
              <span className="cw-visually-hidden">{`${severity}: `}</span>
              <span className="cw-diagnostic-text">{diagnosticText(d)}</span>
            </li>
          );
        })}
      </ul>
    </div>
  );
}
