import * as React from 'react';
import { useCallback, useEffect, useState } from 'react';

import { errorMessage } from '../api';
import { McpServerStatus, NotebookTools } from '../contract.gen';
import { PanelModel } from '../model';
import { serverStatusText } from '../model/mcpServers';
import { useTrans } from './translation';

/**
 * The Tools section: the configured MCP servers with their status (connected,
 * failed and why, not started) and tools, each with a switch for the current
 * thread. Text from servers is rendered as plain text (React escapes it).
 */
export function ToolsSection(props: { model: PanelModel }): JSX.Element {
  const trans = useTrans();
  const { model } = props;
  const [servers, setServers] = useState<McpServerStatus[] | null>(null);
  const [notebookTools, setNotebookTools] = useState<NotebookTools | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [, redraw] = useState(0);
  const threadId = model.thread?.threadId ?? null;

  const notebook = model.notebook;
  const load = useCallback(async () => {
    try {
      const answer = await model.api.mcpServers();
      setServers(answer.servers ?? []);
      setError(null);
    } catch (e) {
      setError(errorMessage(trans, e));
    }
    if (notebook) {
      const kernelId = notebook.kernelId();
      try {
        setNotebookTools(
          await model.api.notebookTools({ notebook_path: notebook.path, ...(kernelId ? { kernel_id: kernelId } : {}) })
        );
      } catch {
        setNotebookTools(null);
      }
    }
  }, [model, notebook]);

  useEffect(() => {
    void load();
  }, [load]);

  const toggle = (name: string, on: boolean): void => {
    model.disabledServers.set(threadId, name, !on);
    redraw(n => n + 1);
  };
  const disabled = model.disabledServers.get(threadId);

  return (
    <section className="cw-tools" aria-label={trans.__('Tools')} data-testid="cw-tools">
      <div className="cw-settings-head">
        <h3 className="cw-settings-title">{trans.__('Tools from MCP servers')}</h3>
        <span className="cw-spacer" />
        <button type="button" className="cw-button cw-button-small" onClick={() => void load()}>
          {trans.__('Refresh')}
        </button>
      </div>
      {error && (
        <div className="cw-settings-error" role="alert">
          {error}
        </div>
      )}
      {servers && servers.length === 0 && (
        <p className="cw-muted">
          {trans.__('No MCP servers are configured. Functions a notebook marks with')} <code>@tool</code>{' '}
          {trans.__('are offered to the agent too (from')} <code>agent_core import tool</code>
          {').'}
        </p>
      )}
      <ul className="cw-tools-servers">
        {(servers ?? []).map(server => (
          <li key={server.name} className="cw-tools-server" data-server={server.name} data-status={server.status}>
            <label className="cw-checkbox">
              <input
                type="checkbox"
                checked={!disabled.includes(server.name)}
                aria-label={trans.__('Use %1 in this thread', server.name)}
                onChange={e => toggle(server.name, e.target.checked)}
              />
              <strong>{server.name}</strong>
            </label>
            <span className={`cw-tools-status cw-tools-${server.status}`} data-testid="cw-tools-status">
              {serverStatusText(trans, server)}
            </span>
            {(server.tools ?? []).length > 0 && (
              <ul className="cw-tools-list">
                {(server.tools ?? []).map(tool => (
                  <li key={tool.name} title={tool.description}>
                    <code>{`mcp__${server.name}__${tool.name}`}</code>
                    {tool.read_only_hint ? <span className="cw-muted">{' ' + trans.__('(says read-only; still asks)')}</span> : null}
                  </li>
                ))}
              </ul>
            )}
          </li>
        ))}
      </ul>
      <h3 className="cw-settings-title">{trans.__('Tools from this notebook')}</h3>
      {notebookTools && notebookTools.tools.length === 0 && (
        <p className="cw-muted">
          {trans.__('None: mark a function with')} <code>@tool</code> (<code>from agent_core import tool</code>){' '}
          {trans.__('and run its cell.')}
        </p>
      )}
      <ul className="cw-tools-list" data-testid="cw-notebook-tools">
        {(notebookTools?.tools ?? []).map(tool => (
          <li key={tool.name} title={tool.description}>
            <code>{tool.name}</code>
            <span className="cw-muted">{` ${tool.file ? `${tool.file.split('/').pop()}:${tool.line}` : ''}${tool.read_only ? ` ${trans.__('(read-only)')}` : ''}`}</span>
          </li>
        ))}
        {(notebookTools?.notes ?? []).map(note => (
          <li key={note} className="cw-muted">
            {note}
          </li>
        ))}
      </ul>
    </section>
  );
}
