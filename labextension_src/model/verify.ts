/**
 * "Verify" under a final answer: the bound notebook saved, then re-run from
 * the top in a fresh shadow kernel by the server (`POST verify`), and the
 * result as a badge: verified / differs at cell N / fails at cell N, with
 * the first problem and any hidden state as its explanation.
 */
import type { TranslationBundle } from '@jupyterlab/translation';

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
export function verifyBadge(trans: TranslationBundle, result: VerifyResult): IVerifyBadge {
  const label = statusLabel(trans, result.status, result.at_cell ?? null);
  const tone: VerifyTone = result.status === 'verified' ? 'ok' : result.status === 'differs' ? 'warn' : 'error';
  const lines: string[] = [];
  const first = result.cells.find(c => c.number === result.at_cell);
  if (first?.detail) {
    lines.push(trans.__('Cell %1: %2', first.number, first.detail));
  }
  if (result.hidden_state.length) {
    lines.push(trans.__('Hidden state (read before any cell defines it): %1', result.hidden_state.slice(0, 20).join(', ')));
  }
  if (result.out_of_order.length) {
    lines.push(trans.__('Run out of order: cells %1', result.out_of_order.slice(0, 20).join(', ')));
  }
  if (result.status === 'verified') {
    lines.push(
      trans._n(
        'Re-ran %1 code cell in a fresh %2 kernel in %3 s.',
        'Re-ran %1 code cells in a fresh %2 kernel in %3 s.',
        result.cells.length,
        result.kernel_name,
        result.seconds.toFixed(1)
      )
    );
  }
  return { label, tone, detail: lines.join('\n') };
}

/** "verified", "differs at cell 3", "fails at cell 2". */
function statusLabel(trans: TranslationBundle, status: VerifyResult['status'], atCell: number | null): string {
  switch (status) {
    case 'verified':
      return trans.__('verified');
    case 'differs':
      return atCell ? trans.__('differs at cell %1', atCell) : trans.__('differs');
    case 'fails':
      return atCell ? trans.__('fails at cell %1', atCell) : trans.__('fails');
  }
}

/** Save the bound notebook (the server re-runs the file), then verify it: the badge, or an error badge. */
export async function verifyNotebook(trans: TranslationBundle, model: PanelModel): Promise<IVerifyBadge> {
  const notebook = model.notebook;
  if (!notebook) {
    return { label: trans.__('no notebook'), tone: 'error', detail: trans.__('Open the notebook to verify it.') };
  }
  try {
    await notebook.save?.();
    return verifyBadge(trans, await model.api.verify({ path: notebook.path }));
  } catch (error) {
    return { label: trans.__('could not verify'), tone: 'error', detail: errorMessage(trans, error) };
  }
}
