/**
 * "Verify" under a final answer: the bound notebook saved, then re-run from
 * the top in a fresh shadow kernel by the server (`POST verify`), and the
 * result as a badge: verified / differs at cell N / fails at cell N, with
 * the first problem and any hidden state as its explanation.
 */
import { errorMessage } from '../api';
import { VerifyResult } from '../contract.gen';
import { PanelModel } from './panel';

export type VerifyTone = 'ok' | 'warn' | 'error';

export interface IVerifyBadge {
  label: string;
  tone: VerifyTone;
  /** What went wrong first, hidden state and run order: the badge's explanation. */
  detail: string;
}

/** The badge of a verify result. */
export function verifyBadge(result: VerifyResult): IVerifyBadge {
  const at = result.at_cell ? ` at cell ${result.at_cell}` : '';
  const label = result.status === 'verified' ? 'verified' : `${result.status}${at}`;
  const tone: VerifyTone = result.status === 'verified' ? 'ok' : result.status === 'differs' ? 'warn' : 'error';
  const lines: string[] = [];
  const first = result.cells.find(c => c.number === result.at_cell);
  if (first?.detail) {
    lines.push(`Cell ${first.number}: ${first.detail}`);
  }
  if (result.hidden_state.length) {
    lines.push(`Hidden state (read before any cell defines it): ${result.hidden_state.slice(0, 20).join(', ')}`);
  }
  if (result.out_of_order.length) {
    lines.push(`Run out of order: cells ${result.out_of_order.slice(0, 20).join(', ')}`);
  }
  if (result.status === 'verified') {
    lines.push(`Re-ran ${result.cells.length} code cells in a fresh ${result.kernel_name} kernel in ${result.seconds.toFixed(1)} s.`);
  }
  return { label, tone, detail: lines.join('\n') };
}

/** Save the bound notebook (the server re-runs the file), then verify it: the badge, or an error badge. */
export async function verifyNotebook(model: PanelModel): Promise<IVerifyBadge> {
  const notebook = model.notebook;
  if (!notebook) {
    return { label: 'no notebook', tone: 'error', detail: 'Open the notebook to verify it.' };
  }
  try {
    await notebook.save?.();
    return verifyBadge(await model.api.verify({ path: notebook.path }));
  } catch (error) {
    return { label: 'could not verify', tone: 'error', detail: errorMessage(error) };
  }
}
