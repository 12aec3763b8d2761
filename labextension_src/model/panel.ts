/**
 * What the panel shows: the bound notebook, the thread on show (a
 * ThreadModel), the thread history, errors, the server's health and the
 * user's settings; and the user's actions (send, decide, stop). Emits
 * `changed` for the views and `liveEvent` for the notebook bridge.
 */
import type { TranslationBundle } from '@jupyterlab/translation';
import { IDisposable } from '@lumino/disposable';
import { ISignal, Signal } from '@lumino/signaling';

import { APIError, CellwrightAPI } from '../api';
import {
  ApprovalDecision,
  ApprovalRequiredEvent,
  Autonomy,
  CellwrightEvent,
  Health,
  Mode,
  Thread
} from '../contract.gen';
import { AutonomyChoice } from './autonomy';
import { DisabledServers } from './mcpServers';
import { ComposerDraft } from './draft';
import { ErrorBanner, IPanelError } from './errorBanner';
import { SettingsModel } from './settings';
import { IKeyValueStore, LastThreads } from './lastThreads';
import { healthNotices } from './notices';
import { AgentChoice } from './agentChoice';
import { OpenThreads } from './openThreads';
import { decisionBody, IDecisionExtra, INotebookBinding, startRunBody } from './runRequests';
import { ServerSetup } from './serverSetup';
import { ThreadModel } from './thread';
import { ThreadHistory } from './threadHistory';
import { EMPTY_VIEW, isActive, IThreadView } from './view';
import { WaitingBanner } from './waitingBanner';

export interface ILiveEvent {
  thread: ThreadModel;
  event: CellwrightEvent;
}

export namespace PanelModel {
  export interface IOptions {
    api: CellwrightAPI;
    /** The panel's translation bundle (`cellwright`): what the model words itself. */
    trans: TranslationBundle;
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
    this.trans = options.trans;
    this._errors = new ErrorBanner(options.trans);
    this.agents = new AgentChoice(options.api, () => this._changed.emit());
    this.version = options.version;
    this._lastThreads = new LastThreads(options.storage ?? null);
    this._autonomy = new AutonomyChoice(options.storage ?? null);
    this._threads = new OpenThreads({
      api: options.api,
      onActiveChanged: () => this._changed.emit(),
      onLiveEvent: (thread, event) => this._liveEvent.emit({ thread, event }),
      onCaughtUp: thread => this._caughtUp.emit(thread),
      onError: (thread, error) => this._threadError(thread, error)
    });
    this.settings = new SettingsModel(options.api, options.trans);
    this.settings.saved.connect(() => void this.checkHealth());
    const owner = {
      api: options.api,
      trans: options.trans,
      onChanged: () => this._changed.emit(),
      onError: (error: unknown, context: string) => this.reportError(error, context)
    };
    this._setup = new ServerSetup({ ...owner, settings: this.settings });
    this._history = new ThreadHistory(owner);
    this._banner = new WaitingBanner({
      api: options.api,
      active: () => this.thread,
      notebookPath: () => this._notebook?.path ?? null,
      onChanged: () => this._changed.emit()
    });
    this._mode = options.mode ?? 'single';
    this._autoScroll = options.autoScroll ?? true;
  }

  readonly api: CellwrightAPI;
  readonly trans: TranslationBundle;
  /** MCP servers the user turned off per thread (the Tools section). */
  readonly disabledServers = new DisabledServers();
  readonly version: string;
  /** The composer's attachments (a cell to ask about). */
  readonly draft = new ComposerDraft();
  /** The model endpoint's settings form (GET/PUT config). */
  readonly settings: SettingsModel;
  /** Which agent a new thread is for (GET agents). */
  readonly agents: AgentChoice;

  /** Emitted when anything the panel shows changes. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /** Live (not replayed) events of every open thread, for the notebook bridge. */
  get liveEvent(): ISignal<this, ILiveEvent> {
    return this._liveEvent;
  }

  /** A thread's replayed backlog is over, for the notebook bridge's reconcile. */
  get caughtUp(): ISignal<this, ThreadModel> {
    return this._caughtUp;
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
    return this._threads.active;
  }

  get view(): IThreadView {
    return this.thread?.view ?? EMPTY_VIEW;
  }

  /** The approval waiting for the user, unless it was already decided here. */
  get pendingApproval(): ApprovalRequiredEvent | null {
    return this.thread?.pendingApproval ?? null;
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
    return !!this.thread && this.thread.catchingUp;
  }

  get errors(): readonly IPanelError[] {
    return this._errors.errors;
  }

  get health(): Health | null {
    return this._setup.health;
  }

  /** Null until the thread history was fetched once. */
  get threadList(): readonly Thread[] | null {
    return this._history.list;
  }

  get threadListLoading(): boolean {
    return this._history.loading;
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
    return this._autonomy.value;
  }

  /** The mode for notebooks the user has not picked one for (a setting). */
  set defaultAutonomy(value: Autonomy) {
    if (this._autonomy.setDefault(this._notebook?.path ?? null, value)) {
      this._changed.emit();
    }
  }

  /** Pick the mode from the composer (remembered for the bound notebook). */
  pickAutonomy(value: Autonomy): void {
    if (this._autonomy.pick(this._notebook?.path ?? null, value)) {
      this._changed.emit();
    }
  }

  /**
   * The settings form instead of the conversation: opened with the gear,
   * and shown whenever the server has no model configured.
   */
  get settingsOpen(): boolean {
    return this._setup.settingsOpen;
  }

  /** True while the form stands in for the composer (no model configured). */
  get needsSetup(): boolean {
    return this._setup.needsSetup;
  }

  openSettings(open = true): void {
    this._setup.openSettings(open);
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
    if (!this._isDisposed && this._errors.report(error, context)) {
      this._changed.emit();
    }
  }

  dismissError(id: number): void {
    this._errors.dismiss(id);
    this._changed.emit();
  }

  // ------------------------------------------------------------ health and config

  /** `GET health`, once at start. */
  checkHealth(): Promise<void> {
    return this._setup.check();
  }

  /** Notices derived from the health answer. */
  get notices(): string[] {
    return healthNotices(this.trans, this._setup.health, this.version);
  }

  // ------------------------------------------------------------ notebook and threads

  /**
   * Bind the panel to a notebook (or to none). Shows the last thread of that
   * notebook, or a new conversation.
   */
  setNotebook(binding: INotebookBinding | null): void {
    const samePath = (binding?.path ?? null) === (this._notebook?.path ?? null);
    this._notebook = binding;
    this._autonomy.bind(binding?.path ?? null);
    if (samePath && this._bound) {
      this._changed.emit();
      return;
    }
    this._bound = true;
    if (binding) {
      this._banner.poll.start();
    }
    const remembered = binding ? this._lastThreads.recall(binding.path) : null;
    if (remembered) {
      void this.openThread(remembered, { notebookPath: binding?.path ?? null });
    } else {
      this._setActive(null);
    }
  }

  /**
   * Threads of the bound notebook waiting for the user's decision whose card
   * is not on show (an outside agent's call, a run started elsewhere).
   */
  get waitingThreads(): Thread[] {
    return this._banner.threads;
  }

  /** Show a waiting thread with its card (its stream read again: the run started elsewhere). */
  async reviewWaiting(thread: Thread): Promise<void> {
    await this.openThread(thread.thread_id, { title: thread.title, notebookPath: thread.notebook_path });
    this.thread?.connect();
  }

  /** The bound notebook was renamed: keep its thread. */
  notebookRenamed(newPath: string): void {
    const binding = this._notebook;
    if (!binding || binding.path === newPath) {
      return;
    }
    this._lastThreads.move(binding.path, newPath);
    this._autonomy.move(binding.path, newPath);
    this._threads.rename(binding.path, newPath);
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
    if (this.thread?.threadId === threadId) {
      return;
    }
    const thread = this._threads.reopen(threadId, info);
    if (this._notebook) {
      this._lastThreads.remember(this._notebook.path, threadId);
    }
    this._setActive(thread);
  }

  /** `GET threads` for the history list. */
  refreshThreads(): Promise<void> {
    return this._history.refresh();
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
      let thread = this.thread;
      const wasNew = !thread;
      if (!thread) {
        thread = await this._threads.create(message, notebook?.path ?? null, this.agents.chosen);
        if (notebook) {
          this._lastThreads.remember(notebook.path, thread.threadId);
        }
        this._setActive(thread);
        this._history.invalidate();
      }
      const disabledServers = this.disabledServers.take(thread.threadId, wasNew);
      const choices = { mode: this._mode, autonomy: this._autonomy.value, disabledServers };
      const body = startRunBody(message, choices, notebook, thread.notebookPath);
      await thread.start(this.api.startRun(thread.threadId, body));
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
    extra: IDecisionExtra = {}
  ): Promise<boolean> {
    const thread = this.thread;
    const pending = this.pendingApproval;
    if (!thread || !pending || this._deciding) {
      return false;
    }
    this._deciding = true;
    this._changed.emit();
    try {
      const body = decisionBody(decision, extra, this._notebook, thread.notebookPath);
      await thread.start(this.api.decide(thread.threadId, pending.id, body));
      thread.markDecided(pending.id);
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

  /** Let the active thread's run go on without waiting for its background cell (issue 38). */
  async continueWithoutWaiting(): Promise<void> {
    const thread = this.thread;
    if (!thread) {
      return;
    }
    try {
      await this.api.continueWithoutWaiting(thread.threadId);
      thread.connect();
    } catch (error) {
      this.reportError(error, this.trans.__('Could not continue without waiting'));
    }
  }

  /** Stop the active thread's run. */
  async cancel(): Promise<void> {
    const thread = this.thread;
    if (!thread) {
      return;
    }
    try {
      await this.api.cancel(thread.threadId);
      thread.connect();
    } catch (error) {
      this.reportError(error, this.trans.__('Could not stop the run'));
    }
  }

  dispose(): void {
    if (this._isDisposed) {
      return;
    }
    this._isDisposed = true;
    this._banner.dispose();
    this.settings.dispose();
    this._threads.dispose();
    Signal.clearData(this);
  }

  // ------------------------------------------------------------ private

  /** A thread's error: a thread gone from the server is no longer the notebook's last. */
  private _threadError(thread: ThreadModel, error: unknown): void {
    if (error instanceof APIError && error.status === 404 && this._notebook) {
      if (this._lastThreads.recall(this._notebook.path) === thread.threadId) {
        this._lastThreads.forget(this._notebook.path);
      }
    }
    this.reportError(error, this.trans.__('Thread %1', thread.title ?? thread.threadId));
  }

  private _setActive(thread: ThreadModel | null): void {
    this._threads.setActive(thread);
    this._changed.emit();
  }

  private _lastThreads: LastThreads;
  private _autonomy: AutonomyChoice;
  private _threads: OpenThreads;
  private _notebook: INotebookBinding | null = null;
  private _bound = false;
  private _history: ThreadHistory;
  private _banner: WaitingBanner;
  private _errors: ErrorBanner;
  private _setup: ServerSetup;
  private _mode: Mode;
  private _autoScroll: boolean;
  private _sending = false;
  private _deciding = false;
  private _isDisposed = false;
  private _changed = new Signal<this, void>(this);
  private _liveEvent = new Signal<this, ILiveEvent>(this);
  private _caughtUp = new Signal<this, ThreadModel>(this);
  private _modeChanged = new Signal<this, Mode>(this);
}
