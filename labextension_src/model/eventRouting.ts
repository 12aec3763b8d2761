/**
 * Where a thread's events put their items. A sub-agent's events carry
 * `task_id`, the id of the `task` call that started it: they go into that
 * call's block, however deep. Events without it belong to the top level,
 * except in threads recorded before the field existed, where a sub-agent's
 * events go to its last unfinished block.
 */
import { CellwrightEvent } from '../contract.gen';
import { appendAt, openBlockOf } from './tree';
import { ConversationItem, ISubtaskItem, IThreadView, Path, ROOT_AGENTS } from './view';

/** What one fold step changes besides the view's scalar fields. */
export interface IDraft {
  items: ConversationItem[];
  tasks: Readonly<Record<string, Path>>;
}

export function newBlock(key: string, id: string | null, agent: string, task: string): ISubtaskItem {
  return {
    kind: 'subtask',
    key,
    id,
    agent,
    task,
    status: 'running',
    active: true,
    done: false,
    summary: null,
    stopped: false,
    items: []
  };
}

export function addBlock(draft: IDraft, container: Path, block: ISubtaskItem): Path {
  draft.items = appendAt(draft.items, container, block);
  const path = [...container, block.key];
  if (block.id !== null) {
    draft.tasks = { ...draft.tasks, [block.id]: path };
  }
  return path;
}

/** The container an event's new items go to. */
export function containerOf(draft: IDraft, event: CellwrightEvent, agent: string): Path {
  const taskId = event.task_id;
  if (typeof taskId === 'string' && taskId) {
    // A log that lost the `task` call (cut short) still gets the work its block.
    return draft.tasks[taskId] ?? addBlock(draft, [], newBlock(`task-${taskId}`, taskId, agent, ''));
  }
  if (ROOT_AGENTS.has(agent)) {
    return [];
  }
  // A thread recorded before `task_id`: the sub-agent's last unfinished block.
  return (
    openBlockOf(draft.items, agent) ??
    addBlock(draft, [], newBlock(`subtask-${event.seq}`, null, agent, ''))
  );
}

/**
 * The agent in control after `event`. A pause for approval and its resume
 * keep it: the agent that asked is the one that carries on.
 */
export function agentAfter(view: IThreadView, event: CellwrightEvent, agent: string): string {
  switch (event.type) {
    case 'agent_switch':
      return event.to || view.agent;
    case 'run_started':
      return view.status === 'awaiting_approval' ? view.agent : agent;
    case 'run_finished':
      return event.status === 'awaiting_approval' ? view.agent : agent;
    default:
      return agent || view.agent;
  }
}
