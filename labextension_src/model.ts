/**
 * The panel's state.
 *
 * - `reduceEvent` is a pure function: (thread view, event) -> thread view. The
 *   whole conversation view is a fold of the thread's events, so replaying a
 *   thread's log rebuilds exactly what a live panel showed.
 * - `ThreadModel` owns one thread: its view, its event stream (with
 *   reconnection after the last seq seen) and the replay/live split.
 * - `PanelModel` owns what the panel shows: the bound notebook, the active
 *   thread, the thread history, errors, the server's health and settings.
 *
 * Both emit Lumino signals and have `dispose()`. Nothing here polls.
 */
import { IDisposable } from '@lumino/disposable';
import { ISignal, Signal } from '@lumino/signaling';

import { APIError, CellwrightAPI, errorMessage, isAbort, isTransient } from './api';
import {
  ApprovalDecision,
  CellStatus,
  CellwrightEvent,
  IApprovalRequiredData,
  IHealth,
  INbOutput,
  INextItem,
  IThread,
  ITodo,
  Mode,
  RunFinishedStatus
} from './tokens';

// ================================================================ view state

/** The status shown in the status line. */
export type DisplayStatus =
  | 'idle'
  | 'running'
  | 'awaiting_approval'
  | 'cancelled'
  | 'failed';

export type ToolItemStatus =
  | 'running'
  | 'awaiting_approval'
  | 'ok'
  | 'error'
  | 'rejected'
  | 'cancelled';

/** The `tool_result` summary of a call the user's Stop ended (status "rejected"). */
export const STOPPED_SUMMARY = 'Stopped by the user';

export interface IUserItem {
  kind: 'user';
  key: string;
  text: string;
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
  outputs: INbOutput[];
  executionCount: number | null;
  cellStatus: CellStatus | null;
  durationMs: number | null;
  /** The approved cell waits for the kernel to finish another one. */
  waitingForKernel: boolean;
  /** The user's Stop ended the call (`tool_result.stopped`). */
  stopped: boolean;
}

/**
 * Work delegated to a sub-agent (multi mode): the planner's `task` call and
 * everything the sub-agent did for it, in order.
 */
export interface ISubtaskItem {
  kind: 'subtask';
  key: string;
  /** The `task` tool call's id; null when only an `agent_switch` announced it. */
  id: string | null;
  /** The sub-agent doing the work. */
  agent: string;
  /** The agent that delegated it. */
  parent: string;
  /** The task description. */
  task: string;
  status: ToolItemStatus;
  /** True while the sub-agent has control. */
  active: boolean;
  /** True once control came back (or the task call has its result). */
  done: boolean;
  /** The task call's `tool_result` summary. */
  summary: string | null;
  /** The user's Stop ended the task. */
  stopped: boolean;
  /** The sub-agent's report (tokens), tool calls, errors and nested subtasks. */
  items: ConversationItem[];
}

export interface IFinalItem {
  kind: 'final';
  key: string;
  agent: string;
  answer: string;
  nextItems: INextItem[];
}

export interface IErrorItem {
  kind: 'error';
  key: string;
  agent: string;
  errorKind: string;
  message: string;
  retryable: boolean;
  /** kernel_unresponsive: the kernel the user may restart. */
  kernelId: string | null;
}

export interface IRunEndItem {
  kind: 'run_end';
  key: string;
  status: 'cancelled' | 'failed';
}

export type ConversationItem =
  | IUserItem
  | IAssistantItem
  | IToolItem
  | ISubtaskItem
  | IFinalItem
  | IErrorItem
  | IRunEndItem;

/** One open subtask: where a sub-agent's events go while it has control. */
export interface ISubtaskFrame {
  /** The key of its `ISubtaskItem`. */
  key: string;
  /** The `task` tool call's id, if known. */
  id: string | null;
  agent: string;
  parent: string;
}

export interface IThreadView {
  items: ConversationItem[];
  todos: ITodo[];
  status: DisplayStatus;
  /** The agent in control ("main" in single mode). */
  agent: string;
  mode: Mode | null;
  runId: string | null;
  pendingApproval: IApprovalRequiredData | null;
  /** The open subtasks, outermost first (empty outside a delegation). */
  subtasks: readonly ISubtaskFrame[];
  /**
   * Where the assistant message that tokens are streaming into lives: the
   * keys of the subtasks that contain it ([] for the top level); null when
   * nothing streams. That message is always the last item there.
   */
  streaming: readonly string[] | null;
  /** The highest seq folded in; -1 before the first event. */
  lastSeq: number;
}

export const EMPTY_VIEW: IThreadView = Object.freeze({
  items: [],
  todos: [],
  status: 'idle',
  agent: 'main',
  mode: null,
  runId: null,
  pendingApproval: null,
  subtasks: [],
  streaming: null,
  lastSeq: -1
}) as IThreadView;

/** Agents whose events belong to the top level of the conversation. */
export const ROOT_AGENTS: ReadonlySet<string> = new Set(['', 'main', 'planner']);

/** Tools that the timeline does not show: their effect has its own view. */
const HIDDEN_TOOLS = new Set(['final_answer', 'write_todos']);

/** The planner's delegation tool: shown as a subtask block, not a tool entry. */
export const TASK_TOOL = 'task';

/** Bounds for what the panel keeps of a call's outputs (the notebook keeps all). */
const MAX_OUTPUTS = 100;
const MAX_STREAM_CHARS = 50_000;

/** True while tokens stream into some assistant message. */
export function isStreaming(view: IThreadView): boolean {
  return view.streaming !== null;
}

/** True for a call the user's Stop ended (older servers only say so in the summary). */
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

/** An output beyond the server's stored cap: for the notebook, not the timeline. */
export function isLiveOnly(event: CellwrightEvent): boolean {
  return event.type === 'cell_output' && event.live_only === true;
}

// ---------------------------------------------------------------- tree helpers
//
// Items form a tree: subtask items hold their own items. A "path" is the list
// of subtask keys from the top level down to a container. Every helper is
// pure and returns the same array when nothing changed.

type Path = readonly string[];

function subtaskIndex(items: ConversationItem[], key: string): number {
  for (let i = items.length - 1; i >= 0; i--) {
    const item = items[i];
    if (item.kind === 'subtask' && item.key === key) {
      return i;
    }
  }
  return -1;
}

/** The items of the container at `path` (stops at the deepest level found). */
function containerAt(items: ConversationItem[], path: Path): ConversationItem[] {
  let current = items;
  for (const key of path) {
    const index = subtaskIndex(current, key);
    if (index === -1) {
      break;
    }
    current = (current[index] as ISubtaskItem).items;
  }
  return current;
}

/** Replace the items of the container at `path` with `update(items)`. */
function updateContainer(
  items: ConversationItem[],
  path: Path,
  update: (items: ConversationItem[]) => ConversationItem[]
): ConversationItem[] {
  if (!path.length) {
    return update(items);
  }
  const index = subtaskIndex(items, path[0]);
  if (index === -1) {
    return update(items);
  }
  const subtask = items[index] as ISubtaskItem;
  const inner = updateContainer(subtask.items, path.slice(1), update);
  if (inner === subtask.items) {
    return items;
  }
  const copy = items.slice();
  copy[index] = { ...subtask, items: inner };
  return copy;
}

function appendAt(items: ConversationItem[], path: Path, item: ConversationItem): ConversationItem[] {
  return updateContainer(items, path, container => [...container, item]);
}

/** Update the subtask whose key is `key`, wherever it is. */
function updateSubtaskByKey(
  items: ConversationItem[],
  key: string,
  update: (item: ISubtaskItem) => Partial<ISubtaskItem>
): ConversationItem[] {
  return replaceLast(items, item =>
    item.kind === 'subtask' && item.key === key ? { ...item, ...update(item) } : null
  );
}

/**
 * Replace the last item (searching from the end, into subtasks too) for
 * which `replace` returns a new item.
 */
function replaceLast(
  items: ConversationItem[],
  replace: (item: ConversationItem) => ConversationItem | null
): ConversationItem[] {
  for (let i = items.length - 1; i >= 0; i--) {
    const item = items[i];
    const replaced = replace(item);
    if (replaced) {
      const copy = items.slice();
      copy[i] = replaced;
      return copy;
    }
    if (item.kind === 'subtask') {
      const inner = replaceLast(item.items, replace);
      if (inner !== item.items) {
        const copy = items.slice();
        copy[i] = { ...item, items: inner };
        return copy;
      }
    }
  }
  return items;
}

/** Map every item of the tree (subtasks after their items). */
function mapAll(
  items: ConversationItem[],
  map: (item: ConversationItem) => ConversationItem
): ConversationItem[] {
  let changed = false;
  const out = items.map(item => {
    let current = item;
    if (current.kind === 'subtask') {
      const inner = mapAll(current.items, map);
      if (inner !== current.items) {
        current = { ...current, items: inner };
      }
    }
    const mapped = map(current);
    if (mapped !== item) {
      changed = true;
    }
    return mapped;
  });
  return changed ? out : items;
}

function findToolDeep(items: ConversationItem[], id: string): IToolItem | null {
  for (let i = items.length - 1; i >= 0; i--) {
    const item = items[i];
    if (item.kind === 'tool' && item.id === id) {
      return item;
    }
    if (item.kind === 'subtask') {
      const found = findToolDeep(item.items, id);
      if (found) {
        return found;
      }
    }
  }
  return null;
}

function findSubtaskById(items: ConversationItem[], id: string): ISubtaskItem | null {
  for (let i = items.length - 1; i >= 0; i--) {
    const item = items[i];
    if (item.kind === 'subtask') {
      if (item.id === id) {
        return item;
      }
      const found = findSubtaskById(item.items, id);
      if (found) {
        return found;
      }
    }
  }
  return null;
}

function updateTool(
  items: ConversationItem[],
  id: string,
  update: (item: IToolItem) => Partial<IToolItem>
): ConversationItem[] {
  return replaceLast(items, item =>
    item.kind === 'tool' && item.id === id ? { ...item, ...update(item) } : null
  );
}

/** Close the streaming assistant message at `path`, if any. */
function closeStreaming(items: ConversationItem[], path: Path | null): ConversationItem[] {
  if (path === null) {
    return items;
  }
  return updateContainer(items, path, container => {
    const last = container[container.length - 1];
    if (last && last.kind === 'assistant' && last.streaming) {
      return [...container.slice(0, -1), { ...last, streaming: false }];
    }
    return container;
  });
}

function samePath(a: Path | null, b: Path): boolean {
  return a !== null && a.length === b.length && a.every((key, i) => key === b[i]);
}

function newTool(
  event: { seq: number; agent: string; id: string; name: string; args: Record<string, any> },
  status: ToolItemStatus,
  needsApproval: boolean
): IToolItem {
  return {
    kind: 'tool',
    key: `tool-${event.id}`,
    id: event.id,
    name: event.name,
    agent: event.agent,
    args: event.args ?? {},
    needsApproval,
    status,
    description: null,
    summary: null,
    isCell: false,
    code: null,
    outputs: [],
    executionCount: null,
    cellStatus: null,
    durationMs: null,
    waitingForKernel: false,
    stopped: false
  };
}

function newSubtask(fields: {
  key: string;
  id: string | null;
  agent: string;
  parent: string;
  task: string;
  status?: ToolItemStatus;
}): ISubtaskItem {
  return {
    kind: 'subtask',
    key: fields.key,
    id: fields.id,
    agent: fields.agent,
    parent: fields.parent,
    task: fields.task,
    status: fields.status ?? 'running',
    active: true,
    done: false,
    summary: null,
    stopped: false,
    items: []
  };
}

/** The subtask of a `task` tool call, from its arguments. */
function taskSubtask(
  event: { id: string; agent: string; args: Record<string, any> },
  status: ToolItemStatus
): ISubtaskItem {
  const args = event.args ?? {};
  return newSubtask({
    key: `task-${event.id}`,
    id: event.id,
    agent: typeof args.agent === 'string' ? args.agent : '',
    parent: event.agent || 'planner',
    task: typeof args.description === 'string' ? args.description : '',
    status
  });
}

function streamText(text: string | string[]): string {
  return Array.isArray(text) ? text.join('') : String(text ?? '');
}

/** Append one output, merging consecutive stream outputs of the same name. */
export function appendOutput(outputs: INbOutput[], output: INbOutput): INbOutput[] {
  const last = outputs[outputs.length - 1];
  if (
    last &&
    last.output_type === 'stream' &&
    output.output_type === 'stream' &&
    last.name === output.name
  ) {
    let text = streamText(last.text) + streamText(output.text);
    if (text.length > MAX_STREAM_CHARS) {
      text = '…' + text.slice(text.length - MAX_STREAM_CHARS);
    }
    return [...outputs.slice(0, -1), { ...last, text }];
  }
  const next = [...outputs, output];
  return next.length > MAX_OUTPUTS ? next.slice(next.length - MAX_OUTPUTS) : next;
}

const FINISHED_STATUS: Record<RunFinishedStatus, DisplayStatus> = {
  completed: 'idle',
  awaiting_approval: 'awaiting_approval',
  cancelled: 'cancelled',
  failed: 'failed'
};

// ---------------------------------------------------------------- routing

/** The mutable part of a fold step: the item tree and the open subtasks. */
interface IState {
  items: ConversationItem[];
  frames: readonly ISubtaskFrame[];
}

function pathOf(frames: readonly ISubtaskFrame[], depth: number): string[] {
  return frames.slice(0, depth).map(frame => frame.key);
}

/**
 * How many open subtasks deep an agent's events go; null for a sub-agent no
 * open subtask belongs to.
 */
function depthOf(frames: readonly ISubtaskFrame[], agent: string): number | null {
  for (let i = frames.length - 1; i >= 0; i--) {
    if (frames[i].agent === agent) {
      return i + 1;
    }
  }
  if (ROOT_AGENTS.has(agent)) {
    return 0;
  }
  for (let i = frames.length - 1; i >= 0; i--) {
    if (frames[i].parent === agent) {
      return i;
    }
  }
  return null;
}

/** Close the open subtasks from `depth` down: control went back up. */
function popFrames(state: IState, depth: number): void {
  for (const frame of state.frames.slice(depth)) {
    state.items = updateSubtaskByKey(state.items, frame.key, item => ({
      active: false,
      done: true,
      status: item.status === 'running' ? 'ok' : item.status
    }));
  }
  if (state.frames.length > depth) {
    state.frames = state.frames.slice(0, depth);
  }
}

/** Open (or reopen) a subtask item as the innermost frame. */
function pushFrame(state: IState, item: ISubtaskItem): void {
  state.items = updateSubtaskByKey(state.items, item.key, () => ({ active: true }));
  state.frames = [
    ...state.frames,
    { key: item.key, id: item.id, agent: item.agent, parent: item.parent }
  ];
}

/**
 * The path of the container an agent's new items go to. A sub-agent with
 * no open subtask gets one: the last unfinished subtask of that agent at the
 * innermost level (its `task` call came without an `agent_switch`), else a
 * new one.
 */
function routeTo(state: IState, agent: string, seq: number): string[] {
  const depth = depthOf(state.frames, agent);
  if (depth !== null) {
    return pathOf(state.frames, depth);
  }
  const parentPath = pathOf(state.frames, state.frames.length);
  const container = containerAt(state.items, parentPath);
  let subtask: ISubtaskItem | null = null;
  for (let i = container.length - 1; i >= 0; i--) {
    const item = container[i];
    if (item.kind === 'subtask' && !item.done && (item.agent === agent || !item.agent)) {
      subtask = item;
      break;
    }
  }
  if (subtask) {
    if (!subtask.agent) {
      state.items = updateSubtaskByKey(state.items, subtask.key, () => ({ agent }));
      subtask = { ...subtask, agent };
    }
  } else {
    const top = state.frames[state.frames.length - 1];
    subtask = newSubtask({
      key: `subtask-${seq}`,
      id: null,
      agent,
      parent: top ? top.agent : 'planner',
      task: ''
    });
    state.items = appendAt(state.items, parentPath, subtask);
  }
  pushFrame(state, subtask);
  return [...parentPath, subtask.key];
}

/** `agent_switch`: a delegation (into a subtask) or a return (out of one). */
function applySwitch(state: IState, from: string, to: string, task: string, seq: number): void {
  const frames = state.frames;
  let fromIndex = -1;
  for (let i = frames.length - 1; i >= 0; i--) {
    if (frames[i].agent === from) {
      fromIndex = i;
      break;
    }
  }
  const returning =
    fromIndex >= 0 &&
    to !== from &&
    (ROOT_AGENTS.has(to) ||
      frames[fromIndex].parent === to ||
      frames.slice(0, fromIndex).some(frame => frame.agent === to));
  if (returning) {
    let depth = 0;
    for (let j = fromIndex - 1; j >= 0; j--) {
      if (frames[j].agent === to) {
        depth = j + 1;
        break;
      }
    }
    popFrames(state, depth);
    return;
  }
  if (!to) {
    return;
  }
  // A delegation from `from` to `to`.
  const path = routeTo(state, from, seq);
  const depth = path.length;
  const open = state.frames[depth];
  if (open && open.agent === to) {
    // Already in that subtask: the delegating step re-ran after an approval.
    popFrames(state, depth + 1);
    if (task) {
      state.items = updateSubtaskByKey(state.items, open.key, item => ({
        task: item.task || task
      }));
    }
    return;
  }
  popFrames(state, depth);
  const container = containerAt(state.items, path);
  let subtask: ISubtaskItem | null = null;
  for (let i = container.length - 1; i >= 0; i--) {
    const item = container[i];
    if (item.kind === 'subtask' && !item.done && (item.agent === to || !item.agent)) {
      subtask = item;
      break;
    }
  }
  if (subtask) {
    const update = { agent: to, task: subtask.task || task, active: true };
    state.items = updateSubtaskByKey(state.items, subtask.key, () => update);
    subtask = { ...subtask, ...update };
  } else {
    subtask = newSubtask({ key: `subtask-${seq}`, id: null, agent: to, parent: from, task });
    state.items = appendAt(state.items, path, subtask);
  }
  pushFrame(state, subtask);
}

/** End every running call and open subtask (a run that is over). */
function settle(items: ConversationItem[], status: ToolItemStatus): ConversationItem[] {
  return mapAll(items, item => {
    if (item.kind === 'tool') {
      return item.status === 'running' || item.status === 'awaiting_approval'
        ? { ...item, status }
        : item;
    }
    if (item.kind === 'subtask') {
      const running = item.status === 'running' || item.status === 'awaiting_approval';
      return running || item.active || !item.done
        ? { ...item, status: running ? status : item.status, active: false, done: true }
        : item;
    }
    return item;
  });
}

// ---------------------------------------------------------------- the fold

/**
 * Fold one event into a thread view. Pure: returns a new view (or the same
 * one when the event changes nothing, e.g. a seq already folded in).
 *
 * In multi mode a sub-agent's events (its `agent` field) go into the subtask
 * block of the delegation that handed it control (`agent_switch`, or the
 * planner's `task` call); everything else goes to the top level.
 */
export function reduceEvent(view: IThreadView, event: CellwrightEvent): IThreadView {
  const seq = event.seq;
  if (Number.isFinite(seq) && seq <= view.lastSeq) {
    return view; // already seen: reconnects never apply an event twice
  }
  if (isLiveOnly(event)) {
    return view; // beyond the stored cap: the overflow summary stands for it
  }
  const agent = typeof event.agent === 'string' ? event.agent : '';
  const next: IThreadView = {
    ...view,
    lastSeq: Number.isFinite(seq) ? seq : view.lastSeq
  };
  const state: IState = { items: view.items, frames: view.subtasks };
  const key = `${event.type}-${seq}`;

  // Tokens extend the streaming message; any other event ends it.
  if (event.type !== 'token') {
    state.items = closeStreaming(state.items, view.streaming);
    next.streaming = null;
  }

  switch (event.type) {
    case 'run_started': {
      // A run_started right after an approval pause resumes the same request.
      const resuming = view.status === 'awaiting_approval';
      if (resuming) {
        state.items = mapAll(state.items, item =>
          (item.kind === 'tool' || item.kind === 'subtask') && item.status === 'awaiting_approval'
            ? { ...item, status: 'running' }
            : item
        );
      } else {
        if (state.frames.length) {
          // The previous run ended without its run_finished.
          state.items = settle(state.items, 'cancelled');
          state.frames = [];
        }
        if (event.message) {
          state.items = [...state.items, { kind: 'user', key, text: event.message }];
        }
      }
      next.status = 'running';
      next.mode = event.mode ?? view.mode;
      next.runId = event.run_id ?? null;
      next.pendingApproval = null;
      break;
    }
    case 'token': {
      const depth = depthOf(state.frames, agent);
      if (depth !== null && view.streaming !== null) {
        const path = pathOf(state.frames, depth);
        const container = containerAt(state.items, path);
        const last = container[container.length - 1];
        if (
          samePath(view.streaming, path) &&
          last &&
          last.kind === 'assistant' &&
          last.streaming &&
          last.agent === agent
        ) {
          state.items = updateContainer(state.items, path, c => [
            ...c.slice(0, -1),
            { ...last, text: last.text + event.text }
          ]);
          break;
        }
      }
      state.items = closeStreaming(state.items, view.streaming);
      const path = routeTo(state, agent, seq);
      state.items = appendAt(state.items, path, {
        kind: 'assistant',
        key,
        agent,
        text: event.text ?? '',
        streaming: true
      });
      next.streaming = path;
      break;
    }
    case 'tool_call': {
      if (HIDDEN_TOOLS.has(event.name)) {
        break;
      }
      const path = routeTo(state, agent, seq);
      if (event.name === TASK_TOOL) {
        const existing = findSubtaskById(state.items, event.id);
        if (existing) {
          const fresh = taskSubtask(event, existing.status);
          state.items = updateSubtaskByKey(state.items, existing.key, () => ({
            agent: existing.agent || fresh.agent,
            task: existing.task || fresh.task
          }));
        } else {
          const fresh = taskSubtask(event, 'running');
          // An agent_switch that came first already opened a block for it: adopt that one.
          const container = containerAt(state.items, path);
          let adopted: ISubtaskItem | null = null;
          for (let i = container.length - 1; i >= 0; i--) {
            const item = container[i];
            if (item.kind === 'subtask' && item.id === null && !item.done && item.agent === fresh.agent) {
              adopted = item;
              break;
            }
          }
          if (adopted) {
            const key = adopted.key;
            state.items = updateSubtaskByKey(state.items, key, item => ({
              id: event.id,
              task: item.task || fresh.task
            }));
            state.frames = state.frames.map(frame =>
              frame.key === key ? { ...frame, id: event.id } : frame
            );
          } else {
            state.items = appendAt(state.items, path, fresh);
          }
        }
        break;
      }
      // "awaiting approval" comes with approval_required (an auto-approved call never gets one).
      if (!findToolDeep(state.items, event.id)) {
        state.items = appendAt(state.items, path, newTool(event, 'running', !!event.needs_approval));
      } else {
        state.items = updateTool(state.items, event.id, () => ({ args: event.args ?? {} }));
      }
      break;
    }
    case 'approval_required': {
      const path = routeTo(state, agent, seq);
      const subtask = findSubtaskById(state.items, event.id);
      if (subtask || event.name === TASK_TOOL) {
        if (subtask) {
          state.items = updateSubtaskByKey(state.items, subtask.key, () => ({
            status: 'awaiting_approval'
          }));
        } else {
          state.items = appendAt(state.items, path, taskSubtask(event, 'awaiting_approval'));
        }
      } else {
        if (!findToolDeep(state.items, event.id)) {
          state.items = appendAt(state.items, path, newTool(event, 'awaiting_approval', true));
        }
        state.items = updateTool(state.items, event.id, () => ({
          status: 'awaiting_approval',
          needsApproval: true,
          args: event.args ?? {},
          description: event.description ?? null
        }));
      }
      next.pendingApproval = event;
      next.status = 'awaiting_approval';
      break;
    }
    case 'cell_started': {
      if (!findToolDeep(state.items, event.id)) {
        const path = routeTo(state, agent, seq);
        state.items = appendAt(
          state.items,
          path,
          newTool({ ...event, name: 'run_cell', args: { code: event.code } }, 'running', false)
        );
      }
      state.items = updateTool(state.items, event.id, () => ({
        status: 'running',
        isCell: true,
        code: event.code,
        outputs: [],
        waitingForKernel: event.waiting_for_kernel === true
      }));
      break;
    }
    case 'cell_output': {
      // A cell's output, or the live output of another tool (execute_command).
      state.items = updateTool(state.items, event.id, item => ({
        outputs: appendOutput(item.outputs, event.output)
      }));
      break;
    }
    case 'cell_finished': {
      state.items = updateTool(state.items, event.id, () => ({
        executionCount: event.execution_count ?? null,
        cellStatus: event.status,
        durationMs: event.duration_ms ?? null,
        waitingForKernel: false
      }));
      break;
    }
    case 'tool_result': {
      const status = event.status;
      const summary = event.summary ?? null;
      const stopped = event.stopped === true;
      state.items = replaceLast(state.items, item => {
        if (item.kind === 'tool' && item.id === event.id) {
          return { ...item, status, summary, stopped, waitingForKernel: false };
        }
        if (item.kind === 'subtask' && item.id === event.id) {
          return { ...item, status, summary, stopped, active: false, done: true };
        }
        return null;
      });
      const frameIndex = state.frames.findIndex(frame => frame.id === event.id);
      if (frameIndex >= 0) {
        popFrames(state, frameIndex);
      }
      if (view.pendingApproval && view.pendingApproval.id === event.id) {
        next.pendingApproval = null;
      }
      break;
    }
    case 'todos': {
      next.todos = Array.isArray(event.todos) ? event.todos : [];
      break;
    }
    case 'agent_switch': {
      applySwitch(state, event.from ?? '', event.to ?? '', event.task ?? '', seq);
      break;
    }
    case 'final': {
      const answer = event.answer ?? '';
      const path = routeTo(state, agent, seq);
      if (path.length) {
        // A sub-agent's final answer is its report, inside its block.
        const container = containerAt(state.items, path);
        const last = container[container.length - 1];
        if (!(last && last.kind === 'assistant' && last.text.trim() === answer.trim()) && answer) {
          state.items = appendAt(state.items, path, {
            kind: 'assistant',
            key,
            agent,
            text: answer,
            streaming: false
          });
        }
        break;
      }
      const last = state.items[state.items.length - 1];
      // When the answer was streamed as tokens too, show it once.
      if (last && last.kind === 'assistant' && last.text.trim() === answer.trim()) {
        state.items = state.items.slice(0, -1);
      }
      state.items = [
        ...state.items,
        {
          kind: 'final',
          key,
          agent,
          answer,
          nextItems: Array.isArray(event.next_items) ? event.next_items : []
        }
      ];
      break;
    }
    case 'error': {
      // Errors stay at the top level, where they are seen even when a subtask is folded.
      state.items = [
        ...state.items,
        {
          kind: 'error',
          key,
          agent,
          errorKind: event.kind,
          message: event.message,
          retryable: !!event.retryable,
          kernelId: typeof event.kernel_id === 'string' ? event.kernel_id : null
        }
      ];
      break;
    }
    case 'run_finished': {
      const status = FINISHED_STATUS[event.status] ?? 'idle';
      next.status = status;
      if (status !== 'awaiting_approval') {
        next.pendingApproval = null;
        state.items = settle(state.items, status === 'idle' ? 'ok' : 'cancelled');
        state.frames = [];
      }
      if (status === 'cancelled' || status === 'failed') {
        state.items = [...state.items, { kind: 'run_end', key, status }];
      }
      break;
    }
    default:
      break; // an event type this frontend does not know: only its seq counts
  }
  next.items = state.items;
  next.subtasks = state.frames;
  // The agent in control: the innermost open subtask's, else the event's
  // (in multi mode the top level is the planner's, whatever the run's own events say).
  const top = state.frames[state.frames.length - 1];
  if (top) {
    next.agent = top.agent;
  } else if (event.type === 'agent_switch' && event.to) {
    next.agent = event.to;
  } else if (agent) {
    next.agent = agent;
  }
  if (next.mode === 'multi' && (next.agent === 'main' || !next.agent)) {
    next.agent = 'planner';
  }
  return next;
}

/** Fold a list of events. */
export function reduceEvents(view: IThreadView, events: Iterable<CellwrightEvent>): IThreadView {
  let current = view;
  for (const event of events) {
    current = reduceEvent(current, event);
  }
  return current;
}

/** True while a run is going on or paused for approval. */
export function isActive(status: DisplayStatus): boolean {
  return status === 'running' || status === 'awaiting_approval';
}

// ================================================================ ThreadModel

/**
 * How long the stream must be quiet after it opens before the panel takes
 * the thread's backlog as replayed. Events up to then are "replay" (the view
 * shows them, the notebook is not touched); later ones are "live".
 */
export const REPLAY_QUIET_MS = 500;

/** Reconnection backoff: 0.5 s, 1 s, 2 s ... up to 15 s. */
const BACKOFF_MIN_MS = 500;
const BACKOFF_MAX_MS = 15_000;
/** Normal closes with no event before the run is over, before giving up. */
const MAX_EMPTY_CLOSES = 5;

export type ConnectionState = 'closed' | 'open' | 'reconnecting';

export interface ILiveEvent {
  thread: ThreadModel;
  event: CellwrightEvent;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise(resolve => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done);
  });
}

export namespace ThreadModel {
  export interface IOptions {
    api: CellwrightAPI;
    threadId: string;
    title?: string | null;
    notebookPath?: string | null;
  }
}

/** One thread: its folded view and its event stream. */
export class ThreadModel implements IDisposable {
  constructor(options: ThreadModel.IOptions) {
    this._api = options.api;
    this.threadId = options.threadId;
    this.title = options.title ?? null;
    this.notebookPath = options.notebookPath ?? null;
  }

  readonly threadId: string;
  title: string | null;
  notebookPath: string | null;

  get view(): IThreadView {
    return this._view;
  }

  /** Emitted (coalesced) when the view or the connection state changes. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /** Every event that arrives after the replay of the backlog, synchronously. */
  get liveEvent(): ISignal<this, CellwrightEvent> {
    return this._liveEvent;
  }

  /** Emitted once when the event stream loop ends (run over, error, stop). */
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

  /** True while the event stream loop runs. */
  get streaming(): boolean {
    return this._controller !== null;
  }

  /** True while the backlog of a (re)opened thread is being replayed. */
  get catchingUp(): boolean {
    return this._catchingUp;
  }

  /** Ids of approvals decided from this panel and accepted by the server. */
  isDecided(toolCallId: string): boolean {
    return this._decided.has(toolCallId);
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
   * @param options.replay the events that arrive before the stream is quiet
   *   are the thread's backlog: they rebuild the view but are not "live".
   * @param options.expectRun a run was just started (or resumed): keep
   *   reconnecting until its `run_started` arrives, even if the server closes
   *   the first stream before it has anything to send.
   */
  connect(options: { replay?: boolean; expectRun?: boolean } = {}): void {
    if (this._isDisposed) {
      return;
    }
    if (options.expectRun) {
      this._expectRun = true;
    }
    if (this._controller) {
      this._again = true; // the running loop reconnects once more before ending
      return;
    }
    const controller = new AbortController();
    this._controller = controller;
    void this._loop(controller, !!options.replay);
  }

  /** Close the stream (the thread's run goes on on the server). */
  disconnect(): void {
    this._controller?.abort();
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
      return;
    }
    if (event.type === 'run_started') {
      this._expectRun = false;
    }
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
    clearTimeout(this._quietTimer);
    clearTimeout(this._changedTimer);
    Signal.clearData(this);
  }

  private _shouldReconnect(): boolean {
    return this._view.status === 'running' || this._expectRun;
  }

  private async _loop(controller: AbortController, replay: boolean): Promise<void> {
    const signal = controller.signal;
    let failures = 0;
    let emptyCloses = 0;
    this._catchingUp = replay;
    try {
      while (!signal.aborted) {
        let received = 0;
        this._again = false;
        try {
          const last = this._view.lastSeq;
          await this._api.streamEvents(this.threadId, {
            after: last < 0 ? null : last,
            signal,
            onOpen: () => {
              failures = 0;
              this._setConnection('open');
              if (this._catchingUp) {
                this._armQuietTimer();
              }
            },
            onEvent: event => {
              received++;
              if ((event.type as string) === 'caught_up') {
                this._endCatchUp(); // the server says the backlog is over: what follows is live
                return;
              }
              if (this._catchingUp) {
                this._armQuietTimer();
              }
              this.applyEvent(event, !this._catchingUp);
            }
          });
          // The server closed the stream normally.
          this._endCatchUp();
          if (!this._again && !this._shouldReconnect()) {
            break;
          }
          if (this._again || received > 0) {
            emptyCloses = 0;
            continue;
          }
          if (++emptyCloses >= MAX_EMPTY_CLOSES) {
            this._expectRun = false;
            throw new Error(
              'The event stream keeps closing before the run has finished. ' +
                'Reopen the thread from the history to refresh it.'
            );
          }
        } catch (error) {
          if (signal.aborted || isAbort(error)) {
            break;
          }
          this._endCatchUp();
          if (!isTransient(error)) {
            this._expectRun = false;
            this._errorRaised.emit(error);
            break;
          }
          failures++;
          this._lastError = errorMessage(error);
        }
        this._setConnection('reconnecting');
        const delay = Math.min(
          BACKOFF_MAX_MS,
          BACKOFF_MIN_MS * 2 ** Math.max(0, failures + emptyCloses - 1)
        );
        await sleep(delay, signal);
      }
    } finally {
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

  /** The message of the last network failure while reconnecting. */
  get lastError(): string | null {
    return this._connection === 'reconnecting' ? this._lastError : null;
  }

  private _armQuietTimer(): void {
    clearTimeout(this._quietTimer);
    this._quietTimer = setTimeout(() => this._endCatchUp(), REPLAY_QUIET_MS);
  }

  private _endCatchUp(): void {
    clearTimeout(this._quietTimer);
    if (this._catchingUp) {
      this._catchingUp = false;
      this._emitChanged(false);
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
  private _controller: AbortController | null = null;
  private _connection: ConnectionState = 'closed';
  private _catchingUp = false;
  private _expectRun = false;
  private _again = false;
  private _lastError: string | null = null;
  private _quietTimer: ReturnType<typeof setTimeout> | undefined;
  private _changedTimer: ReturnType<typeof setTimeout> | undefined;
  private _decided = new Set<string>();
  private _isDisposed = false;
  private _changed = new Signal<this, void>(this);
  private _liveEvent = new Signal<this, CellwrightEvent>(this);
  private _streamEnded = new Signal<this, void>(this);
  private _errorRaised = new Signal<this, unknown>(this);
}

// ================================================================ PanelModel

/** The notebook the panel is bound to. */
export interface INotebookBinding {
  path: string;
  /** The id of the notebook's kernel right now, if any. */
  kernelId(): string | undefined;
}

export interface IPanelError {
  id: number;
  message: string;
}

/** A minimal key-value store (window.localStorage in the browser). */
export interface IKeyValueStore {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

const STORAGE_PREFIX = 'cellwright:last-thread:';

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
    this._storage = options.storage ?? null;
    this._mode = options.mode ?? 'single';
    this._autoScroll = options.autoScroll ?? true;
  }

  readonly api: CellwrightAPI;
  readonly version: string;

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
  get pendingApproval(): IApprovalRequiredData | null {
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

  get health(): IHealth | null {
    return this._health;
  }

  /** Null until the thread history was fetched once. */
  get threadList(): readonly IThread[] | null {
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
    } catch (error) {
      this._health = null;
      this.reportError(error, 'Cellwright server check failed');
    }
    this._changed.emit();
  }

  /** Notices derived from the health answer. */
  get notices(): string[] {
    const health = this._health;
    if (!health) {
      return [];
    }
    const notices: string[] = [];
    if (health.llm_configured === false) {
      notices.push(
        'No language model is configured. Set OPENAI_BASE_URL, OPENAI_API_KEY and ' +
          'CELLWRIGHT_MODEL in the environment of `jupyter lab`, or c.Cellwright.base_url, ' +
          'c.Cellwright.api_key and c.Cellwright.model in jupyter_server_config.py, ' +
          'then restart JupyterLab.'
      );
    }
    if (health.version && health.version !== this.version) {
      notices.push(
        `Version mismatch: the Cellwright panel is ${this.version} but the server ` +
          `extension is ${health.version}. Reinstall Cellwright and reload the page.`
      );
    }
    return notices;
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
    if (samePath && this._bound) {
      this._changed.emit();
      return;
    }
    this._bound = true;
    const remembered = binding ? this._recall(binding.path) : null;
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
    const remembered = this._recall(binding.path);
    if (remembered) {
      this._forget(binding.path);
      this._remember(newPath, remembered);
    }
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
      this._forget(this._notebook.path);
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
    }
    if (this._notebook) {
      this._remember(this._notebook.path, threadId);
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
          this._remember(notebook.path, thread.threadId);
        }
        this._setActive(thread);
        this._threadList = null; // stale now
      }
      const kernelId = notebook?.kernelId();
      await this.api.startRun(thread.threadId, {
        message,
        mode: this._mode,
        ...(notebook ? { notebook_path: notebook.path } : {}),
        ...(kernelId ? { kernel_id: kernelId } : {})
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
    extra: { args?: Record<string, unknown>; reason?: string } = {}
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
      await this.api.decide(thread.threadId, pending.id, {
        decision,
        ...(extra.args ? { args: extra.args } : {}),
        ...(extra.reason ? { reason: extra.reason } : {}),
        ...(kernelId ? { kernel_id: kernelId } : {})
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
    for (const thread of this._threads.values()) {
      thread.dispose();
    }
    this._threads.clear();
    this._active = null;
    Signal.clearData(this);
  }

  // ------------------------------------------------------------ private

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
        if (this._recall(this._notebook.path) === thread.threadId) {
          this._forget(this._notebook.path);
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

  private _recall(path: string): string | null {
    try {
      return this._storage?.getItem(STORAGE_PREFIX + path) ?? null;
    } catch {
      return null;
    }
  }

  private _remember(path: string, threadId: string): void {
    try {
      this._storage?.setItem(STORAGE_PREFIX + path, threadId);
    } catch {
      // storage full or disabled: the panel still works, it forgets on reload
    }
  }

  private _forget(path: string): void {
    try {
      this._storage?.removeItem(STORAGE_PREFIX + path);
    } catch {
      // see _remember
    }
  }

  private _storage: IKeyValueStore | null;
  private _notebook: INotebookBinding | null = null;
  private _bound = false;
  private _active: ThreadModel | null = null;
  private _threads = new Map<string, ThreadModel>();
  private _threadList: IThread[] | null = null;
  private _threadListLoading = false;
  private _errors: IPanelError[] = [];
  private _errorId = 0;
  private _health: IHealth | null = null;
  private _mode: Mode;
  private _autoScroll: boolean;
  private _sending = false;
  private _deciding = false;
  private _isDisposed = false;
  private _changed = new Signal<this, void>(this);
  private _liveEvent = new Signal<this, ILiveEvent>(this);
  private _modeChanged = new Signal<this, Mode>(this);
}
