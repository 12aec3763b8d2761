/**
 * What the panel shows: the bound notebook, the thread on show (a
 * ThreadModel), the thread history, errors, the server's health and the
 * user's settings; and the user's actions (send, decide, stop). Emits
 * `changed` for the views and `liveEvent` for the notebook bridge.
 */
import { IDisposable } from '@lumino/disposable';
import { ISignal, Signal } from '@lumino/signaling';

import { APIError, CellwrightAPI, errorMessage, isAbort } from '../api';
import {
  ApprovalDecision,
  ApprovalRequiredEvent,
  Autonomy,
  CellwrightEvent,
  Health,
  LiveCell,
  Mode,
  Thread
} from '../contract.gen';
import { AutonomyMemory, isAutonomy } from './autonomy';
import { DisabledServers } from './mcpServers';
import { ComposerDraft } from './draft';
import { liveCells } from './liveCells';
import { SettingsModel } from './settings';
import { IKeyValueStore, LastThreads } from './lastThreads';
import { healthNotices } from './notices';
import { ThreadModel } from './thread';
import { EMPTY_VIEW, isActive, IThreadView } from './view';

export interface ILiveEvent {
  thread: ThreadModel;
  event: CellwrightEvent;
}

/** The notebook the panel is bound to. */
export interface INotebookBinding {
  path: string;
  /** The id of the notebook's kernel right now, if any. */
  kernelId(): string | undefined;
  /** The notebook's cells as the browser has them now (for `notebook_cells`). */
  cells?(): Iterable<{ id: string; cell_type: string; source: string }>;
}

export interface IPanelError {
  id: number;
  message: string;
}

export namespace PanelModel {
  export interface IOptions {
    api: CellwrightAPI;
    /** The frontend's version, compared with the server's. */
    version: string;
    /** Where the last thread per notebook is remembered. */
    storage?: IKeyValueStore | null;
    mode?: Mode;
    autoScroll?: boolean;
  }
}

export class PanelModel implements IDisposable {
  constructor(options: PanelModel.IOptions) {
    this.api = options.api;
    this.version = options.version;
    this._lastThreads = new LastThreads(options.storage ?? null);
    this._autonomies = new AutonomyMemory(options.storage ?? null);
    this._autonomy = this._autonomies.recall(null);
    this.settings = new SettingsModel(options.api);
    this.settings.saved.connect(() => void this.checkHealth());
    this._mode = options.mode ?? 'single';
    this._autoScroll = options.autoScroll ?? true;
  }

  readonly api: CellwrightAPI;
  /** MCP servers the user turned off per thread (the Tools section). */
  readonly disabledServers = new DisabledServers();
  readonly version: string;
  /** The composer's attachments (a cell to ask about). */
  readonly draft = new ComposerDraft();
  /** The model endpoint's settings form (GET/PUT config). */
  readonly settings: SettingsModel;

  /** Emitted when anything the panel shows changes. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /** Live (not replayed) events of every open thread, for the notebook bridge. */
  get liveEvent(): ISignal<this, ILiveEvent> {
    return this._liveEvent;
  }

  /** Emitted when the user picks a mode in the panel (to persist it). */
  get modeChanged(): ISignal<this, Mode> {
    return this._modeChanged;
  }

  get notebook(): INotebookBinding | null {
    return this._notebook;
  }

  /** The thread on show, or null for a new conversation not yet sent. */
  get thread(): ThreadModel | null {
    return this._active;
  }

  get view(): IThreadView {
    return this._active?.view ?? EMPTY_VIEW;
  }

  /** The approval waiting for the user, unless it was already decided here. */
  get pendingApproval(): ApprovalRequiredEvent | null {
    const pending = this.view.pendingApproval;
    if (!pending || !this._active || this._active.isDecided(pending.id)) {
      return null;
    }
    return pending;
  }

  get running(): boolean {
    return isActive(this.view.status);
  }

  get sending(): boolean {
    return this._sending;
  }

  get deciding(): boolean {
    return this._deciding;
  }

  get loadingThread(): boolean {
    return !!this._active && this._active.catchingUp;
  }

  get errors(): readonly IPanelError[] {
    return this._errors;
  }

  get health(): Health | null {
    return this._health;
  }

  /** Null until the thread history was fetched once. */
  get threadList(): readonly Thread[] | null {
    return this._threadList;
  }

  get threadListLoading(): boolean {
    return this._threadListLoading;
  }

  get mode(): Mode {
    return this._mode;
  }

  set mode(value: Mode) {
    if (value !== 'single' && value !== 'multi') {
      return;
    }
    if (this._mode !== value) {
      this._mode = value;
      this._changed.emit();
    }
  }

  /** Set the mode from the panel's switch: also asks to persist it. */
  pickMode(value: Mode): void {
    this.mode = value;
    this._modeChanged.emit(value);
  }

  /** How much the agent may do in the next run: remembered per notebook. */
  get autonomy(): Autonomy {
    return this._autonomy;
  }

  /** The mode for notebooks the user has not picked one for (a setting). */
  set defaultAutonomy(value: Autonomy) {
    if (!isAutonomy(value)) {
      return;
    }
    this._autonomies.fallback = value;
    const now = this._autonomies.recall(this._notebook?.path ?? null);
    if (now !== this._autonomy) {
      this._autonomy = now;
      this._changed.emit();
    }
  }

  /** Pick the mode from the composer (remembered for the bound notebook). */
  pickAutonomy(value: Autonomy): void {
    if (!isAutonomy(value) || value === this._autonomy) {
      return;
    }
    this._autonomy = value;
    this._autonomies.remember(this._notebook?.path ?? null, value);
    this._changed.emit();
  }

  /**
   * The settings form instead of the conversation: opened with the gear,
   * and shown whenever the server has no model configured.
   */
  get settingsOpen(): boolean {
    return this._settingsOpen || this._health?.llm_configured === false;
  }

  /** True while the form stands in for the composer (no model configured). */
  get needsSetup(): boolean {
    return this._health?.llm_configured === false;
  }

  openSettings(open = true): void {
    if (open) {
      void this.settings.load();
    }
    if (this._settingsOpen !== open) {
      this._settingsOpen = open;
      this._changed.emit();
    }
  }

  get autoScroll(): boolean {
    return this._autoScroll;
  }

  set autoScroll(value: boolean) {
    if (this._autoScroll !== value) {
      this._autoScroll = value;
      this._changed.emit();
    }
  }

  get isDisposed(): boolean {
    return this._isDisposed;
  }

  // ------------------------------------------------------------ errors

  /** Show an error in the panel's banner (AbortErrors are not errors). */
  reportError(error: unknown, context?: string): void {
    if (this._isDisposed || isAbort(error)) {
      return;
    }
    const text = errorMessage(error);
    const message = context ? `${context}: ${text}` : text;
    const last = this._errors[this._errors.length - 1];
    if (last && last.message === message) {
      return;
    }
    console.warn('Cellwright:', message);
    this._errors = [...this._errors, { id: ++this._errorId, message }].slice(-5);
    this._changed.emit();
  }

  dismissError(id: number): void {
    this._errors = this._errors.filter(e => e.id !== id);
    this._changed.emit();
  }

  // ------------------------------------------------------------ health and config

  /** `GET health`, once at start. */
  async checkHealth(): Promise<void> {
    try {
      this._health = await this.api.health();
      if (this._health?.llm_configured === false) {
        void this.settings.load();
      }
    } catch (error) {
      this._health = null;
      this.reportError(error, 'Cellwright server check failed');
    }
    this._changed.emit();
  }

  /** Notices derived from the health answer. */
  get notices(): string[] {
    return healthNotices(this._health, this.version);
  }

  /** Send the auto-approve list to the server (the server keeps it). */
  async setAutoApprove(tools: string[]): Promise<void> {
    try {
      await this.api.putConfig({ auto_approve: tools });
    } catch (error) {
      this.reportError(error, 'Could not save the auto-approve list');
    }
  }

  // ------------------------------------------------------------ notebook and threads

  /**
   * Bind the panel to a notebook (or to none). Shows the last thread of that
   * notebook, or a new conversation.
   */
  setNotebook(binding: INotebookBinding | null): void {
    const samePath = (binding?.path ?? null) === (this._notebook?.path ?? null);
    this._notebook = binding;
    this._autonomy = this._autonomies.recall(binding?.path ?? null);
    if (samePath && this._bound) {
      this._changed.emit();
      return;
    }
    this._bound = true;
    const remembered = binding ? this._lastThreads.recall(binding.path) : null;
    if (remembered) {
      void this.openThread(remembered, { notebookPath: binding?.path ?? null });
    } else {
      this._setActive(null);
    }
  }

  /** The bound notebook was renamed: keep its thread. */
  notebookRenamed(newPath: string): void {
    const binding = this._notebook;
    if (!binding || binding.path === newPath) {
      return;
    }
    this._lastThreads.move(binding.path, newPath);
    this._autonomies.move(binding.path, newPath);
    for (const thread of this._threads.values()) {
      if (thread.notebookPath === binding.path) {
        thread.notebookPath = newPath;
      }
    }
    this._notebook = { ...binding, path: newPath };
    this._changed.emit();
  }

  /** Start a new conversation (the thread is created on the first send). */
  newThread(): void {
    if (this._notebook) {
      this._lastThreads.forget(this._notebook.path);
    }
    this._setActive(null);
  }

  /**
   * Show a thread: replay all its events, then follow it live if it runs.
   */
  async openThread(
    threadId: string,
    info: { title?: string | null; notebookPath?: string | null } = {}
  ): Promise<void> {
    if (this._active?.threadId === threadId) {
      return;
    }
    let thread = this._threads.get(threadId);
    if (!thread) {
      thread = this._track(
        new ThreadModel({
          api: this.api,
          threadId,
          title: info.title ?? null,
          notebookPath: info.notebookPath ?? null
        })
      );
      thread.connect({ replay: true });
      void this._loadDetail(thread);
    }
    if (this._notebook) {
      this._lastThreads.remember(this._notebook.path, threadId);
    }
    this._setActive(thread);
  }

  /** `GET threads` for the history list. */
  async refreshThreads(): Promise<void> {
    this._threadListLoading = true;
    this._changed.emit();
    try {
      this._threadList = await this.api.listThreads();
    } catch (error) {
      this.reportError(error, 'Could not load the thread history');
    } finally {
      this._threadListLoading = false;
      this._changed.emit();
    }
  }

  // ------------------------------------------------------------ actions

  /**
   * Send a message: creates the thread on the first send, starts a run and
   * follows its events. Resolves true when the server accepted the run.
   */
  async send(text: string): Promise<boolean> {
    const message = text.trim();
    if (!message || this._sending || this._isDisposed) {
      return false;
    }
    this._sending = true;
    this._changed.emit();
    const notebook = this._notebook;
    try {
      let thread = this._active;
      const wasNew = !thread;
      if (!thread) {
        const created = await this.api.createThread({
          ...(notebook ? { notebook_path: notebook.path } : {}),
          title: message.length > 80 ? message.slice(0, 77) + '...' : message
        });
        thread = this._track(
          new ThreadModel({
            api: this.api,
            threadId: created.thread_id,
            title: created.title ?? message,
            notebookPath: created.notebook_path ?? notebook?.path ?? null
          })
        );
        if (notebook) {
          this._lastThreads.remember(notebook.path, thread.threadId);
        }
        this._setActive(thread);
        this._threadList = null; // stale now
      }
      const kernelId = notebook?.kernelId();
      const cells = this._liveCells(notebook, thread.notebookPath);
      const disabledServers = this.disabledServers.take(thread.threadId, wasNew);
      await this.api.startRun(thread.threadId, {
        ...(disabledServers ? { disabled_mcp_servers: disabledServers } : {}),
        message,
        mode: this._mode,
        autonomy: this._autonomy,
        ...(notebook ? { notebook_path: notebook.path } : {}),
        ...(kernelId ? { kernel_id: kernelId } : {}),
        ...(cells ? { notebook_cells: cells } : {})
      });
      thread.connect({ expectRun: true });
      return true;
    } catch (error) {
      this.reportError(error);
      return false;
    } finally {
      this._sending = false;
      this._changed.emit();
    }
  }

  /** Decide the pending approval. At most one request at a time. */
  async decide(
    decision: ApprovalDecision,
    extra: { args?: Record<string, unknown>; reason?: string; save_rule?: string } = {}
  ): Promise<boolean> {
    const thread = this._active;
    const pending = this.pendingApproval;
    if (!thread || !pending || this._deciding) {
      return false;
    }
    this._deciding = true;
    this._changed.emit();
    try {
      const kernelId = this._notebook?.kernelId();
      const cells = this._liveCells(this._notebook, thread.notebookPath);
      await this.api.decide(thread.threadId, pending.id, {
        decision,
        ...(extra.args ? { args: extra.args } : {}),
        ...(extra.reason ? { reason: extra.reason } : {}),
        ...(extra.save_rule ? { save_rule: extra.save_rule } : {}),
        ...(kernelId ? { kernel_id: kernelId } : {}),
        ...(cells ? { notebook_cells: cells } : {})
      });
      thread.markDecided(pending.id);
      thread.connect({ expectRun: true });
      return true;
    } catch (error) {
      this.reportError(error);
      if (error instanceof APIError && error.status === 409) {
        thread.connect(); // someone else decided: catch up with the thread
      }
      return false;
    } finally {
      this._deciding = false;
      this._changed.emit();
    }
  }

  /** Stop the active thread's run. */
  async cancel(): Promise<void> {
    const thread = this._active;
    if (!thread) {
      return;
    }
    try {
      await this.api.cancel(thread.threadId);
      thread.connect();
    } catch (error) {
      this.reportError(error, 'Could not stop the run');
    }
  }

  dispose(): void {
    if (this._isDisposed) {
      return;
    }
    this._isDisposed = true;
    this.settings.dispose();
    for (const thread of this._threads.values()) {
      thread.dispose();
    }
    this._threads.clear();
    this._active = null;
    Signal.clearData(this);
  }

  // ------------------------------------------------------------ private

  /** The thread's usage and autonomy from `GET threads/{id}`: best effort. */
  private async _loadDetail(thread: ThreadModel): Promise<void> {
    try {
      const detail = await this.api.getThread(thread.threadId);
      if (detail && typeof detail === 'object' && detail.usage) {
        thread.setDetail(detail);
      }
    } catch {
      // the events show everything else; a missing thread is reported by its stream
    }
  }

  /** The bound notebook's live cells, when the thread is that notebook's. */
  private _liveCells(
    notebook: INotebookBinding | null,
    threadPath: string | null
  ): LiveCell[] | null {
    if (!notebook?.cells || (threadPath && threadPath !== notebook.path)) {
      return null;
    }
    try {
      return liveCells(notebook.cells());
    } catch (error) {
      console.warn('Cellwright: could not read the notebook cells', error);
      return null;
    }
  }

  private _track(thread: ThreadModel): ThreadModel {
    this._threads.set(thread.threadId, thread);
    thread.changed.connect(() => {
      if (thread === this._active) {
        this._changed.emit();
      }
    });
    thread.liveEvent.connect((_, event) => {
      this._liveEvent.emit({ thread, event });
    });
    thread.errorRaised.connect((_, error) => {
      if (error instanceof APIError && error.status === 404 && this._notebook) {
        if (this._lastThreads.recall(this._notebook.path) === thread.threadId) {
          this._lastThreads.forget(this._notebook.path);
        }
      }
      this.reportError(error, `Thread ${thread.title ?? thread.threadId}`);
    });
    thread.streamEnded.connect(() => this._release(thread));
    return thread;
  }

  /** Drop a thread that is neither shown nor streaming. */
  private _release(thread: ThreadModel): void {
    if (thread !== this._active && !thread.streaming) {
      this._threads.delete(thread.threadId);
      thread.dispose();
    }
  }

  private _setActive(thread: ThreadModel | null): void {
    const previous = this._active;
    this._active = thread;
    if (previous && previous !== thread) {
      this._release(previous);
    }
    this._changed.emit();
  }

  private _lastThreads: LastThreads;
  private _autonomies: AutonomyMemory;
  private _autonomy: Autonomy;
  private _settingsOpen = false;
  private _notebook: INotebookBinding | null = null;
  private _bound = false;
  private _active: ThreadModel | null = null;
  private _threads = new Map<string, ThreadModel>();
  private _threadList: Thread[] | null = null;
  private _threadListLoading = false;
  private _errors: IPanelError[] = [];
  private _errorId = 0;
  private _health: Health | null = null;
  private _mode: Mode;
  private _autoScroll: boolean;
  private _sending = false;
  private _deciding = false;
  private _isDisposed = false;
  private _changed = new Signal<this, void>(this);
  private _liveEvent = new Signal<this, ILiveEvent>(this);
  private _modeChanged = new Signal<this, Mode>(this);
}
