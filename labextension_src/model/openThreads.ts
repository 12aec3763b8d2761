/**
 * The ThreadModels the panel holds: the one on show, and any other whose
 * stream still runs (its events keep reaching the notebook bridge). A
 * thread that is neither is disposed, so a long session does not keep
 * every thread it opened.
 */
import { IDisposable } from '@lumino/disposable';

import { CellwrightAPI } from '../api';
import { CellwrightEvent } from '../contract.gen';
import { ThreadModel } from './thread';

export namespace OpenThreads {
  export interface IOptions {
    api: CellwrightAPI;
    /** The thread on show changed (its view or its connection). */
    onActiveChanged(): void;
    /** A live event of any thread held. */
    onLiveEvent(thread: ThreadModel, event: CellwrightEvent): void;
    /** A thread's replayed backlog is over (the notebook bridge reconciles its notebook then). */
    onCaughtUp?(thread: ThreadModel): void;
    /** An error worth showing, from any thread held. */
    onError(thread: ThreadModel, error: unknown): void;
  }
}

export class OpenThreads implements IDisposable {
  constructor(private _options: OpenThreads.IOptions) {}

  /** The thread on show, or null for a new conversation not yet sent. */
  get active(): ThreadModel | null {
    return this._active;
  }

  /** Show `thread` (or none); the one shown before is dropped unless it streams. */
  setActive(thread: ThreadModel | null): void {
    const previous = this._active;
    this._active = thread;
    if (previous && previous !== thread) {
      this._release(previous);
    }
  }

  /** A thread with a log on the server: when not held yet, replayed from its first event. */
  reopen(threadId: string, info: { title?: string | null; notebookPath?: string | null }): ThreadModel {
    let thread = this._threads.get(threadId);
    if (!thread) {
      thread = this._add({ threadId, title: info.title, notebookPath: info.notebookPath });
      thread.connect({ replay: true });
      void this._loadDetail(thread);
    }
    return thread;
  }

  /** Create a thread on the server for a first message; the caller connects it once its run starts. */
  async create(message: string, notebookPath: string | null, agent = 'cellwright'): Promise<ThreadModel> {
    const created = await this._options.api.createThread({
      ...(notebookPath !== null ? { notebook_path: notebookPath } : {}),
      ...(agent !== 'cellwright' ? { agent } : {}),
      title: message.length > 80 ? message.slice(0, 77) + '...' : message
    });
    return this._add({
      threadId: created.thread_id,
      title: created.title ?? message,
      notebookPath: created.notebook_path ?? notebookPath,
      agent: created.agent ?? agent
    });
  }

  /** A notebook was renamed: its threads follow it. */
  rename(from: string, to: string): void {
    for (const thread of this._threads.values()) {
      if (thread.notebookPath === from) {
        thread.notebookPath = to;
      }
    }
  }

  get isDisposed(): boolean {
    return this._isDisposed;
  }

  dispose(): void {
    if (this._isDisposed) {
      return;
    }
    this._isDisposed = true;
    for (const thread of this._threads.values()) {
      thread.dispose();
    }
    this._threads.clear();
    this._active = null;
  }

  /** The thread's usage and autonomy from `GET threads/{id}`: best effort. */
  private async _loadDetail(thread: ThreadModel): Promise<void> {
    try {
      const detail = await this._options.api.getThread(thread.threadId);
      if (detail && typeof detail === 'object' && detail.usage) {
        thread.agent = detail.agent ?? thread.agent;
        thread.setDetail(detail);
      }
    } catch {
      // the events show everything else; a missing thread is reported by its stream
    }
  }

  /** Hold a thread: the panel hears from it until it is dropped. */
  private _add(options: Omit<ThreadModel.IOptions, 'api'>): ThreadModel {
    const thread = new ThreadModel({ api: this._options.api, ...options });
    this._threads.set(thread.threadId, thread);
    thread.changed.connect(() => {
      if (thread === this._active) {
        this._options.onActiveChanged();
      }
    });
    thread.liveEvent.connect((_, event) => this._options.onLiveEvent(thread, event));
    thread.caughtUp.connect(() => this._options.onCaughtUp?.(thread));
    thread.errorRaised.connect((_, error) => this._options.onError(thread, error));
    thread.streamEnded.connect(() => this._release(thread));
    return thread;
  }

  /**
   * Drop a thread that is not shown and not streaming, or whose stream only waits for a decision
   * (the server keeps it open while a card waits): hidden threads must not hold the browser's few
   * connections to the server. Its card comes back with it when it is opened again.
   */
  private _release(thread: ThreadModel): void {
    if (thread !== this._active && (!thread.streaming || thread.pendingApproval !== null)) {
      this._threads.delete(thread.threadId);
      thread.dispose();
    }
  }

  private _active: ThreadModel | null = null;
  private _threads = new Map<string, ThreadModel>();
  private _isDisposed = false;
}
