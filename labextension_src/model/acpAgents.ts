/**
 * Outside agents hosted over ACP (issue 40) in the settings form: the JSON
 * text of `acp_agents`, name -> {command, args, env}. Env values arrive
 * masked; sent back masked, the server keeps them for the same name, command
 * and args (a renamed or re-pointed agent needs them typed again).
 */
import type { TranslationBundle } from '@jupyterlab/translation';

import { AcpAgentSetting, PublicConfig } from '../contract.gen';
import { jsonSettingText, readJsonSetting } from './jsonSetting';

/** The setting as the form's text: JSON, env values masked as the server sent them. */
export function acpAgentsText(config: PublicConfig | null): string {
  return jsonSettingText(config?.acp_agents ?? {});
}

/** The typed text as the setting, or what is wrong with it. */
export function parseAcpAgents(
  trans: TranslationBundle,
  text: string
): { value: Record<string, AcpAgentSetting> | null; error: string | null } {
  return readJsonSetting<AcpAgentSetting>(text, {
    notJson: message => trans.__('Outside agents: not valid JSON (%1).', message),
    notObject: () => trans.__('Outside agents: a JSON object, agent name -> %1.', '{"command", "args", "env"}')
  });
}
