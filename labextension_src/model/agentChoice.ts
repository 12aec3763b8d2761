/**
 * Which agent answers in the next new thread: Cellwright's own, or an
 * outside ACP agent the server hosts (GET agents). Loaded once, on the
 * picker's first showing; a server without the route leaves ours alone.
 */
import { CellwrightAPI } from '../api';
import { AgentInfo } from '../contract.gen';

export const OWN_AGENT = 'cellwright';

export class AgentChoice {
  constructor(
    private _api: CellwrightAPI,
    private _onChanged: () => void
  ) {}

  get agents(): readonly AgentInfo[] {
    return this._agents;
  }

  /** The agent a new thread is created for. */
  get chosen(): string {
    return this._chosen;
  }

  pick(name: string): void {
    const agent = this._agents.find(a => a.name === name);
    if (agent && agent.available && name !== this._chosen) {
      this._chosen = name;
      this._onChanged();
    }
  }

  async load(): Promise<void> {
    if (this._loading) {
      return;
    }
    this._loading = true;
    try {
      this._agents = await this._api.listAgents();
      this._onChanged();
    } catch {
      // an older server: only our own agent
    }
  }

  private _agents: readonly AgentInfo[] = [];
  private _chosen = OWN_AGENT;
  private _loading = false;
}
