/**
 * The ids the frontend exposes and the names the panel gives to wire values.
 * Every type that crosses the wire (events, route bodies, tool arguments) is
 * in contract.gen.ts; the panel imports those from there.
 *
 * EVENT_TYPES and TOOL_NAMES come from contract.gen.ts, generated from the server's
 * models by scripts/generate_contract.py (a Python test fails when it is stale).
 */

import type { TranslationBundle } from '@jupyterlab/translation';

import { EVENT_TYPES, Mode, TOOL_NAMES } from './contract.gen';
export { EVENT_TYPES, TOOL_NAMES };

export type EventType = (typeof EVENT_TYPES)[number];
export type ToolName = (typeof TOOL_NAMES)[number];

/** The frontend plugin's id, also the settings schema id (schema/plugin.json). */
export const PLUGIN_ID = 'cellwright:plugin';

/** The side panel's widget id. */
export const PANEL_ID = 'cellwright-panel';

/** URL prefix of every route, under the server's base_url. */
export const API_NAMESPACE = 'cellwright/api';

/** Command ids. */
export namespace CommandIDs {
  export const open = 'cellwright:open';
  export const newThread = 'cellwright:new-thread';
  export const stop = 'cellwright:stop';
  export const askAboutCell = 'cellwright:ask-about-cell';
  export const fixCell = 'cellwright:fix-cell';
  export const settings = 'cellwright:settings';
  export const showCell = 'cellwright:show-cell';
}

/** The modes the panel's switch offers, in its order. */
export const MODES: readonly Mode[] = ['single', 'multi'];

/**
 * The `agent` field of events: "main" in single mode; in multi mode the
 * planner and the sub-agents it delegates to with the `task` tool.
 */
function knownAgentLabel(trans: TranslationBundle, agent: string): string | null {
  switch (agent) {
    case 'main':
      return trans.__('Agent');
    case 'planner':
      return trans.__('Planner');
    case 'python_developer':
      return trans.__('Python developer');
    case 'researcher':
      return trans.__('Researcher');
    default:
      return null;
  }
}

/** A readable name for an agent ("python_developer" -> "Python developer"); another agent's own name as it is. */
export function agentLabel(trans: TranslationBundle, agent: string | null | undefined): string {
  const known = knownAgentLabel(trans, agent || 'main');
  if (known || !agent) {
    return known ?? '';
  }
  const words = agent.replace(/[_-]+/g, ' ').trim();
  return words ? words.charAt(0).toUpperCase() + words.slice(1) : agent;
}
