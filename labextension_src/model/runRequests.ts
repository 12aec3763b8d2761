/**
 * The bodies of the requests that start a run and that resume it with an
 * approval decision. Both carry the bound notebook as the browser has it
 * now: its kernel, and its cells saved or not (what `edit_cell` diffs
 * against).
 */
import { ApprovalDecision, Autonomy, Decision, LiveCell, Mode, StartRun } from '../contract.gen';
import { INotebookCell, liveCells } from './liveCells';

/** The notebook the panel is bound to. */
export interface INotebookBinding {
  path: string;
  /** The id of the notebook's kernel right now, if any. */
  kernelId(): string | undefined;
  /** The notebook's cells as the browser has them now (for `notebook_cells`). */
  cells?(): Iterable<INotebookCell>;
  /** Save it (Verify re-runs the saved file). */
  save?(): Promise<void>;
}

/** What the user chose for a run besides its message. */
export interface IRunChoices {
  mode: Mode;
  autonomy: Autonomy;
  /** MCP servers turned off, when the thread's list changed. */
  disabledServers?: string[];
}

/** What the user added to an approval decision. */
export interface IDecisionExtra {
  args?: Record<string, unknown>;
  reason?: string;
  save_rule?: string;
  /** approve: also allow this kind of an outside agent's request unasked in the thread. */
  always?: boolean;
  /** approve a run_cell / edit_cell: then re-run the cells it made stale, under the same approval. */
  rerun_dependents?: boolean;
}

/** `POST threads/{id}/runs` for the thread at `threadPath`. */
export function startRunBody(
  message: string,
  choices: IRunChoices,
  notebook: INotebookBinding | null,
  threadPath: string | null
): StartRun {
  return {
    ...(choices.disabledServers ? { disabled_mcp_servers: choices.disabledServers } : {}),
    message,
    mode: choices.mode,
    autonomy: choices.autonomy,
    ...(notebook ? { notebook_path: notebook.path } : {}),
    ...notebookNow(notebook, threadPath)
  };
}

/** `POST threads/{id}/approvals/{tool_call_id}` for the thread at `threadPath`. */
export function decisionBody(
  decision: ApprovalDecision,
  extra: IDecisionExtra,
  notebook: INotebookBinding | null,
  threadPath: string | null
): Decision {
  return {
    decision,
    ...(extra.args ? { args: extra.args } : {}),
    ...(extra.reason ? { reason: extra.reason } : {}),
    ...(extra.save_rule ? { save_rule: extra.save_rule } : {}),
    ...(extra.always ? { always: true } : {}),
    ...(extra.rerun_dependents ? { rerun_dependents: true } : {}),
    ...notebookNow(notebook, threadPath)
  };
}

/** The kernel and, unless the thread is another notebook's (they would be wrong), the live cells. */
function notebookNow(
  notebook: INotebookBinding | null,
  threadPath: string | null
): { kernel_id?: string; notebook_cells?: LiveCell[] } {
  const kernelId = notebook?.kernelId();
  const cells = liveCellsFor(notebook, threadPath);
  return { ...(kernelId ? { kernel_id: kernelId } : {}), ...(cells ? { notebook_cells: cells } : {}) };
}

function liveCellsFor(notebook: INotebookBinding | null, threadPath: string | null): LiveCell[] | null {
  if (!notebook?.cells || (threadPath && threadPath !== notebook.path)) {
    return null;
  }
  try {
    return liveCells(notebook.cells());
  } catch (error) {
    console.warn('Cellwright: could not read the notebook cells', error);
    return null;
  }
}
