/**
 * The thread view as a fold of the thread's events: `reduceEvent(view,
 * event)` is pure (no Lumino, no I/O), so replaying a thread's log rebuilds
 * exactly what a live panel showed, and recorded streams test it. Where
 * an event's items go is eventRouting.ts; the usage figures, threadUsage.ts.
 */
import { CellwrightEvent, NbOutput, RunStatus } from '../contract.gen';
import { addBlock, agentAfter, containerOf, IDraft, newBlock } from './eventRouting';
import {
  appendAt,
  closeStreaming,
  containerAt,
  findTool,
  mapAll,
  replaceLast,
  samePath,
  streamingAt,
  updateContainer,
  updateTool
} from './tree';
import {
  ConversationItem,
  DisplayStatus,
  isLiveOnly,
  isPreview,
  IThreadView,
  IToolItem,
  PreviewToken,
  ROOT_AGENTS,
  TASK_TOOL,
  ToolItemStatus
} from './view';
import { undoneState, undoStateOf } from './review';
import { exploredFields } from './explore';
import { usageAfter } from './threadUsage';

/** Tools that the timeline does not show: their effect has its own view. */
const HIDDEN_TOOLS = new Set(['final_answer', 'write_todos']);

/** Bounds for what the panel keeps of a call's outputs (the notebook keeps all). */
const MAX_OUTPUTS = 100;
const MAX_STREAM_CHARS = 50_000;

const FINISHED_STATUS: Record<RunStatus, DisplayStatus> = {
  completed: 'idle',
  awaiting_approval: 'awaiting_approval',
  cancelled: 'cancelled',
  failed: 'failed',
  waiting_for_cell: 'waiting_for_cell'
};

function newTool(
  event: { agent: string; id: string; name: string; args?: Record<string, any> },
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

function streamText(text: string | string[]): string {
  return Array.isArray(text) ? text.join('') : String(text ?? '');
}

/** Append one output, merging consecutive stream outputs of the same name. */
function appendOutput(outputs: NbOutput[], output: NbOutput): NbOutput[] {
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

/** End every running call and open block (a run that is over). */
function settle(items: ConversationItem[], status: ToolItemStatus): ConversationItem[] {
  return mapAll(items, item => {
    if (item.kind !== 'tool' && item.kind !== 'subtask') {
      return item;
    }
    const pending = item.status === 'running' || item.status === 'awaiting_approval';
    if (item.kind === 'tool') {
      return pending ? { ...item, status } : item;
    }
    return pending || item.active || !item.done
      ? { ...item, status: pending ? status : item.status, active: false, done: true }
      : item;
  });
}

// ---------------------------------------------------------------- the fold

/**
 * Fold one event into a thread view. Returns a new view, or the same one
 * when the event changes nothing (a seq already folded in: a replay that
 * overlaps the live stream applies each event once).
 *
 * A token preview is shown at once, on top of the stored-only view; every
 * other event is folded into that view and the previews it has not made
 * stale are shown again on top. The stored row N carries the text of the
 * previews with `stored_as` <= N again, so the result is what the stored
 * events alone give, whether their previews came (live) or not (a replay).
 */
export function reduceEvent(view: IThreadView, event: CellwrightEvent): IThreadView {
  if (isPreview(event)) {
    if (event.stored_as <= view.lastSeq) {
      return view; // its row is folded in already
    }
    const base = view.previews?.base ?? view;
    return {
      ...showPreview(view, event),
      previews: { base, pending: [...(view.previews?.pending ?? []), event] }
    };
  }
  if (!view.previews) {
    return foldStored(view, event);
  }
  const { base, pending } = view.previews;
  const folded = foldStored(base, event);
  if (folded === base) {
    return view;
  }
  // A row stored, or any later event, ends its previews: text of a row never stored goes too.
  const kept = pending.filter(preview => preview.stored_as > folded.lastSeq);
  return kept.reduce<IThreadView>(
    (shown, preview) => ({
      ...showPreview(shown, preview),
      previews: { base: folded, pending: [...(shown.previews?.pending ?? []), preview] }
    }),
    folded
  );
}

/** A preview folded as its stored row would be, except that it does not move the resume point. */
function showPreview(view: IThreadView, preview: PreviewToken): IThreadView {
  const shown = foldStored(view, { ...preview, seq: preview.stored_as, live_only: undefined });
  return { ...shown, lastSeq: view.lastSeq };
}

function foldStored(view: IThreadView, event: CellwrightEvent): IThreadView {
  // Only a stored event has a seq (a live-only output has none, or NaN from the stream).
  const seq = typeof event.seq === 'number' && Number.isFinite(event.seq) ? event.seq : null;
  if (seq !== null && seq <= view.lastSeq) {
    return view;
  }
  if (isLiveOnly(event)) {
    return view; // beyond the stored cap: the overflow summary stands for it
  }
  const agent = typeof event.agent === 'string' ? event.agent : '';
  const next: IThreadView = {
    ...view,
    lastSeq: seq ?? view.lastSeq,
    usage: usageAfter(view, event)
  };
  const draft: IDraft = { items: view.items, tasks: view.tasks };
  const key = `${event.type}-${seq}`;

  // Tokens extend the streaming message; any other event ends it.
  if (event.type !== 'token') {
    draft.items = closeStreaming(draft.items, view.streaming);
    next.streaming = null;
  }

  switch (event.type) {
    case 'run_started': {
      if (view.status === 'waiting_for_cell' && event.message) {
        // The run goes on after its background cell, with what the user wrote meanwhile.
        draft.items = [
          ...draft.items,
          { kind: 'user', key, text: event.message, autonomy: event.autonomy ?? null }
        ];
      } else if (view.status === 'awaiting_approval') {
        // The decision resumes the paused run: the same request, no new message.
        draft.items = mapAll(draft.items, item =>
          item.kind === 'tool' && item.status === 'awaiting_approval'
            ? { ...item, status: 'running' }
            : item
        );
      } else if (view.status !== 'waiting_for_cell') {
        if (view.status === 'running') {
          // The previous run ended without its run_finished.
          draft.items = settle(draft.items, 'cancelled');
        }
        if (event.message) {
          draft.items = [
            ...draft.items,
            { kind: 'user', key, text: event.message, autonomy: event.autonomy ?? null }
          ];
        }
      }
      next.status = 'running';
      next.mode = event.mode ?? view.mode;
      next.autonomy = event.autonomy ?? view.autonomy;
      next.runId = event.run_id ?? null;
      next.pendingApproval = null;
      break;
    }
    case 'token': {
      const path = containerOf(draft, event, agent);
      const open = samePath(view.streaming, path) ? streamingAt(draft.items, path) : null;
      if (open && open.agent === agent) {
        const text = open.text + event.text;
        draft.items = updateContainer(draft.items, path, c => [
          ...c.slice(0, -1),
          { ...open, text }
        ]);
      } else {
        draft.items = appendAt(closeStreaming(draft.items, view.streaming), path, {
          kind: 'assistant',
          key,
          agent,
          text: event.text ?? '',
          streaming: true
        });
      }
      next.streaming = path;
      break;
    }
    case 'tool_call': {
      if (HIDDEN_TOOLS.has(event.name)) {
        break;
      }
      const path = containerOf(draft, event, agent);
      if (event.name === TASK_TOOL) {
        if (!draft.tasks[event.id]) {
          const args = event.args ?? {};
          const sub = typeof args.agent === 'string' ? args.agent : '';
          const task = typeof args.description === 'string' ? args.description : '';
          addBlock(draft, path, newBlock(`task-${event.id}`, event.id, sub, task));
        }
        break;
      }
      // "awaiting approval" comes with approval_required (an auto-approved call never gets one).
      draft.items = findTool(draft.items, event.id)
        ? updateTool(draft.items, event.id, () => ({ args: event.args ?? {} }))
        : appendAt(draft.items, path, newTool(event, 'running', !!event.needs_approval));
      break;
    }
    case 'approval_required': {
      if (!findTool(draft.items, event.id)) {
        const path = containerOf(draft, event, agent);
        draft.items = appendAt(draft.items, path, newTool(event, 'awaiting_approval', true));
      }
      draft.items = updateTool(draft.items, event.id, () => ({
        status: 'awaiting_approval',
        needsApproval: true,
        args: event.args ?? {},
        description: event.description ?? null
      }));
      next.pendingApproval = event;
      next.status = 'awaiting_approval';
      break;
    }
    case 'cell_started': {
      if (!findTool(draft.items, event.id)) {
        const path = containerOf(draft, event, agent);
        const call = { ...event, name: 'run_cell', args: { code: event.code } };
        draft.items = appendAt(draft.items, path, newTool(call, 'running', false));
      }
      draft.items = updateTool(draft.items, event.id, () => ({
        status: 'running',
        isCell: true,
        code: event.code,
        outputs: [],
        waitingForKernel: event.waiting_for_kernel === true,
        ...(event.provenance ? { undo: undoStateOf(event) } : {})
      }));
      break;
    }
    case 'step_undone':
      draft.items = updateTool(draft.items, event.id, tool => ({ undo: undoneState(tool, event.run_id) }));
      break;
    case 'rewound':
      for (const step of event.steps) {
        draft.items = updateTool(draft.items, step.tool_call_id, () => ({ rewoundBy: event.branch }));
      }
      // Undoing the rewind does not redo the kernel: these stay undone, not "Undo" again.
      for (const id of event.kernel_undone ?? []) {
        draft.items = updateTool(draft.items, id, tool => ({ undo: undoneState(tool, event.run_id) }));
      }
      break;
    case 'usage':
      if (event.request) {
        // What was sent goes before what came back: before the call's streamed text, if it wrote
        // any (a final answer that repeats that text then still replaces it).
        const sent: ConversationItem = { kind: 'sent', key, agent, request: event.request };
        draft.items = updateContainer(draft.items, containerOf(draft, event, agent), container => {
          const last = container[container.length - 1];
          return last?.kind === 'assistant' && last.agent === agent
            ? [...container.slice(0, -1), sent, last]
            : [...container, sent];
        });
      }
      break;
    case 'forked':
      // The events before it were the other thread's, up to just before the step: none is running.
      draft.items = mapAll(settle(draft.items, 'ok'), item =>
        item.kind === 'tool' ? { ...item, inherited: true, undo: null } : item
      );
      draft.items = [
        ...draft.items,
        { kind: 'forked', key, fromThread: event.forked_from, fromTitle: event.title }
      ];
      next.status = 'idle';
      next.pendingApproval = null;
      break;
    case 'rewind_undone':
      draft.items = draft.items.map(item =>
        item.kind === 'tool' && item.rewoundBy === event.undid ? { ...item, rewoundBy: undefined } : item
      );
      break;
    case 'cell_output': {
      // A cell's output, or the live output of another tool (execute_command).
      draft.items = updateTool(draft.items, event.id, item => ({
        outputs: appendOutput(item.outputs, event.output)
      }));
      break;
    }
    case 'cell_progress': {
      draft.items = updateTool(draft.items, event.tool_call_id, () => ({
        progress: {
          elapsedS: event.elapsed_s,
          text: event.text,
          percent: event.percent ?? null,
          etaS: event.eta_s ?? null
        }
      }));
      break;
    }
    case 'cell_finished': {
      draft.items = updateTool(draft.items, event.id, () => ({
        progress: undefined,
        executionCount: event.execution_count ?? null,
        cellStatus: event.status,
        durationMs: event.duration_ms ?? null,
        waitingForKernel: false
      }));
      break;
    }
    case 'tool_result': {
      const result = {
        status: event.status,
        summary: event.summary ?? null,
        stopped: event.stopped === true
      };
      draft.items = replaceLast(draft.items, item => {
        if (item.kind === 'tool' && item.id === event.id) {
          return { ...item, ...result, ...exploredFields(event), waitingForKernel: false };
        }
        if (item.kind === 'subtask' && item.id === event.id) {
          return { ...item, ...result, active: false, done: true };
        }
        return null;
      });
      if (view.pendingApproval && view.pendingApproval.id === event.id) {
        next.pendingApproval = null;
      }
      break;
    }
    case 'todos': {
      next.todos = Array.isArray(event.todos) ? event.todos : [];
      break;
    }
    case 'final': {
      const answer = event.answer ?? '';
      const path = containerOf(draft, event, agent);
      const container = containerAt(draft.items, path);
      const last = container[container.length - 1];
      // When the answer was streamed as tokens too, show it once.
      const repeats = !!last && last.kind === 'assistant' && last.text.trim() === answer.trim();
      if (path.length) {
        // A sub-agent that gives up answers in its block: that is its report.
        if (answer && !repeats) {
          draft.items = appendAt(draft.items, path, {
            kind: 'assistant',
            key,
            agent,
            text: answer,
            streaming: false
          });
        }
        break;
      }
      const items = repeats ? draft.items.slice(0, -1) : draft.items;
      draft.items = [
        ...items,
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
      // Errors stay at the top level, where they are seen even when a block is folded.
      draft.items = [
        ...draft.items,
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
      const usage = event.usage ?? null;
      if (status === 'waiting_for_cell') {
        next.pendingApproval = null; // the cell's step stays running: it goes on in the kernel
      } else if (status !== 'awaiting_approval') {
        next.pendingApproval = null;
        draft.items = settle(draft.items, status === 'idle' ? 'ok' : 'cancelled');
      }
      if (status === 'cancelled' || status === 'failed') {
        draft.items = [...draft.items, { kind: 'run_end', key, status, usage }];
      } else if (status === 'idle' && usage) {
        draft.items = [...draft.items, { kind: 'run_end', key, status: 'completed', usage }];
      }
      break;
    }
    default:
      break; // agent_switch only moves control, usage only the figures; an unknown type only its seq
  }
  next.items = draft.items;
  next.tasks = draft.tasks;
  next.agent = agentAfter(view, event, agent);
  // In multi mode the top level is the planner's, whatever run-level events say.
  if (next.mode === 'multi' && ROOT_AGENTS.has(next.agent)) {
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
