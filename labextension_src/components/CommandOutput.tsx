import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import * as React from 'react';
import { useLayoutEffect, useRef, useState } from 'react';

import { NbOutput } from '../contract.gen';
import { OutputView } from './OutputView';
import { useTrans } from './translation';

/** Lines shown while the output is folded (the newest ones). */
export const COMMAND_TAIL_LINES = 20;

// CSI / OSC escape sequences (colors, cursor moves) of terminal programs.
// eslint-disable-next-line no-control-regex
const ANSI = /\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]/g;

/**
 * Terminal text as a plain text view shows it: escape sequences dropped and
 * a carriage return overwriting its line (progress bars keep their last state).
 */
export function terminalText(text: string): string {
  return text
    .replace(ANSI, '')
    .replace(/\r\n/g, '\n')
    .split('\n')
    .map(line => {
      const cut = line.lastIndexOf('\r');
      return cut === -1 ? line : line.slice(cut + 1);
    })
    .join('\n');
}

interface ISegment {
  /** "stdout", "stderr", or null for an output that is not a stream. */
  stream: string | null;
  text: string;
  output: NbOutput;
}

function countLines(text: string): number {
  if (!text) {
    return 0;
  }
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    if (text.charCodeAt(i) === 10) {
      n++;
    }
  }
  return text.endsWith('\n') ? n : n + 1;
}

/** Keep the last `lines` lines of the stream segments (others are kept). */
function tail(segments: ISegment[], lines: number): ISegment[] {
  const out: ISegment[] = [];
  let left = lines;
  for (let i = segments.length - 1; i >= 0; i--) {
    const segment = segments[i];
    if (segment.stream === null) {
      if (left > 0) {
        out.unshift(segment);
      }
      continue;
    }
    if (left <= 0) {
      break;
    }
    const count = countLines(segment.text);
    if (count <= left) {
      out.unshift(segment);
      left -= count;
      continue;
    }
    const body = segment.text.endsWith('\n') ? segment.text.slice(0, -1) : segment.text;
    const parts = body.split('\n');
    const kept = parts.slice(parts.length - left).join('\n') + (segment.text.endsWith('\n') ? '\n' : '');
    out.unshift({ ...segment, text: kept });
    left = 0;
  }
  return out;
}

/**
 * The live output of a tool that is not a notebook cell (execute_command's
 * stdout and stderr): monospace, stderr set apart, folded to its last lines.
 * It is only shown here: it never goes into the notebook.
 */
export function CommandOutput(props: {
  outputs: NbOutput[];
  rendermime: IRenderMimeRegistry;
  /** Names the region for assistive technology, e.g. "execute_command". */
  label: string;
  running: boolean;
}): JSX.Element {
  const { outputs, rendermime, label, running } = props;
  const trans = useTrans();
  const [showAll, setShowAll] = useState(false);
  const pre = useRef<HTMLPreElement>(null);

  const segments: ISegment[] = outputs.map(output =>
    output.output_type === 'stream'
      ? {
          stream: output.name === 'stderr' ? 'stderr' : 'stdout',
          text: terminalText(Array.isArray(output.text) ? output.text.join('') : String(output.text ?? '')),
          output
        }
      : { stream: null, text: '', output }
  );
  const total = segments.reduce((n, s) => n + countLines(s.text), 0);
  const folded = !showAll && total > COMMAND_TAIL_LINES;
  const shown = folded ? tail(segments, COMMAND_TAIL_LINES) : segments;
  const hidden = total - shown.reduce((n, s) => n + countLines(s.text), 0);

  // Folded, or while it streams, keep the newest line in view.
  useLayoutEffect(() => {
    const node = pre.current;
    if (node && (running || !showAll)) {
      node.scrollTop = node.scrollHeight;
    }
  });

  const streams = shown.filter(s => s.stream !== null);
  const others = shown.filter(s => s.stream === null);
  return (
    <div
      className="cw-command-output"
      data-testid="cw-command-output"
      role="group"
      aria-label={trans.__('Output of %1', label)}
    >
      {folded && hidden > 0 && (
        <div className="cw-command-output-hidden">
          {trans._n('%1 earlier line hidden', '%1 earlier lines hidden', hidden)}
        </div>
      )}
      {streams.length > 0 && (
        <pre ref={pre} className="cw-terminal">
          {streams.map((segment, i) => (
            <span
              key={i}
              className={`cw-stream cw-stream-${segment.stream}`}
              data-stream={segment.stream ?? undefined}
            >
              {segment.stream === 'stderr' && <span className="cw-visually-hidden">{trans.__('stderr: ')}</span>}
              {segment.text}
            </span>
          ))}
        </pre>
      )}
      {others.map((segment, i) => (
        <OutputView key={`o${i}`} rendermime={rendermime} output={segment.output} />
      ))}
      {total > COMMAND_TAIL_LINES && (
        <button
          type="button"
          className="cw-button cw-button-small cw-command-output-toggle"
          aria-expanded={showAll}
          onClick={() => setShowAll(!showAll)}
        >
          {showAll ? trans.__('Show less') : trans.__('Show all (%1 lines)', total)}
        </button>
      )}
    </div>
  );
}
