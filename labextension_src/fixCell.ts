/**
 * "Fix with Cellwright": the message that asks the agent to fix a cell's
 * error in place. It is the "ask about this cell" block (cellContext.ts:
 * the cell's code and outputs, ANSI-free) with the traceback cut to its
 * last lines, after a request that names the cell's nbformat id, so that
 * the agent answers with `edit_cell` on that cell rather than a new cell.
 * Pure: the bounds and the wording are unit-tested without a notebook.
 */
import { cellContext, ICellSnapshot, stripAnsi } from './cellContext';

/** The traceback lines the message keeps (its end: where the error is). */
export const TRACEBACK_LINES = 60;

/** Enough room for TRACEBACK_LINES of a wide traceback and a little other output. */
const FIX_OUTPUT_LIMIT = 12_000;

type Output = Record<string, any>;

/** True for an nbformat error output. */
export function isErrorOutput(output: Output | null | undefined): boolean {
  return output?.output_type === 'error';
}

/** True when any of the outputs is an error. */
export function hasError(outputs: readonly Output[]): boolean {
  return outputs.some(isErrorOutput);
}

/** An error's traceback without ANSI escapes, its last `maxLines` lines, with a note of what was cut. */
export function tracebackTail(output: Output, maxLines = TRACEBACK_LINES): string {
  const trace = Array.isArray(output.traceback) ? output.traceback.join('\n') : '';
  const text = stripAnsi(trace || `${output.ename ?? 'Error'}: ${output.evalue ?? ''}`);
  const lines = text.replace(/\n+$/, '').split('\n');
  if (lines.length <= maxLines) {
    return lines.join('\n');
  }
  const omitted = lines.length - maxLines;
  return [`[... ${omitted} traceback lines omitted ...]`, ...lines.slice(-maxLines)].join('\n');
}

/** "ZeroDivisionError: division by zero": the exception line of an error output. */
export function exceptionLine(output: Output): string {
  const name = stripAnsi(String(output.ename ?? 'Error'));
  const value = stripAnsi(String(output.evalue ?? ''));
  return value ? `${name}: ${value}` : name;
}

/** The cell as the fix message shows it: errors as their traceback's tail. */
function withShortTracebacks(outputs: readonly Output[]): Output[] {
  return outputs.map(output =>
    isErrorOutput(output)
      ? { output_type: 'stream', name: 'stderr', text: tracebackTail(output) }
      : output
  );
}

/** The message that asks the agent to fix cell `cellId` of `notebookPath`. */
export function fixMessage(cell: ICellSnapshot & { id: string }, notebookPath: string): string {
  const error = (cell.outputs ?? []).find(isErrorOutput);
  const what = error ? `\`${exceptionLine(error)}\`` : 'an error';
  const request =
    `Fix the error in cell ${cell.index + 1} (cell id \`${cell.id}\`): it raised ${what}. ` +
    `Change that cell with edit_cell (cell_id "${cell.id}") rather than adding a new cell; ` +
    'say in one or two sentences what was wrong.';
  const block = cellContext(
    { ...cell, outputs: withShortTracebacks(cell.outputs ?? []) },
    notebookPath,
    FIX_OUTPUT_LIMIT
  ).block;
  return `${request}\n\n${block}`;
}
