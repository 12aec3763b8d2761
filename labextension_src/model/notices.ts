/** What the panel tells the user about the server before anything is asked. */
import type { TranslationBundle } from '@jupyterlab/translation';

import { Health } from '../contract.gen';

/**
 * Notices from the `GET health` answer: mismatched versions. (With no model
 * configured the panel shows the settings form instead: SettingsForm.tsx.)
 */
export function healthNotices(trans: TranslationBundle, health: Health | null, version: string): string[] {
  if (!health) {
    return [];
  }
  const notices: string[] = [];
  if (health.version && health.version !== version) {
    notices.push(
      trans.__(
        'Version mismatch: the Cellwright panel is %1 but the server extension is %2. Reinstall Cellwright and reload the page.',
        version,
        health.version
      )
    );
  }
  return notices;
}
