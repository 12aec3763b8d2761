/**
 * One thread: its folded view (reducer.ts) and its event stream
 * (stream.ts), with Lumino signals and `dispose()`. Events that arrive
 * before the server's `caught_up` on a reopened thread are its replayed
 * backlog: they rebuild the view but are not re-emitted as live, so the
 * notebook is never written twice.
 */
import { IDisposable } from '@lumino/disposable';
import { ISignal, Signal } from '@lumino/signaling';

import { CellwrightAPI, errorMessage, IRunRequest } from '../api';
import { followEvents, IOpening } from '../stream';
import { ApprovalRequiredEvent, CellwrightEvent, ThreadDetail } from '../contract.gen';
import { reduceEvent } from './reducer';
import { withThreadDetail } from './threadUsage';
import { EMPTY_VIEW, isLiveOnly, IThreadView } from './view';

export type ConnectionState = 'closed' | 'open' | 'reconnecting';

export namespace ThreadModel {
  export interface IOptions {
    api: CellwrightAPI;
    threadId: string;
    title?: string | null;
    notebookPath?: string | null;
    /** Who answers: "cellwright", or an outside ACP agent hosted by the server. */
    agent?: string;
  }
}

export class ThreadModel implements IDisposable {
  constructor(options: ThreadModel.IOptions) {
    this._api = options.api;
    this.threadId = options.threadId;
    this.title = options.title ?? null;
    this.notebookPath = options.notebookPath ?? null;
    this.agent = options.agent ?? 'cellwright';
  }

  readonly threadId: string;
  title: string | null;
  notebookPath: string | null;
  agent: string;

  /** The folded events, with what `GET threads/{id}` adds (usage, autonomy) once read. */
  get view(): IThreadView {
    if (!this._detail) {
      return this._view;
    }
    if (this._shownFrom !== this._view) {
      this._shownFrom = this._view;
      this._shown = withThreadDetail(this._view, this._detail);
    }
    return this._shown;
  }

  /** Emitted (coalesced) when the view or the connection state changes. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /** Every event that arrives after the replay of the backlog, synchronously. */
  get liveEvent(): ISignal<this, CellwrightEvent> {
    return this._liveEvent;
  }

  /** Emitted when a replayed backlog is over: what came before is stored, what follows is live. */
  get caughtUp(): ISignal<this, void> {
    return this._caughtUp;
  }

  /** Emitted once when the event stream ends (run over, error, stop). */
  get streamEnded(): ISignal<this, void> {
    return this._streamEnded;
  }

  /** Errors worth showing (the model's owner shows them). */
  get errorRaised(): ISignal<this, unknown> {
    return this._errorRaised;
  }

  get connection(): ConnectionState {
    return this._connection;
  }

  /**
   * How many `run_started` events this thread has shown: read it before asking
   * for a run, and pass it to `connect` as `expectRunAfter`.
   */
  get runsStarted(): number {
    return this._runsStarted;
  }

  /** The message of the last network failure while reconnecting. */
  get lastError(): string | null {
    return this._connection === 'reconnecting' ? this._lastError : null;
  }

  /** True while the event stream runs. */
  get streaming(): boolean {
    return this._controller !== null;
  }

  /** True while the backlog of a reopened thread is being replayed. */
  get catchingUp(): boolean {
    return this._catchingUp;
  }

  /** True for an approval decided from this panel and accepted by the server. */
  isDecided(toolCallId: string): boolean {
    return this._decided.has(toolCallId);
  }

  /** The approval waiting for the user, unless it was already decided here. */
  get pendingApproval(): ApprovalRequiredEvent | null {
    const pending = this.view.pendingApproval;
    return pending && !this.isDecided(pending.id) ? pending : null;
  }

  /**
   * What `GET threads/{id}` said of the thread (usage, autonomy): shown
   * where its events say nothing (logs without `usage` events).
   */
  setDetail(detail: Pick<ThreadDetail, 'usage' | 'autonomy' | 'always_allowed'>): void {
    if (this._isDisposed) {
      return;
    }
    this._detail = { usage: detail.usage, autonomy: detail.autonomy };
    this._alwaysAllowed = detail.always_allowed ?? this._alwaysAllowed;
    this._shownFrom = null;
    this._emitChanged(false);
  }

  /** When (Date.now()) the last event changed the view; 0 before any. */
  get lastEventAt(): number {
    return this._lastEventAt;
  }

  /** The kinds of an outside agent's requests allowed unasked in this thread ("always" on its card). */
  get alwaysAllowed(): readonly string[] {
    return this._alwaysAllowed;
  }

  /** A card of this kind was approved with "always" here. */
  allowAlways(kind: string): void {
    if (!this._alwaysAllowed.includes(kind)) {
      this._alwaysAllowed = [...this._alwaysAllowed, kind].sort();
      this._emitChanged(false);
    }
  }

  /** Take back every "always" of the thread: the server forgets them, each kind asks again. */
  async askAgain(): Promise<void> {
    const answer = await this._api.clearAlwaysAllowed(this.threadId);
    this._alwaysAllowed = answer?.always_allowed ?? [];
    this._emitChanged(false);
  }

  markDecided(toolCallId: string): void {
    this._decided.add(toolCallId);
    this._emitChanged(true);
  }

  get isDisposed(): boolean {
    return this._isDisposed;
  }

  /**
   * Open (or keep open) the event stream after the last seq seen.
   *
   * @param options.replay what comes before `caught_up` is the thread's
   *   backlog: it rebuilds the view but is not live.
   * @param options.expectRunAfter a run was just started (or resumed), asked
   *   for when `runsStarted` was this: keep reopening until its `run_started`
   *   arrives, even if the server closes the first stream before it has
   *   anything to send. A `run_started` that came on an open stream before
   *   the request was answered is that run: nothing more is waited for.
   */
  connect(options: { replay?: boolean; expectRunAfter?: number } = {}): void {
    if (this._isDisposed) {
      return;
    }
    if (options.expectRunAfter !== undefined && this._runsStarted === options.expectRunAfter) {
      this._expectRun = true;
    }
    if (this._controller) {
      // The open stream may predate what the caller just did: read once more after it closes.
      this._again = true;
      return;
    }
    const controller = new AbortController();
    this._controller = controller;
    this._catchingUp = !!options.replay;
    this._again = false;
    void this._follow(controller);
  }

  /**
   * Send `request` (a POST that starts a run) and follow the run. With no
   * stream open, the POST is answered with the thread's events: no second
   * request before the first token. With one open, it is sent plainly and
   * the run's events come on that stream. Rejects with the request's error;
   * a request that failed is never sent again.
   */
  async start(request: IRunRequest): Promise<void> {
    const runsStarted = this._runsStarted;
    if (!(await this._openWith(request, runsStarted))) {
      await this._api.post(request);
      this.connect({ expectRunAfter: runsStarted });
    }
  }

  /** Open the stream with `request`; false, with nothing sent, while one is open. */
  private _openWith(request: IRunRequest, runsStarted: number): Promise<boolean> {
    if (this._isDisposed || this._controller) {
      return Promise.resolve(false);
    }
    return new Promise<boolean>((resolve, reject) => {
      let answered = false;
      const opening: IOpening = {
        path: request.path,
        body: JSON.stringify(request.body),
        onAnswered: error => {
          if (!answered) {
            answered = true;
            if (error === null) {
              // As after a plain POST: should this stream close before the run's run_started
              // (an outside agent's run may start after the answer), it is read again for it.
              this._expectRun = this._expectRun || this._runsStarted === runsStarted;
              resolve(true);
            } else {
              reject(error);
            }
          }
        }
      };
      const controller = new AbortController();
      this._controller = controller;
      this._catchingUp = false;
      this._again = false;
      void this._follow(controller, opening);
    });
  }

  /** Apply one event; `live` events are re-emitted on `liveEvent`. */
  applyEvent(event: CellwrightEvent, live: boolean): void {
    if (isLiveOnly(event)) {
      if (live) {
        this._liveEvent.emit(event); // the view has no place for it; the notebook has
      }
      return;
    }
    const before = this._view;
    this._view = reduceEvent(before, event);
    if (this._view === before) {
      return; // a seq seen already: a replay overlapping the live stream
    }
    if (event.type === 'run_started') {
      this._expectRun = false;
      this._runsStarted++;
    }
    this._lastEventAt = Date.now();
    if (live) {
      this._liveEvent.emit(event);
    }
    this._emitChanged(false);
  }

  dispose(): void {
    if (this._isDisposed) {
      return;
    }
    this._isDisposed = true;
    this._controller?.abort();
    clearTimeout(this._changedTimer);
    Signal.clearData(this);
  }

  private async _follow(controller: AbortController, opening: IOpening | null = null): Promise<void> {
    let openingFailed: unknown = null; // its caller reports it (openWith rejects), not errorRaised
    const first: IOpening | null = opening && {
      ...opening,
      onAnswered: error => {
        openingFailed = error;
        opening.onAnswered(error);
      }
    };
    try {
      await followEvents(
        this._api.serverSettings,
        this.threadId,
        {
          resumeAfter: () => (this._view.lastSeq < 0 ? null : this._view.lastSeq),
          onOpen: () => {
            this._again = false;
            this._setConnection('open');
          },
          onEvent: event => this.applyEvent(event, !this._catchingUp),
          onCaughtUp: () => this._endCatchUp(),
          onClose: () => {
            this._endCatchUp();
            return this._again || this._expectRun || this._view.status === 'running';
          },
          onRetry: error => {
            if (error !== null) {
              this._lastError = errorMessage(this._api.trans, error);
            }
            this._setConnection('reconnecting');
          }
        },
        controller.signal,
        this._api.trans,
        first
      );
    } catch (error) {
      this._expectRun = false;
      if (!controller.signal.aborted && error !== openingFailed) {
        this._errorRaised.emit(error);
      }
    } finally {
      opening?.onAnswered(new DOMException(this._api.trans.__('The request was stopped'), 'AbortError'));
      this._endCatchUp();
      if (this._controller === controller) {
        this._controller = null;
      }
      this._setConnection('closed');
      if (!this._isDisposed) {
        this._streamEnded.emit();
      }
    }
  }

  private _endCatchUp(): void {
    if (this._catchingUp) {
      this._catchingUp = false;
      this._emitChanged(false);
      this._caughtUp.emit();
    }
  }

  private _setConnection(state: ConnectionState): void {
    if (this._connection !== state) {
      this._connection = state;
      this._emitChanged(false);
    }
  }

  /** Coalesce change notifications: a replay of 1000 events renders once. */
  private _emitChanged(now: boolean): void {
    if (this._isDisposed) {
      return;
    }
    if (now) {
      clearTimeout(this._changedTimer);
      this._changedTimer = undefined;
      this._changed.emit();
      return;
    }
    if (this._changedTimer === undefined) {
      this._changedTimer = setTimeout(() => {
        this._changedTimer = undefined;
        if (!this._isDisposed) {
          this._changed.emit();
        }
      }, 30);
    }
  }

  private _api: CellwrightAPI;
  private _view: IThreadView = EMPTY_VIEW;
  private _detail: Pick<ThreadDetail, 'usage' | 'autonomy'> | null = null;
  private _alwaysAllowed: readonly string[] = [];
  private _shown: IThreadView = EMPTY_VIEW;
  private _shownFrom: IThreadView | null = null;
  private _controller: AbortController | null = null;
  private _connection: ConnectionState = 'closed';
  private _lastEventAt = 0;
  private _catchingUp = false;
  private _expectRun = false;
  private _runsStarted = 0;
  private _again = false;
  private _lastError: string | null = null;
  private _changedTimer: ReturnType<typeof setTimeout> | undefined;
  private _decided = new Set<string>();
  private _isDisposed = false;
  private _changed = new Signal<this, void>(this);
  private _liveEvent = new Signal<this, CellwrightEvent>(this);
  private _caughtUp = new Signal<this, void>(this);
  private _streamEnded = new Signal<this, void>(this);
  private _errorRaised = new Signal<this, unknown>(this);
}
