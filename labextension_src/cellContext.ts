/**
 * "Ask Cellwright about this cell": the cell's code and a digest of its
 * outputs as a block the message carries. Pure (nbformat JSON in, text
 * out) so that the bounds are unit-tested without a notebook.
 *
 * The block goes inside the message, after the user's question: the server
 * needs no new field, a replayed thread shows what was asked, and the model
 * sees the cell exactly as the user did.
 */

export const CODE_LIMIT = 4000;
export const OUTPUT_LIMIT = 2000;

/** The parts of a cell the digest reads (nbformat v4 shapes). */
export interface ICellSnapshot {
  cellType: string;
  source: string;
  /** nbformat output dicts; absent for markdown and raw cells. */
  outputs?: readonly Record<string, any>[];
  executionCount?: number | null;
  /** Position in the notebook, from 0. */
  index: number;
}

/** The attachment the composer shows and sends. */
export interface ICellContext {
  /** Short, for the composer's chip: "Cell 3 [5] of analysis.ipynb". */
  label: string;
  /** The Markdown block appended to the message. */
  block: string;
}

// CSI and OSC sequences as IPython's colored tracebacks emit them.
// eslint-disable-next-line no-control-regex
const ANSI_RE = /\u001b\[[0-?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)|\u001b[@-Z\\-_]/g;

export function stripAnsi(text: string): string {
  return text.replace(ANSI_RE, '');
}

function joined(value: unknown): string {
  if (Array.isArray(value)) {
    return value.join('');
  }
  return typeof value === 'string' ? value : '';
}

/** Keep the head and the tail of a long text, saying how much was left out. */
export function clip(text: string, limit: number): string {
  if (text.length <= limit) {
    return text;
  }
  const head = Math.floor(limit * 0.7);
  const tail = limit - head;
  const omitted = text.length - head - tail;
  return `${text.slice(0, head)}\n[... ${omitted} characters omitted ...]\n${text.slice(text.length - tail)}`;
}

/** One output as text: streams and text/plain as they are, errors without ANSI, images as a marker. */
export function outputText(output: Record<string, any>): string {
  switch (output?.output_type) {
    case 'stream':
      return joined(output.text);
    case 'error': {
      const trace = Array.isArray(output.traceback) ? output.traceback.join('\n') : '';
      return stripAnsi(trace || `${output.ename ?? 'Error'}: ${output.evalue ?? ''}`);
    }
    case 'execute_result':
    case 'display_data': {
      const data = (output.data ?? {}) as Record<string, unknown>;
      const parts: string[] = [];
      if (Object.keys(data).some(mime => mime.startsWith('image/'))) {
        parts.push('[image output]');
      }
      if (data['text/plain'] !== undefined) {
        parts.push(joined(data['text/plain']));
      } else if (!parts.length && Object.keys(data).length) {
        parts.push(`[${Object.keys(data)[0]} output]`);
      }
      return parts.join('\n');
    }
    default:
      return '';
  }
}

/** A fence longer than any backtick run inside, so the block cannot be closed from inside. */
function fence(text: string): string {
  let longest = 2;
  for (const run of text.match(/`+/g) ?? []) {
    longest = Math.max(longest, run.length);
  }
  return '`'.repeat(longest + 1);
}

function fenced(text: string, lang = ''): string {
  const f = fence(text);
  return `${f}${lang}\n${text.replace(/\n$/, '')}\n${f}`;
}

function baseName(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

/**
 * The context block for one cell of the notebook at `notebookPath`;
 * `outputLimit` bounds the outputs' digest (characters).
 */
export function cellContext(
  cell: ICellSnapshot,
  notebookPath: string,
  outputLimit = OUTPUT_LIMIT
): ICellContext {
  const count = cell.executionCount ? ` [${cell.executionCount}]` : '';
  const cellName = `Cell ${cell.index + 1}${count}`;
  const label = `${cellName} of ${baseName(notebookPath) || 'the notebook'}`;
  const lang = cell.cellType === 'code' ? 'python' : cell.cellType === 'markdown' ? 'markdown' : '';
  const heading = `#### ${cellName} of \`${notebookPath}\``;
  const lines = [heading, '', fenced(clip(cell.source, CODE_LIMIT), lang)];
  if (cell.cellType === 'code') {
    const digest = (cell.outputs ?? [])
      .map(output => outputText(output).replace(/\n+$/, ''))
      .filter(t => t.trim())
      .join('\n');
    lines.push('', 'Outputs:', '');
    lines.push(digest ? fenced(clip(digest, outputLimit)) : '(no outputs)');
  }
  return { label, block: lines.join('\n') };
}

/** The message sent: the user's question, then the cell block. */
export function withCellContext(question: string, context: ICellContext | null): string {
  const q = question.trim();
  if (!context) {
    return q;
  }
  return q ? `${q}\n\n${context.block}` : `About this cell:\n\n${context.block}`;
}

const BLOCK_RE = /(?:^|\n\n)(#### (Cell \d+(?: \[\d+\])?) of `[^`\n]*`\n[\s\S]*)$/;

/**
 * A sent message split back into the question and the cell block (for the
 * conversation to fold the block away); `block` is null when there is none.
 */
export function splitCellContext(message: string): { question: string; block: string | null; label: string } {
  const match = BLOCK_RE.exec(message);
  if (!match) {
    return { question: message, block: null, label: '' };
  }
  const question = message.slice(0, match.index).replace(/^About this cell:$/, '');
  return { question, block: match[1], label: match[2] };
}
