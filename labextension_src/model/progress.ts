/** How a long cell's progress reads (issue 38): durations as people say them. */
import type { TranslationBundle } from '@jupyterlab/translation';

/** "1 h 02 min", "3 min 05 s", "42 s". */
export function formatSeconds(trans: TranslationBundle, seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  const twoDigits = (n: number): string => String(n).padStart(2, '0');
  if (s >= 3600) {
    return trans.__('%1 h %2 min', Math.floor(s / 3600), twoDigits(Math.floor((s % 3600) / 60)));
  }
  if (s >= 60) {
    return trans.__('%1 min %2 s', Math.floor(s / 60), twoDigits(s % 60));
  }
  return trans.__('%1 s', s);
}
