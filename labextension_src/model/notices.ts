/** What the panel tells the user about the server before anything is asked. */
import { Health } from '../contract.gen';

/**
 * Notices from the `GET health` answer: mismatched versions. (With no model
 * configured the panel shows the settings form instead: SettingsForm.tsx.)
 */
export function healthNotices(health: Health | null, version: string): string[] {
  if (!health) {
    return [];
  }
  const notices: string[] = [];
  if (health.version && health.version !== version) {
    notices.push(
      `Version mismatch: the Cellwright panel is ${version} but the server ` +
        `extension is ${health.version}. Reinstall Cellwright and reload the page.`
    );
  }
  return notices;
}
