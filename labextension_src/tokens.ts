/**
 * Everything that crosses the wire between the panel and the Cellwright server
 * (see shared/API.md), plus the ids the frontend exposes.
 *
 * EVENT_TYPES and TOOL_NAMES mirror the server's definitions (agent_core/events.py
 * and the tool table); a Python test compares these two literal arrays with the
 * server's, so keep them literal, on one line each, and in the server's order.
 */

export const EVENT_TYPES = ['run_started','token','tool_call','approval_required','cell_started','cell_output','cell_finished','tool_result','todos','agent_switch','final','error','run_finished'] as const;
export const TOOL_NAMES = ['run_cell','add_markdown','write_todos','final_answer','execute_command','check_resource','diagnostics','read_file','list_files','write_file','edit_file','search_workspace','search_notebooks','load_skill','task'] as const;

export type EventType = (typeof EVENT_TYPES)[number];
export type ToolName = (typeof TOOL_NAMES)[number];

/** The frontend plugin's id, also the settings schema id (schema/plugin.json). */
export const PLUGIN_ID = 'cellwright:plugin';

/** The side panel's widget id. */
export const PANEL_ID = 'cellwright-panel';

/** URL prefix of every route, under the server's base_url. */
export const API_NAMESPACE = 'cellwright/api';

/** Command ids. */
export namespace CommandIDs {
  export const open = 'cellwright:open';
  export const newThread = 'cellwright:new-thread';
  export const stop = 'cellwright:stop';
}

// ---------------------------------------------------------------- enums

export type Mode = 'single' | 'multi';
export const MODES: readonly Mode[] = ['single', 'multi'];

/**
 * The `agent` field of events: "main" in single mode; in multi mode the
 * planner and the sub-agents it delegates to with the `task` tool.
 */
export const AGENT_LABELS: Readonly<Record<string, string>> = {
  main: 'Agent',
  planner: 'Planner',
  python_developer: 'Python developer',
  researcher: 'Researcher'
};

/** A readable name for an agent ("python_developer" -> "Python developer"). */
export function agentLabel(agent: string | null | undefined): string {
  if (!agent) {
    return AGENT_LABELS.main;
  }
  const known = AGENT_LABELS[agent];
  if (known) {
    return known;
  }
  const words = agent.replace(/[_-]+/g, ' ').trim();
  return words ? words.charAt(0).toUpperCase() + words.slice(1) : agent;
}

export type TodoStatus = 'pending' | 'in_progress' | 'completed';
export type RunFinishedStatus =
  | 'completed'
  | 'awaiting_approval'
  | 'cancelled'
  | 'failed';
/** Thread status as `GET threads` reports it. */
export type ThreadStatus = 'idle' | 'running' | RunFinishedStatus | string;
export type CellStatus = 'ok' | 'error' | 'aborted';
export type ToolResultStatus = 'ok' | 'error' | 'rejected';
export type ApprovalDecision = 'approve' | 'edit' | 'reject';
export type ToolCallingMode = 'native' | 'prompt';
export type CheckpointerKind = 'sqlite' | 'postgres' | 'memory';

// ---------------------------------------------------------------- shared shapes

export interface ITodo {
  content: string;
  status: TodoStatus;
}

export interface INextItem {
  title: string;
  prompt: string;
}

export type DiagnosticSeverity = 'error' | 'warning' | 'information' | 'hint';

export interface IDiagnostic {
  /** 1-based. */
  line: number;
  column: number;
  severity: DiagnosticSeverity | string;
  code: string | null;
  message: string;
  source: string | null;
}

/** One nbformat v4 output dict, as carried by `cell_output`. */
export type INbOutput =
  | {
      output_type: 'stream';
      name: 'stdout' | 'stderr' | string;
      text: string | string[];
    }
  | {
      output_type: 'display_data';
      data: Record<string, unknown>;
      metadata?: Record<string, unknown>;
    }
  | {
      output_type: 'execute_result';
      data: Record<string, unknown>;
      metadata?: Record<string, unknown>;
      execution_count: number | null;
    }
  | {
      output_type: 'error';
      ename: string;
      evalue: string;
      traceback: string[];
    };

/** `{"error", "message"}`: the body of every error answer. */
export interface IErrorBody {
  error: string;
  message: string;
}

// ---------------------------------------------------------------- routes

export interface IHealth {
  version: string;
  model: string | null;
  tool_calling: ToolCallingMode;
  checkpointer: CheckpointerKind;
  llm_configured: boolean;
}

/** `GET config`; never carries the API key itself. */
export interface IServerConfig {
  model?: string | null;
  base_url?: string | null;
  tool_calling?: ToolCallingMode;
  auto_approve?: string[];
  api_key_set?: boolean;
  [key: string]: unknown;
}

/** `PUT config` body: any subset. */
export interface IServerConfigUpdate {
  model?: string;
  base_url?: string;
  api_key?: string;
  tool_calling?: ToolCallingMode;
  auto_approve?: string[];
}

export interface IThread {
  thread_id: string;
  title: string | null;
  notebook_path: string | null;
  /** Epoch seconds (or an ISO 8601 string). */
  created_at: number | string;
  updated_at: number | string;
  status: ThreadStatus;
}

export interface IThreadList {
  threads: IThread[];
}

export interface ICreateThreadRequest {
  notebook_path?: string;
  title?: string;
}

export interface IThreadMessage {
  role: 'user' | 'assistant' | 'tool' | string;
  content: string;
  [key: string]: unknown;
}

/** `GET threads/{id}`. */
export interface IThreadDetail extends IThread {
  messages: IThreadMessage[];
  todos: ITodo[];
  pending_approval: IApprovalRequiredData | null;
}

export interface IRunRequest {
  message: string;
  notebook_path?: string;
  kernel_id?: string;
  mode: Mode;
}

export interface IRunAccepted {
  run_id: string;
}

export interface IApprovalRequest {
  decision: ApprovalDecision;
  args?: Record<string, unknown>;
  reason?: string;
  kernel_id?: string;
}

// ---------------------------------------------------------------- events

/** Fields every event's data object carries. */
export interface IEventBase {
  seq: number;
  thread_id: string;
  run_id: string;
  /** "main" in single mode, the sub-agent's name in multi mode. */
  agent: string;
}

export interface IRunStartedData extends IEventBase {
  mode: Mode;
  message: string;
}

export interface ITokenData extends IEventBase {
  text: string;
}

export interface IToolCallData extends IEventBase {
  id: string;
  name: ToolName | string;
  args: Record<string, any>;
  needs_approval: boolean;
}

export interface IApprovalRequiredData extends IEventBase {
  id: string;
  name: ToolName | string;
  args: Record<string, any>;
  description: string;
  /** run_cell: the linter's findings on the code (1-based lines). */
  diagnostics?: IDiagnostic[] | null;
  /** write_file / edit_file: the change as a unified diff. */
  diff?: string | null;
  /** execute_command: the command line. */
  command?: string | null;
  /** execute_command: the folder it runs in, relative to the root ("." for the root). */
  cwd?: string | null;
}

export interface ICellStartedData extends IEventBase {
  id: string;
  code: string;
  notebook_path: string | null;
  kernel_id: string | null;
  /**
   * True: the kernel is busy with another cell and this one waits in line; a
   * second `cell_started` for the same id with false follows when it starts.
   */
  waiting_for_kernel?: boolean;
}

export interface ICellOutputData extends IEventBase {
  id: string;
  output: INbOutput;
  /**
   * An output beyond what the server stores for a cell: sent live only (no
   * `id:` line, no seq of its own). The notebook keeps it; the timeline does not.
   */
  live_only?: boolean;
  /**
   * Stored at the end of a cell that overflowed: "[... N lines omitted ...]"
   * and the tail. A notebook cell that received the live_only outputs has them already.
   */
  overflow_summary?: boolean;
}

export interface ICellFinishedData extends IEventBase {
  id: string;
  status: CellStatus;
  execution_count: number | null;
  duration_ms: number;
}

export interface IToolResultData extends IEventBase {
  id: string;
  name: ToolName | string;
  status: ToolResultStatus;
  summary: string;
  /** True when the user's Stop ended the call. */
  stopped?: boolean;
}

export interface ITodosData extends IEventBase {
  todos: ITodo[];
}

export interface IAgentSwitchData extends IEventBase {
  from: string;
  to: string;
  task: string;
}

export interface IFinalData extends IEventBase {
  answer: string;
  next_items: INextItem[];
}

/** `error.kind` when Stop interrupted the kernel several times and it is still busy. */
export const KERNEL_UNRESPONSIVE = 'kernel_unresponsive';

export interface IErrorData extends IEventBase {
  kind: typeof KERNEL_UNRESPONSIVE | string;
  message: string;
  retryable: boolean;
  /** kernel_unresponsive: the kernel to restart. */
  kernel_id?: string | null;
}

export interface IRunFinishedData extends IEventBase {
  status: RunFinishedStatus;
}

/** Data object of each event type. */
export interface IEventDataMap {
  run_started: IRunStartedData;
  token: ITokenData;
  tool_call: IToolCallData;
  approval_required: IApprovalRequiredData;
  cell_started: ICellStartedData;
  cell_output: ICellOutputData;
  cell_finished: ICellFinishedData;
  tool_result: IToolResultData;
  todos: ITodosData;
  agent_switch: IAgentSwitchData;
  final: IFinalData;
  error: IErrorData;
  run_finished: IRunFinishedData;
}

/**
 * One event as the panel handles it: the SSE `event:` field becomes `type`
 * and the parsed `data:` JSON is spread next to it. A discriminated union on `type`.
 */
export type CellwrightEvent = {
  [K in EventType]: { type: K } & IEventDataMap[K];
}[EventType];

export type EventOf<K extends EventType> = Extract<CellwrightEvent, { type: K }>;

export function isEventType(value: string): value is EventType {
  return (EVENT_TYPES as readonly string[]).includes(value);
}
