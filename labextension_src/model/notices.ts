/** What the panel tells the user about the server before anything is asked. */
import { Health } from '../contract.gen';

/** Notices from the `GET health` answer: no model configured, mismatched versions. */
export function healthNotices(health: Health | null, version: string): string[] {
  if (!health) {
    return [];
  }
  const notices: string[] = [];
  if (health.llm_configured === false) {
    notices.push(
      'No language model is configured. Set model, base_url and api_key with ' +
        '`PUT cellwright/api/config`: they apply from the next message on. Or set ' +
        'OPENAI_BASE_URL, OPENAI_API_KEY and CELLWRIGHT_MODEL in the environment of ' +
        '`jupyter lab`, or c.Cellwright.base_url, c.Cellwright.api_key and ' +
        'c.Cellwright.model in jupyter_server_config.py: those are read when JupyterLab starts.'
    );
  }
  if (health.version && health.version !== version) {
    notices.push(
      `Version mismatch: the Cellwright panel is ${version} but the server ` +
        `extension is ${health.version}. Reinstall Cellwright and reload the page.`
    );
  }
  return notices;
}
