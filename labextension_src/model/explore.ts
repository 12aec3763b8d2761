/**
 * explore steps (issue 37): the agent's looks at the kernel's variables,
 * run in a sandboxed copy of the kernel (or, where no sandbox can be had,
 * approved first). Their outputs are a scratchpad, not a notebook cell;
 * "Run as cell" asks the server to propose the step's code as a real cell
 * (`POST threads/{id}/steps/{tool_call_id}/as_cell`), which then goes
 * through the usual approval card.
 */
import { errorMessage } from '../api';
import { NbOutput, ToolResultEvent } from '../contract.gen';
import type { PanelModel } from './panel';
import { IToolItem } from './view';

export const EXPLORE_TOOL = 'explore';

/** Where an explore step is: still running, waiting for approval, or how it ran (or did not). */
export type ExploreState =
  | 'running'
  | 'awaiting_approval'
  | 'sandboxed'
  | 'unsandboxed'
  | 'rejected'
  | 'failed'
  | 'stopped';

export function isExplore(item: IToolItem): boolean {
  return item.name === EXPLORE_TOOL;
}

/**
 * What an explore step's `tool_result` adds to its item: how it ran and its
 * outputs (bounded by the server). Nothing for another tool, or for an
 * explore that never ran (refused before the fork: no `sandboxed`).
 */
export function exploredFields(event: ToolResultEvent): Partial<IToolItem> {
  if (event.name !== EXPLORE_TOOL || typeof event.sandboxed !== 'boolean') {
    return {};
  }
  return {
    exploration: { sandboxed: event.sandboxed, blocked: event.blocked ?? [] },
    outputs: (event.outputs ?? []) as unknown as NbOutput[]
  };
}

export function exploreState(item: IToolItem): ExploreState {
  if (item.status === 'running' || item.status === 'awaiting_approval') {
    return item.status;
  }
  if (item.exploration) {
    return item.exploration.sandboxed ? 'sandboxed' : 'unsandboxed';
  }
  if (item.status === 'rejected') {
    return item.stopped ? 'stopped' : 'rejected';
  }
  return item.status === 'cancelled' || item.stopped ? 'stopped' : 'failed';
}

/** The explored code, when the step ran and it can become a cell. */
export function runnableCode(item: IToolItem): string | null {
  const code = item.args?.code;
  const ran = exploreState(item) === 'sandboxed' || exploreState(item) === 'unsandboxed';
  return isExplore(item) && ran && typeof code === 'string' && code.trim() ? code : null;
}

/**
 * "Run as cell": the server proposes the step's code as a run_cell call
 * (its own record of the code, never this page's); the thread's stream then
 * brings the approval card. Resolves to null, or what went wrong.
 */
export async function runAsCell(model: PanelModel, item: IToolItem): Promise<string | null> {
  const thread = model.thread;
  if (!thread || runnableCode(item) === null) {
    return null;
  }
  const runsStarted = thread.runsStarted;
  try {
    await model.api.stepAsCell(thread.threadId, item.id);
  } catch (error) {
    return errorMessage(model.trans, error);
  }
  thread.connect({ expectRunAfter: runsStarted });
  return null;
}
