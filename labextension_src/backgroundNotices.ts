/**
 * Says when a cell that ran in the background ended and the agent went on
 * (issue 38): a JupyterLab notification, and a desktop one when the page is
 * hidden and the browser already allows them (the panel never asks on its own).
 */
import { TranslationBundle } from '@jupyterlab/translation';
import { ISignal } from '@lumino/signaling';

import { ILiveEvent, PanelModel } from './model';

export function noticeBackgroundEnds(
  liveEvent: ISignal<PanelModel, ILiveEvent>,
  notify: (message: string) => void,
  trans: TranslationBundle
): void {
  const waiting = new Set<string>();
  liveEvent.connect((_, { thread, event }) => {
    if (event.type === 'run_finished' && event.status === 'waiting_for_cell') {
      waiting.add(thread.threadId);
    } else if (event.type === 'run_started' && waiting.delete(thread.threadId)) {
      const message = trans.__('A cell that ran in the background ended: the agent goes on.');
      notify(message);
      if (document.hidden && typeof Notification !== 'undefined' && Notification.permission === 'granted') {
        new Notification('Cellwright', { body: message });
      }
    }
  });
}
