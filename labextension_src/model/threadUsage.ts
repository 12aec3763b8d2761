/**
 * The thread view's token usage as its events give it, and what the
 * thread's detail (`GET threads/{id}`) adds for a log without `usage`
 * events. Pure, like the fold that calls it.
 */
import { CellwrightEvent, ThreadDetail } from '../contract.gen';
import { IThreadView, IUsageView } from './view';

/**
 * The usage after `event`. A new run starts without run figures; the
 * decision that resumes a paused run keeps them.
 */
export function usageAfter(view: IThreadView, event: CellwrightEvent): IUsageView {
  const usage = view.usage;
  switch (event.type) {
    case 'run_started':
      return view.status === 'awaiting_approval' ? usage : { ...usage, run: null };
    case 'usage':
      return {
        thread: event.thread ?? usage.thread,
        run: event.run ?? usage.run,
        contextTokens: typeof event.context_tokens === 'number' ? event.context_tokens : null,
        contextBudget: typeof event.context_budget === 'number' ? event.context_budget : null,
        summarized: usage.summarized || event.summarized === true
      };
    case 'run_finished':
      return event.usage ? { ...usage, run: event.usage } : usage;
    default:
      return usage;
  }
}

/**
 * What `GET threads/{id}` adds to a view its events do not give: the
 * thread's usage and autonomy, for threads whose log has no `usage` event
 * (recorded before it, or summed from an older log). Events win: a figure
 * from them is never replaced.
 */
export function withThreadDetail(
  view: IThreadView,
  detail: Pick<ThreadDetail, 'usage' | 'autonomy'>
): IThreadView {
  const usage = view.usage.thread === null && detail.usage ? { ...view.usage, thread: detail.usage } : view.usage;
  const autonomy = view.autonomy ?? detail.autonomy ?? null;
  if (usage === view.usage && autonomy === view.autonomy) {
    return view;
  }
  return { ...view, usage, autonomy };
}
