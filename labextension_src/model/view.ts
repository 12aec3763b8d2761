/**
 * What the panel shows of one thread, as plain data: the conversation as a
 * tree of items (a delegated task holds the sub-agent's own items), the todo
 * list, the status line and the pending approval. `reducer.ts` builds it
 * from the thread's events; components only read it.
 */
import {
  ApprovalRequiredEvent,
  Autonomy,
  CellStatus,
  CellwrightEvent,
  EventErrorKind,
  Mode,
  NbOutput,
  NextItem,
  SentSummary,
  Todo,
  TokenEvent,
  Usage
} from '../contract.gen';

/** The status shown in the status line. */
export type DisplayStatus =
  | 'idle'
  | 'running'
  | 'awaiting_approval'
  | 'cancelled'
  | 'failed'
  /** issue 38: the run ended while its cell goes on in the background; it resumes by itself. */
  | 'waiting_for_cell';

export type ToolItemStatus =
  | 'running'
  | 'awaiting_approval'
  | 'ok'
  | 'error'
  | 'rejected'
  | 'cancelled';

/**
 * The `tool_result` summary of a call the user's Stop ended, from servers
 * that predate `tool_result.stopped`: their recorded threads still say so only here.
 */
export const STOPPED_SUMMARY = 'Stopped by the user';

export interface IUserItem {
  kind: 'user';
  key: string;
  text: string;
  /** The run's autonomy (`run_started.autonomy`), when the server said. */
  autonomy: Autonomy | null;
}

export interface IAssistantItem {
  kind: 'assistant';
  key: string;
  agent: string;
  text: string;
  streaming: boolean;
}

export interface IToolItem {
  kind: 'tool';
  key: string;
  /** The tool call id. */
  id: string;
  name: string;
  agent: string;
  args: Record<string, any>;
  needsApproval: boolean;
  status: ToolItemStatus;
  description: string | null;
  summary: string | null;
  /** True when the call ran as a notebook cell (a `cell_started` came for it). */
  isCell: boolean;
  /** The code that ran (from `cell_started`). */
  code: string | null;
  /**
   * Outputs of the call: a cell's outputs, or the live output of another
   * tool that streams (execute_command's stdout / stderr chunks).
   */
  outputs: NbOutput[];
  executionCount: number | null;
  cellStatus: CellStatus | null;
  durationMs: number | null;
  /** The approved cell waits for the kernel to finish another one. */
  waitingForKernel: boolean;
  /** The user's Stop ended the call (`tool_result.stopped`). */
  stopped: boolean;
  /** A cell's undo state (from `cell_started.provenance`, then `step_undone`); null for other steps. */
  undo?: IUndoState | null;
  /** The branch of the rewind that went back over this step (it stays readable there); unset: not rewound. */
  rewoundBy?: string;
  /**
   * The step was copied from the thread this one was forked from: it is
   * that thread's (its undo and rewind are there, not here).
   */
  inherited?: boolean;
  /** explore (issue 37): how it ran, from its `tool_result`; its outputs are the step's scratchpad. */
  exploration?: IExploration;
  /** A long cell's last `cell_progress` (issue 38), while it runs. */
  progress?: ICellProgress;
}

/** Where a running cell stands: elapsed seconds, its last lines, a bar's percent and ETA if it prints one. */
export interface ICellProgress {
  elapsedS: number;
  text: string;
  percent: number | null;
  etaS: number | null;
}

/** How an explore step ran: in the sandbox unasked, or approved where no sandbox could be had. */
export interface IExploration {
  sandboxed: boolean;
  /** What the sandbox stopped, e.g. "network blocked". */
  blocked: string[];
}

export interface IUndoState {
  runId: string;
  undoable: boolean;
  reason: string | null;
  undone: boolean;
}

/**
 * Work delegated to a sub-agent (multi mode): the `task` call and
 * everything the sub-agent did for it, in order.
 */
export interface ISubtaskItem {
  kind: 'subtask';
  key: string;
  /**
   * The `task` tool call's id. Null only for a block the panel opened for
   * a sub-agent's events that name no task (threads recorded before `task_id`).
   */
  id: string | null;
  /** The sub-agent doing the work. */
  agent: string;
  /** The task description. */
  task: string;
  status: ToolItemStatus;
  /** True from the delegation until its result: the block stays open meanwhile. */
  active: boolean;
  /** True once the task call has its result (or its run is over). */
  done: boolean;
  /** The task call's `tool_result` summary: the sub-agent's report. */
  summary: string | null;
  /** The user's Stop ended the task. */
  stopped: boolean;
  /** The sub-agent's report (tokens), tool calls and nested subtasks. */
  items: ConversationItem[];
}

export interface IFinalItem {
  kind: 'final';
  key: string;
  agent: string;
  answer: string;
  nextItems: NextItem[];
}

export interface IErrorItem {
  kind: 'error';
  key: string;
  agent: string;
  errorKind: EventErrorKind;
  message: string;
  retryable: boolean;
  /** kernel_unresponsive: the kernel the user may restart. */
  kernelId: string | null;
}

/** The end of a run: its summary line (what it used) and how it ended. */
export interface IRunEndItem {
  kind: 'run_end';
  key: string;
  status: 'completed' | 'cancelled' | 'failed';
  /** The run's totals (`run_finished.usage`); null when no model call was made. */
  usage: Usage | null;
}

/** What one model call's request sent (its `usage` event's `request`): the step's "what was sent". */
export interface ISentItem {
  kind: 'sent';
  key: string;
  agent: string;
  request: SentSummary;
}

/** Where a forked thread ("try again from here") continues from. */
export interface IForkedItem {
  kind: 'forked';
  key: string;
  /** The thread it was forked from, and its title then. */
  fromThread: string;
  fromTitle: string;
}

export type ConversationItem =
  | IUserItem
  | IAssistantItem
  | IToolItem
  | ISubtaskItem
  | IFinalItem
  | IErrorItem
  | IRunEndItem
  | ISentItem
  | IForkedItem;

/** Token counts of the thread and how full the model's context is (`usage` events). */
export interface IUsageView {
  /** Summed over the thread; null before any model call (or any figure from the server). */
  thread: Usage | null;
  /** The run going on (or the last one). */
  run: Usage | null;
  /** The last call's prompt in tokens, and the history budget. */
  contextTokens: number | null;
  contextBudget: number | null;
  /** Older turns were summarised to fit the context (at least once in this thread). */
  summarized: boolean;
}

export const EMPTY_USAGE: IUsageView = Object.freeze({
  thread: null,
  run: null,
  contextTokens: null,
  contextBudget: null,
  summarized: false
}) as IUsageView;

/** The keys of the subtask blocks from the top level down to a container ([]: the top level). */
export type Path = readonly string[];

export interface IThreadView {
  items: ConversationItem[];
  todos: Todo[];
  status: DisplayStatus;
  /** The agent in control ("main" in single mode). */
  agent: string;
  mode: Mode | null;
  /** The autonomy of the last run (ask / plan / agent); null when unknown. */
  autonomy: Autonomy | null;
  usage: IUsageView;
  runId: string | null;
  pendingApproval: ApprovalRequiredEvent | null;
  /** Where each delegated task's items go: its `task` call id -> the path of its block. */
  tasks: Readonly<Record<string, Path>>;
  /**
   * The container of the assistant message that tokens are streaming into;
   * null when nothing streams. That message is always the last item there.
   */
  streaming: Path | null;
  /** The highest seq folded in; -1 before the first event. */
  lastSeq: number;
  /**
   * Token previews shown ahead of their stored rows, with the view as it was
   * without them: a stored row is folded into `base`, so its text, which
   * repeats its previews', is never shown twice. Null when none is pending.
   */
  previews: IPreviews | null;
}

export interface IPreviews {
  /** The stored-only view that the pending previews are shown on top of. */
  base: IThreadView;
  /** Previews whose stored row has not arrived, in arrival order. */
  pending: readonly PreviewToken[];
}

/** A token preview: live only, named by the seq of the row that will store it again. */
export type PreviewToken = TokenEvent & { stored_as: number };

export const EMPTY_VIEW: IThreadView = Object.freeze({
  items: [],
  todos: [],
  status: 'idle',
  agent: 'main',
  mode: null,
  autonomy: null,
  usage: EMPTY_USAGE,
  runId: null,
  pendingApproval: null,
  tasks: {},
  streaming: null,
  lastSeq: -1,
  previews: null
}) as IThreadView;

/** Agents whose events belong to the top level of the conversation. */
export const ROOT_AGENTS: ReadonlySet<string> = new Set(['', 'main', 'planner']);

/** The planner's delegation tool: shown as a subtask block, not a tool entry. */
export const TASK_TOOL = 'task';

/** True while tokens stream into some assistant message. */
export function isStreaming(view: IThreadView): boolean {
  return view.streaming !== null;
}

/** True while a run is going on or paused for approval. */
export function isActive(status: DisplayStatus): boolean {
  return status === 'running' || status === 'awaiting_approval';
}

/** True for a call the user's Stop ended. */
export function isStopped(item: {
  status: ToolItemStatus;
  summary: string | null;
  stopped?: boolean;
}): boolean {
  return (
    item.stopped === true ||
    (item.status === 'rejected' && (item.summary ?? '').trim() === STOPPED_SUMMARY)
  );
}

/** A token sent ahead of the stored row that carries its text again (`previews=1`). */
export function isPreview(event: CellwrightEvent): event is PreviewToken {
  return event.type === 'token' && event.live_only === true && typeof event.stored_as === 'number';
}

/** An output beyond the server's stored cap: for the notebook, not the timeline. */
export function isLiveOnly(event: CellwrightEvent): boolean {
  return event.type === 'cell_output' && event.live_only === true;
}
