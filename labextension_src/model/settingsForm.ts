/**
 * The settings form as plain data: its fields from `GET config`, and the
 * `PUT config` and `POST config/test` bodies from what the user typed.
 * The API key is write-only: the form starts with it empty, sends it only
 * when the user typed one, and never has the saved one to show.
 */
import type { TranslationBundle } from '@jupyterlab/translation';

import {
  AcpAgentSetting,
  ASKING_TOOLS,
  ConfigUpdate,
  McpServerSetting,
  ConnectionTest,
  Price,
  PublicConfig,
  ToolCalling
} from '../contract.gen';
import { acpAgentsText, parseAcpAgents } from './acpAgents';
import { parseJsonSetting } from './jsonSetting';
import { mcpServersText, parseMcpServers } from './mcpServers';

/** Tools that ask before they run, the ones auto-approve can wave through: the registry's
 * ToolSpec.needs_approval, generated into the contract (never a list kept here). */
export const RISKY_TOOLS: readonly string[] = ASKING_TOOLS;

export interface ISettingsForm {
  base_url: string;
  model: string;
  /** A new key to save; empty keeps the saved one. */
  api_key: string;
  tool_calling: ToolCalling;
  auto_approve: string[];
  /** Per million tokens, as typed; empty for no price. */
  price_prompt: string;
  price_completion: string;
  /** `mcp_servers` as JSON text; env and header values masked. */
  mcp_servers: string;
  /** `acp_agents` (outside agents) as JSON text; env values masked. */
  acp_agents: string;
}

/** Where a setting's value comes from, as the form says it. */
export function sourceLabel(trans: TranslationBundle, config: PublicConfig | null, name: string): string | null {
  const source = config?.sources?.[name];
  if (!source) {
    return null;
  }
  switch (source) {
    case 'settings':
      return trans.__('saved here');
    case 'config':
      return trans.__('from a Jupyter config file');
    case 'environment':
      return trans.__('from the environment');
    case 'default':
      return trans.__('default');
  }
}

function priceText(value: number | undefined): string {
  return typeof value === 'number' && Number.isFinite(value) ? String(value) : '';
}

export function formFromConfig(config: PublicConfig | null): ISettingsForm {
  const model = config?.model ?? '';
  const price = config?.prices?.[model];
  return {
    base_url: config?.base_url ?? '',
    model,
    api_key: '',
    tool_calling: config?.tool_calling ?? 'native',
    auto_approve: [...(config?.auto_approve ?? [])],
    price_prompt: priceText(price?.prompt),
    price_completion: priceText(price?.completion),
    mcp_servers: mcpServersText(config),
    acp_agents: acpAgentsText(config)
  };
}

/** A typed price: a number >= 0, or null for an empty field; NaN when it is not a number. */
export function parsePrice(text: string): number | null {
  const trimmed = text.trim();
  if (!trimmed) {
    return null;
  }
  const value = Number(trimmed);
  return Number.isFinite(value) && value >= 0 ? value : NaN;
}

/** What is wrong with the form, or null. */
export function formError(trans: TranslationBundle, form: ISettingsForm): string | null {
  const prompt = parsePrice(form.price_prompt);
  const completion = parsePrice(form.price_completion);
  if (Number.isNaN(prompt) || Number.isNaN(completion)) {
    return trans.__('Prices are numbers (per million tokens), or empty.');
  }
  if ((prompt === null) !== (completion === null)) {
    return trans.__('Give both prices, or neither.');
  }
  const jsonError = parseMcpServers(trans, form.mcp_servers).error ?? parseAcpAgents(trans, form.acp_agents).error;
  if (jsonError) {
    return jsonError;
  }
  if (form.base_url.trim() && !/^https?:\/\//i.test(form.base_url.trim())) {
    return trans.__('The endpoint is an %1 or %2 URL, e.g. %3.', 'http://', 'https://', 'http://127.0.0.1:8000/v1');
  }
  return null;
}

/** The `PUT config` body: what differs from the saved settings (the key only when typed). */
export function configUpdate(form: ISettingsForm, config: PublicConfig | null): ConfigUpdate {
  const saved = formFromConfig(config);
  const update: ConfigUpdate = {};
  const baseUrl = form.base_url.trim();
  const model = form.model.trim();
  if (baseUrl !== saved.base_url) {
    update.base_url = baseUrl;
  }
  if (model !== saved.model) {
    update.model = model;
  }
  if (form.api_key) {
    update.api_key = form.api_key;
  }
  if (form.tool_calling !== saved.tool_calling) {
    update.tool_calling = form.tool_calling;
  }
  const approve = [...form.auto_approve].sort();
  if (JSON.stringify(approve) !== JSON.stringify([...saved.auto_approve].sort())) {
    update.auto_approve = approve;
  }
  const prompt = parsePrice(form.price_prompt);
  const completion = parsePrice(form.price_completion);
  const prices: Record<string, Price> = { ...(config?.prices ?? {}) };
  const before = JSON.stringify(prices);
  if (model) {
    if (prompt !== null && completion !== null && !Number.isNaN(prompt) && !Number.isNaN(completion)) {
      prices[model] = { prompt, completion };
    } else if (prompt === null && completion === null) {
      delete prices[model];
    }
  }
  if (JSON.stringify(prices) !== before) {
    update.prices = prices;
  }
  const servers = changedJson<McpServerSetting>(form.mcp_servers, saved.mcp_servers);
  if (servers) {
    update.mcp_servers = servers;
  }
  const agents = changedJson<AcpAgentSetting>(form.acp_agents, saved.acp_agents);
  if (agents) {
    update.acp_agents = agents;
  }
  return update;
}

/** A JSON setting's typed text as the setting, when it differs from the saved text (else nothing to send). */
function changedJson<T>(text: string, savedText: string): Record<string, T> | null {
  return text.trim() !== savedText.trim() ? parseJsonSetting<T>(text).value : null;
}

/** The `POST config/test` body: the form's endpoint, model and (typed) key. */
export function connectionTest(form: ISettingsForm): ConnectionTest {
  return {
    ...(form.base_url.trim() ? { base_url: form.base_url.trim() } : {}),
    ...(form.model.trim() ? { model: form.model.trim() } : {}),
    ...(form.api_key ? { api_key: form.api_key } : {})
  };
}
