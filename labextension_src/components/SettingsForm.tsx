import * as React from 'react';
import { useEffect, useMemo, useState } from 'react';

import { SandboxHealth, ToolCalling } from '../contract.gen';
import {
  configUpdate,
  connectionTest,
  formError,
  formFromConfig,
  ISettingsForm,
  PanelModel,
  RISKY_TOOLS,
  sourceLabel
} from '../model';
import { endpointHasKey, endpointOf } from '../model/settings';
import { useSignal } from './hooks';
import { useTrans } from './translation';
import { TranslationBundle } from '@jupyterlab/translation';

let formCount = 0;

/** A connection check's name; an unknown check (a newer server) by its own name. */
function checkLabel(trans: TranslationBundle, name: string): string {
  switch (name) {
    case 'reachable':
      return trans.__('Endpoint reachable');
    case 'key':
      return trans.__('API key accepted');
    case 'model':
      return trans.__('Model available');
    case 'tools':
      return trans.__('Tool calling works');
    default:
      return name;
  }
}

function toolCallingOptions(trans: TranslationBundle): { value: ToolCalling; label: string }[] {
  return [
    { value: 'native', label: trans.__('Native (the endpoint’s tool calls)') },
    { value: 'prompt', label: trans.__('Prompt (tools described in the prompt)') },
    { value: 'auto', label: trans.__('Auto (native, prompt when the endpoint lacks it)') }
  ];
}

/** The two price fields and their labels. */
function priceFields(trans: TranslationBundle): ['price_prompt' | 'price_completion', string][] {
  return [
    ['price_prompt', trans.__('Prompt')],
    ['price_completion', trans.__('Completion')]
  ];
}

function Source(props: { text: string | null; id: string }): JSX.Element | null {
  return props.text ? (
    <span className="cw-settings-source" id={props.id}>
      {props.text}
    </span>
  ) : null;
}

/**
 * The model endpoint's settings: endpoint, model (from the endpoint's list
 * when it has one), a write-only API key, tool calling, auto-approve and
 * prices; each says where its value comes from. "Test connection" tries the
 * form's values before they are saved; Save writes them (PUT config).
 */
/** Whether looks (explore, read-only commands) run sandboxed here, as `GET health` says (issue 37). */
function SandboxStatus(props: { sandbox: SandboxHealth | null | undefined }): JSX.Element | null {
  const trans = useTrans();
  const { sandbox } = props;
  if (!sandbox) {
    return null;
  }
  return (
    <div className="cw-settings-field cw-settings-sandbox" data-testid="cw-sandbox-status">
      <span className="cw-label">{trans.__('Sandbox for looks at the data')}</span>
      <span className={sandbox.available ? 'cw-sandbox-on' : 'cw-sandbox-off'}>
        {sandbox.available
          ? trans.__(
              'Available (%1): explore and read-only commands run in a sandbox, without asking.',
              sandbox.mechanism ?? ''
            )
          : trans.__('Not available (%1): every look asks for approval.', sandbox.reason ?? '')}
      </span>
    </div>
  );
}

/** The MCP servers field's example: code, not text to translate. */
/**
 * A setting typed as JSON (MCP servers, outside agents): its secrets arrive
 * masked and are kept by the server when sent back so.
 */
function JsonSettingField(props: {
  id: string;
  className: string;
  label: string;
  value: string;
  placeholder: string;
  source: string | null;
  onChange: (value: string) => void;
}): JSX.Element {
  const trans = useTrans();
  return (
    <div className={`cw-settings-field ${props.className}`}>
      <label className="cw-label" htmlFor={props.id}>
        {props.label}
      </label>
      <textarea
        id={props.id}
        className={`cw-input cw-settings-json-text ${props.className}-text`}
        rows={4}
        spellCheck={false}
        value={props.value}
        placeholder={props.placeholder}
        aria-describedby={`${props.id}-source`}
        onChange={e => props.onChange(e.target.value)}
      />
      <Source id={`${props.id}-source`} text={props.source} />
      <span className="cw-settings-note">{trans.__('Secrets show as ******** and are kept when left so.')}</span>
    </div>
  );
}

const ACP_EXAMPLE = '{"Codex": {"command": "npx", "args": ["@zed-industries/codex-acp"], "env": {"OPENAI_API_KEY": "..."}}}';
const MCP_EXAMPLE = '{"github": {"command": "npx", "args": ["-y", "server-github"], "env": {"TOKEN": "..."}}}';

export function SettingsForm(props: { model: PanelModel }): JSX.Element {
  const trans = useTrans();
  const { model } = props;
  const settings = model.settings;
  useSignal(settings.changed);
  const config = settings.config;
  const [form, setForm] = useState<ISettingsForm>(() => formFromConfig(config));
  const [savedNote, setSavedNote] = useState(false);
  const ids = useMemo(() => `cw-settings-${++formCount}`, []);

  // The saved settings arrived (or were saved): the form shows them.
  useEffect(() => {
    setForm(formFromConfig(config));
  }, [config]);

  const set = <K extends keyof ISettingsForm>(key: K, value: ISettingsForm[K]): void => {
    setForm(f => ({ ...f, [key]: value }));
    setSavedNote(false);
    settings.clearReport();
  };

  const problem = formError(trans, form);
  const busy = settings.saving || settings.testing;
  const report = settings.report;
  // A key belongs to its endpoint: the status is the typed endpoint's, never the saved one's.
  const endpoint = endpointOf(form.base_url);
  const otherEndpoint = !!config && endpoint !== endpointOf(config.base_url);
  const keySet = endpointHasKey(config, form.base_url);
  const keptFor = config?.api_keys_set ?? [];

  const save = async (event: React.FormEvent): Promise<void> => {
    event.preventDefault();
    if (problem || busy) {
      return;
    }
    const ok = await settings.save(configUpdate(form, config));
    setSavedNote(ok);
    if (ok && !model.needsSetup) {
      // health is checked again by the model; the form stays open to show the result
    }
  };

  const toggleTool = (tool: string, on: boolean): void => {
    const rest = form.auto_approve.filter(t => t !== tool);
    set('auto_approve', on ? [...rest, tool] : rest);
  };

  return (
    <form
      className="cw-settings"
      aria-label={trans.__('Model settings')}
      data-testid="cw-settings"
      onSubmit={e => void save(e)}
    >
      <div className="cw-settings-head">
        <h3 className="cw-settings-title">{trans.__('Model settings')}</h3>
        <span className="cw-spacer" />
        {!model.needsSetup && (
          <button type="button" className="cw-button cw-button-small" onClick={() => model.openSettings(false)}>
            {trans.__('Close')}
          </button>
        )}
      </div>
      {model.needsSetup && (
        <p className="cw-settings-intro" data-testid="cw-setup-intro">
          {trans.__(
            'No language model is configured yet: enter an OpenAI-compatible endpoint and a model, test the connection, then save.'
          )}
        </p>
      )}
      {settings.loading && !config && (
        <div className="cw-muted" role="status">
          {trans.__('Reading the settings…')}
        </div>
      )}

      <div className="cw-settings-field">
        <label className="cw-label" htmlFor={`${ids}-url`}>
          {trans.__('Endpoint (base URL)')}
        </label>
        <input
          id={`${ids}-url`}
          className="cw-input"
          type="url"
          value={form.base_url}
          placeholder={trans.__('http://127.0.0.1:8000/v1')}
          aria-describedby={`${ids}-url-source`}
          onChange={e => set('base_url', e.target.value)}
        />
        <Source id={`${ids}-url-source`} text={sourceLabel(trans, config, 'base_url')} />
      </div>

      <div className="cw-settings-field">
        <label className="cw-label" htmlFor={`${ids}-model`}>
          {trans.__('Model')}
        </label>
        <input
          id={`${ids}-model`}
          className="cw-input"
          type="text"
          value={form.model}
          list={settings.models.length ? `${ids}-models` : undefined}
          placeholder={settings.models.length ? trans.__('Pick or type a model') : trans.__('The model’s name')}
          aria-describedby={`${ids}-model-source ${ids}-model-note`}
          onChange={e => set('model', e.target.value)}
        />
        {settings.models.length > 0 && (
          <datalist id={`${ids}-models`}>
            {settings.models.map(name => (
              <option key={name} value={name} />
            ))}
          </datalist>
        )}
        <Source id={`${ids}-model-source`} text={sourceLabel(trans, config, 'model')} />
        <span className="cw-settings-note" id={`${ids}-model-note`}>
          {settings.models.length
            ? trans._n('%1 model listed by the endpoint', '%1 models listed by the endpoint', settings.models.length)
            : settings.modelsError
              ? trans.__('No list of models (%1): type the name.', settings.modelsError)
              : ''}
        </span>
      </div>

      <div className="cw-settings-field">
        <label className="cw-label" htmlFor={`${ids}-key`}>
          {trans.__('API key')}
        </label>
        <span className="cw-settings-key-status" data-testid="cw-api-key-status" data-set={keySet ? 'true' : 'false'}>
          {keySet ? trans.__('set') : trans.__('not set')}
        </span>
        <input
          id={`${ids}-key`}
          className="cw-input"
          type="password"
          autoComplete="new-password"
          value={form.api_key}
          placeholder={keySet ? trans.__('Type a new key to replace it') : trans.__('Empty for local servers')}
          aria-describedby={`${ids}-key-source ${ids}-key-note`}
          onChange={e => set('api_key', e.target.value)}
        />
        <Source id={`${ids}-key-source`} text={otherEndpoint ? null : sourceLabel(trans, config, 'api_key')} />
        <span className="cw-settings-note" id={`${ids}-key-note`} data-testid="cw-api-key-note">
          {otherEndpoint && !keySet && !form.api_key
            ? trans.__('No key for %1: none is sent there (a key stays with the endpoint it was given for). ', endpoint)
            : trans.__('The key of %1; a key is never sent to another endpoint. ', endpoint)}
          {keptFor.length > 0 && trans.__('Keys kept for: %1.', keptFor.join(', '))}
        </span>
      </div>

      <div className="cw-settings-field">
        <label className="cw-label" htmlFor={`${ids}-tools`}>
          {trans.__('Tool calling')}
        </label>
        <select
          id={`${ids}-tools`}
          className="cw-select"
          value={form.tool_calling}
          aria-describedby={`${ids}-tools-source`}
          onChange={e => set('tool_calling', e.target.value as ToolCalling)}
        >
          {toolCallingOptions(trans).map(option => (
            <option key={option.value} value={option.value}>
              {option.label}
            </option>
          ))}
        </select>
        <Source id={`${ids}-tools-source`} text={sourceLabel(trans, config, 'tool_calling')} />
      </div>

      <fieldset className="cw-settings-field cw-settings-approve">
        <legend className="cw-label">{trans.__('Run without asking')}</legend>
        {RISKY_TOOLS.map(tool => (
          <label key={tool} className="cw-checkbox">
            <input
              type="checkbox"
              checked={form.auto_approve.includes(tool)}
              onChange={e => toggleTool(tool, e.target.checked)}
            />
            <code>{tool}</code>
          </label>
        ))}
        <Source id={`${ids}-approve-source`} text={sourceLabel(trans, config, 'auto_approve')} />
      </fieldset>

      <SandboxStatus sandbox={model.health?.sandbox} />

      <fieldset className="cw-settings-field cw-settings-prices">
        <legend className="cw-label">{trans.__('Prices for this model (optional, per million tokens)')}</legend>
        {priceFields(trans).map(([key, label]) => (
          <label className="cw-settings-price" key={key}>
            <span>{label}</span>
            <input
              className="cw-input"
              inputMode="decimal"
              value={form[key]}
              aria-label={trans.__('%1 price per million tokens', label)}
              onChange={e => set(key, e.target.value)}
            />
          </label>
        ))}
        <Source id={`${ids}-prices-source`} text={sourceLabel(trans, config, 'prices')} />
      </fieldset>

      <JsonSettingField
        id={`${ids}-mcp`}
        className="cw-settings-mcp"
        label={trans.__('MCP servers (JSON)')}
        value={form.mcp_servers}
        placeholder={MCP_EXAMPLE}
        source={sourceLabel(trans, config, 'mcp_servers')}
        onChange={value => set('mcp_servers', value)}
      />
      <JsonSettingField
        id={`${ids}-acp`}
        className="cw-settings-acp"
        label={trans.__('Outside agents, ACP (JSON)')}
        value={form.acp_agents}
        placeholder={ACP_EXAMPLE}
        source={sourceLabel(trans, config, 'acp_agents')}
        onChange={value => set('acp_agents', value)}
      />

      {problem && (
        <div className="cw-settings-error" role="alert">
          {problem}
        </div>
      )}
      {settings.error && (
        <div className="cw-settings-error" role="alert" data-testid="cw-settings-error">
          {settings.error}
        </div>
      )}

      {report && (
        <ul
          className={`cw-settings-report${report.ok ? ' cw-mod-ok' : ' cw-mod-failed'}`}
          data-testid="cw-connection-report"
          data-ok={report.ok ? 'true' : 'false'}
          aria-label={trans.__('Connection test')}
        >
          {report.checks.map(check => (
            <li key={check.name} className={`cw-check cw-check-${check.ok ? 'ok' : 'failed'}`} data-check={check.name}>
              <span className="cw-check-icon" aria-hidden="true">
                {check.ok ? '✓' : '✕'}
              </span>
              <span className="cw-visually-hidden">{check.ok ? trans.__('passed: ') : trans.__('failed: ')}</span>
              <span className="cw-check-name">{checkLabel(trans, check.name)}</span>
              {check.message && <span className="cw-check-message">{` — ${check.message}`}</span>}
            </li>
          ))}
          <li className="cw-check-summary" role="status">
            {report.ok ? trans.__('The connection works.') : trans.__('The connection does not work yet.')}
          </li>
        </ul>
      )}
      {savedNote && !settings.error && (
        <div className="cw-settings-saved" role="status" data-testid="cw-settings-saved">
          {trans.__('Saved: used from the next message on.')}
        </div>
      )}

      <div className="cw-buttons cw-settings-buttons">
        <button
          type="button"
          className="cw-button"
          disabled={busy || !!problem}
          aria-busy={settings.testing}
          onClick={() => void settings.test(connectionTest(form))}
        >
          {settings.testing ? trans.__('Testing…') : trans.__('Test connection')}
        </button>
        <button type="submit" className="cw-button cw-button-primary" disabled={busy || !!problem} aria-busy={settings.saving}>
          {trans.__('Save')}
        </button>
      </div>
    </form>
  );
}
