/**
 * MCP servers in the panel, as plain data: the settings form's JSON text of
 * `mcp_servers` (secrets stay masked: sent back masked, the server keeps
 * them), the Tools section's status line, and which servers the user turned
 * off per thread (sent with the next run as `disabled_mcp_servers`; the
 * server keeps it with the thread).
 */
import type { TranslationBundle } from '@jupyterlab/translation';

import { McpServerSetting, McpServerStatus, PublicConfig, PublicMcpServer, ToolOrigin } from '../contract.gen';
import { jsonSettingText, readJsonSetting } from './jsonSetting';

const SETTING_KEYS: readonly (keyof McpServerSetting)[] = [
  'command',
  'args',
  'env',
  'url',
  'headers',
  'start_timeout',
  'call_timeout',
  'disabled'
];

function asSetting(server: PublicMcpServer): McpServerSetting {
  const setting: Record<string, unknown> = {};
  for (const key of SETTING_KEYS) {
    const value = (server as unknown as Record<string, unknown>)[key];
    if (value !== undefined && value !== null && !(key === 'disabled' && value === false)) {
      setting[key] = value;
    }
  }
  return setting as McpServerSetting;
}

/** The setting as the form's text: JSON, env and header values masked. */
export function mcpServersText(config: PublicConfig | null): string {
  const servers = config?.mcp_servers ?? {};
  const shown: Record<string, McpServerSetting> = {};
  for (const [name, server] of Object.entries(servers)) {
    shown[name] = asSetting(server);
  }
  return jsonSettingText(shown);
}

/** The typed text as the setting, or what is wrong with it. */
export function parseMcpServers(
  trans: TranslationBundle,
  text: string
): { value: Record<string, McpServerSetting> | null; error: string | null } {
  return readJsonSetting<McpServerSetting>(text, {
    notJson: message => trans.__('MCP servers: not valid JSON (%1).', message),
    notObject: () =>
      trans.__('MCP servers: a JSON object, server name -> %1 or %2.', '{"command", "args", "env"}', '{"url", "headers"}')
  });
}

/** One line for a server's state in the Tools section. */
export function serverStatusText(trans: TranslationBundle, server: McpServerStatus): string {
  switch (server.status) {
    case 'connected':
      return trans._n('connected, %1 tool', 'connected, %1 tools', server.tools?.length ?? 0);
    case 'failed':
      return trans.__('failed: %1', server.error ?? trans.__('no reason given'));
    case 'not_started':
      return server.disabled
        ? trans.__('disabled in the settings')
        : trans.__('not started yet (starts with the next message)');
    default:
      return server.status;
  }
}

/** Servers turned off per thread, by thread id ('' for the thread the next message creates). */
export class DisabledServers {
  private _byThread = new Map<string, string[]>();
  private _changed = new Set<string>();

  get(threadId: string | null): readonly string[] {
    return this._byThread.get(threadId ?? '') ?? [];
  }

  set(threadId: string | null, name: string, disabled: boolean): void {
    const key = threadId ?? '';
    const rest = this.get(key).filter(n => n !== name);
    this._byThread.set(key, disabled ? [...rest, name] : rest);
    this._changed.add(key);
  }

  /** The list to send with a run of `threadId`, once after each change (the server keeps it). */
  take(threadId: string, wasNew: boolean): string[] | undefined {
    const key = wasNew && this._changed.has('') ? '' : threadId;
    if (!this._changed.has(key)) {
      return undefined;
    }
    const list = [...this.get(key)];
    this._changed.delete(key);
    if (key === '') {
      this._byThread.delete('');
      this._byThread.set(threadId, list);
    }
    return list;
  }
}

/** The approval card's line for a tool from outside: where it comes from, and what it claims. */
export function originText(trans: TranslationBundle, origin: ToolOrigin): string {
  if (origin.kind === 'mcp') {
    const line = trans.__('MCP server %1, tool %2', origin.server ?? '?', origin.tool);
    return origin.read_only_hint ? trans.__('%1 · the server says it is read-only (not verified)', line) : line;
  }
  let line = trans.__('Notebook function %1()', origin.tool);
  if (origin.file) {
    line += ` · ${origin.file}:${origin.line ?? '?'}`;
  }
  return origin.read_only_hint ? trans.__('%1 · declared read-only', line) : line;
}
