/**
 * Issue 14's panel logic: the settings form's MCP text (masked secrets go
 * back as they came), bad JSON refused before sending, the status line, and
 * the per-thread switches sent once with the next run; issue 40's outside
 * agents' text, the same way.
 */
import * as assert from 'node:assert/strict';
import { test } from 'node:test';

import { PublicConfig } from '../contract.gen';
import { DisabledServers, mcpServersText, originText, parseMcpServers, serverStatusText } from '../model/mcpServers';
import { acpAgentsText } from '../model/acpAgents';
import { configUpdate, formError, formFromConfig } from '../model/settingsForm';
import { trans } from './helpers';

const config = {
  model: 'm',
  base_url: 'http://x/v1',
  api_key_set: false,
  tool_calling: 'native',
  auto_approve: [],
  prices: {},
  mcp_servers: {
    gh: { transport: 'stdio', command: 'npx', args: ['srv'], env: { TOKEN: '********' }, start_timeout: 20, call_timeout: 120, disabled: false }
  },
  acp_agents: { Codex: { command: 'npx', args: ['@zed-industries/codex-acp'], env: { OPENAI_API_KEY: '********' } } }
} as unknown as PublicConfig;

test('the MCP text shows masked secrets and sends nothing when untouched', () => {
  const form = formFromConfig(config);
  assert.deepEqual(JSON.parse(form.mcp_servers), {
    gh: { command: 'npx', args: ['srv'], env: { TOKEN: '********' }, start_timeout: 20, call_timeout: 120 }
  });
  assert.equal(configUpdate(form, config).mcp_servers, undefined);
  const edited = { ...form, mcp_servers: JSON.stringify({ web: { url: 'http://h/mcp' } }) };
  assert.deepEqual(configUpdate(edited, config).mcp_servers, { web: { url: 'http://h/mcp' } });
  assert.match(formError(trans, { ...form, mcp_servers: '{"gh": ' }) ?? '', /not valid JSON/);
  assert.match(formError(trans, { ...form, mcp_servers: '[1]' }) ?? '', /JSON object/);
  assert.equal(mcpServersText(null), '');
  assert.deepEqual(parseMcpServers(trans, '  ').value, {});
});

test('status lines and per-thread switches', () => {
  const base = { name: 's', transport: 'stdio', start_timeout: 1, call_timeout: 1, disabled: false } as const;
  assert.equal(serverStatusText(trans, { ...base, status: 'connected', tools: [{ name: 'a', description: '' }] }), 'connected, 1 tool');
  assert.equal(serverStatusText(trans, { ...base, status: 'failed', error: 'did not start within 2 s' }), 'failed: did not start within 2 s');
  const off = new DisabledServers();
  off.set(null, 'web', true); // before the thread exists
  assert.deepEqual(off.take('t1', true), ['web']);
  assert.equal(off.take('t1', false), undefined); // sent once: the server keeps it
  assert.deepEqual(off.get('t1'), ['web']);
  off.set('t1', 'web', false);
  assert.deepEqual(off.take('t1', false), []);
});

test('the approval card says where a tool comes from, and that a read-only claim is not verified', () => {
  assert.equal(
    originText(trans, { kind: 'mcp', server: 'gh', tool: 'search', read_only_hint: true }),
    'MCP server gh, tool search · the server says it is read-only (not verified)'
  );
  assert.equal(
    originText(trans, { kind: 'notebook', tool: 'top', file: '/tmp/ipykernel_1/123.py', line: 4 }),
    'Notebook function top() · /tmp/ipykernel_1/123.py:4'
  );
});

test('outside agents: masked env values go back as they came, only when the text changed', () => {
  const form = formFromConfig(config);
  assert.deepEqual(JSON.parse(form.acp_agents), config.acp_agents);
  assert.equal(configUpdate(form, config).acp_agents, undefined);
  const gemini = { command: 'gemini', args: ['--experimental-acp'] };
  const edited = { ...form, acp_agents: JSON.stringify({ ...config.acp_agents, Gemini: gemini }) };
  assert.deepEqual(configUpdate(edited, config).acp_agents, { ...config.acp_agents, Gemini: gemini });
  assert.equal(configUpdate(edited, config).mcp_servers, undefined);
  assert.match(formError(trans, { ...form, acp_agents: '{"Codex": ' }) ?? '', /Outside agents: not valid JSON/);
  assert.match(formError(trans, { ...form, acp_agents: '"npx"' }) ?? '', /Outside agents: a JSON object/);
  assert.equal(acpAgentsText(null), '');
  assert.deepEqual(configUpdate({ ...form, acp_agents: ' ' }, config).acp_agents, {}); // emptied: none left
});
