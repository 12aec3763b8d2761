/**
 * The "… is waiting for your approval [Review]" banner: threads of the bound
 * notebook that wait for a decision whose card is not on show. The poll
 * (WaitingThreads) says which threads wait; the thread on show is followed,
 * so its own events say whether it still waits (its stream stays open while
 * a card waits), and the poll decides for it only when it is newer than
 * those events: a run started elsewhere that this panel has not read yet.
 */
import { IDisposable } from '@lumino/disposable';

import { CellwrightAPI } from '../api';
import { Thread } from '../contract.gen';
import { ThreadModel } from './thread';
import { awaitingHere, WaitingThreads } from './waitingThreads';

export namespace WaitingBanner {
  export interface IOptions {
    api: CellwrightAPI;
    /** The thread on show, or null. */
    active(): ThreadModel | null;
    /** The bound notebook's path, or null. */
    notebookPath(): string | null;
    /** What the banner shows may have changed. */
    onChanged(): void;
  }
}

export class WaitingBanner implements IDisposable {
  constructor(private _options: WaitingBanner.IOptions) {
    this.poll = new WaitingThreads({
      api: _options.api,
      onChanged: () => {
        this._followWaiting();
        _options.onChanged();
      }
    });
  }

  /** `GET threads` every few seconds while the page is visible. */
  readonly poll: WaitingThreads;

  /** The threads the banner names. */
  get threads(): Thread[] {
    const active = this._options.active();
    // A card shown or decided here needs no banner; nor does a followed thread whose events are newer
    // than the poll and say it no longer waits.
    const followed =
      active &&
      (active.view.pendingApproval ||
        (active.view.status !== 'awaiting_approval' && active.lastEventAt >= this.poll.askedAt))
        ? active.threadId
        : null;
    return awaitingHere(this.poll.threads, this._options.notebookPath()).filter(t => t.thread_id !== followed);
  }

  get isDisposed(): boolean {
    return this.poll.isDisposed;
  }

  dispose(): void {
    this.poll.dispose();
  }

  /** The thread on show waits for a decision its view does not have yet: read its stream again. */
  private _followWaiting(): void {
    const active = this._options.active();
    if (active && !active.pendingApproval && this.threads.some(t => t.thread_id === active.threadId)) {
      active.connect();
    }
  }
}
