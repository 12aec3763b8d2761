/**
 * Cellwright's inline completion provider for JupyterLab's inline completer
 * (ghost text, Tab accepts): code cells of notebooks and Python files. Each
 * keystroke aborts the request in flight for that editor (the server then
 * closes the model's), waits DEBOUNCE_MS of quiet, and streams POST
 * completions: the first piece is shown at once, the rest streams in.
 */
import type {
  CompletionHandler,
  IInlineCompletionContext,
  IInlineCompletionItem,
  IInlineCompletionList,
  IInlineCompletionProvider
} from '@jupyterlab/completer';
import { URLExt } from '@jupyterlab/coreutils';
import { NotebookPanel } from '@jupyterlab/notebook';
import { ServerConnection } from '@jupyterlab/services';
import type { TranslationBundle } from '@jupyterlab/translation';
import type { Widget } from '@lumino/widgets';

import type { CompletionRequest } from '../contract.gen';
import { API_NAMESPACE } from '../tokens';
import {
  cellsAbove,
  ChunkReader,
  completionEnded,
  DEBOUNCE_MS,
  InFlight,
  OFF_BACKOFF_MS,
  Suggestion,
  wait
} from './lines';

const AUTOMATIC = 1; // InlineCompletionTriggerKind.Automatic (a const enum value, not imported at run time)

interface ITarget {
  key: string; // one request in flight per editor
  body: Omit<CompletionRequest, 'prefix' | 'suffix'>;
}

interface IOpenStream {
  reader: ReadableStreamDefaultReader<Uint8Array>;
  chunks: ChunkReader;
  suggestion: Suggestion;
  done: () => void;
}

export class CellwrightInlineProvider implements IInlineCompletionProvider {
  readonly identifier = 'cellwright';
  readonly name = 'Cellwright';
  // JupyterLab's own debounce stays at 0: the provider debounces itself, so that the keystroke
  // itself (not the end of a delay) aborts the request in flight. Fill in the middle too.
  readonly schema = { default: { debouncerDelay: 0, autoFillInMiddle: true, timeout: 15000 } };
  /** The panel's "Inline completion" setting. */
  enabled = true;
  private readonly inFlight = new InFlight();
  private readonly streams = new Map<string, IOpenStream>();
  private offUntil = 0;
  private tokens = 0;

  constructor(
    private readonly serverSettings: ServerConnection.ISettings,
    private readonly _trans: TranslationBundle
  ) {}

  async fetch(
    request: CompletionHandler.IRequest,
    context: IInlineCompletionContext
  ): Promise<IInlineCompletionList<IInlineCompletionItem>> {
    const none = { items: [] };
    if (!this.enabled || Date.now() < this.offUntil) {
      return none;
    }
    const target = describe(context.widget, request.mimeType);
    if (target === null) {
      return none;
    }
    const controller = this.inFlight.start(target.key);
    let sent = false;
    const finish = (): void => {
      this.inFlight.finish(target.key, controller);
      if (sent) {
        completionEnded.emit();
      }
    };
    if (context.triggerKind === AUTOMATIC && !(await wait(DEBOUNCE_MS, controller.signal))) {
      return none; // typed again meanwhile
    }
    const body: CompletionRequest = {
      ...target.body,
      prefix: request.text.slice(0, request.offset),
      suffix: request.text.slice(request.offset)
    };
    let response: Response;
    sent = true;
    try {
      response = await ServerConnection.makeRequest(
        URLExt.join(this.serverSettings.baseUrl, API_NAMESPACE, 'completions'),
        {
          method: 'POST',
          body: JSON.stringify(body),
          headers: { 'Content-Type': 'application/json' },
          signal: controller.signal
        },
        this.serverSettings
      );
    } catch {
      finish();
      return none; // aborted by the next keystroke, or the server is away
    }
    if (!response.ok || response.body === null) {
      finish();
      if (response.status === 409 && (await response.text()).includes('completion_off')) {
        this.offUntil = Date.now() + OFF_BACKOFF_MS;
      }
      return none;
    }
    const open: IOpenStream = {
      reader: response.body.getReader(),
      chunks: new ChunkReader(),
      suggestion: new Suggestion(this._trans),
      done: finish
    };
    await this.readUntilShown(open);
    if (open.suggestion.done) {
      finish();
      return { items: open.suggestion.text ? [{ insertText: open.suggestion.text }] : [] };
    }
    const token = `cellwright-${++this.tokens}`;
    this.streams.set(token, open);
    return { items: [{ insertText: open.suggestion.text, isIncomplete: true, token }] };
  }

  async *stream(token: string): AsyncGenerator<{ response: IInlineCompletionItem }> {
    const open = this.streams.get(token);
    if (open === undefined) {
      return;
    }
    this.streams.delete(token);
    try {
      while (!open.suggestion.done) {
        if (await this.readUntilShown(open)) {
          yield { response: { insertText: open.suggestion.text } };
        }
      }
    } finally {
      open.done();
      void open.reader.cancel().catch(() => undefined);
    }
  }

  /** Read until the suggestion's text changes or it is done; whether it changed. */
  private async readUntilShown(open: IOpenStream): Promise<boolean> {
    const before = open.suggestion.text;
    while (!open.suggestion.done && open.suggestion.text === before) {
      let result: ReadableStreamReadResult<Uint8Array>;
      try {
        result = await open.reader.read();
      } catch {
        result = { done: true, value: undefined }; // aborted: the next keystroke took over
      }
      const chunks = result.done ? open.chunks.end() : open.chunks.feed(result.value);
      for (const chunk of chunks) {
        open.suggestion.apply(chunk);
      }
      if (result.done && !open.suggestion.done) {
        open.suggestion.done = true; // ended without `done`: keep what came
      }
    }
    return open.suggestion.text !== before;
  }

  dispose(): void {
    this.inFlight.abortAll();
  }
}

/** What to send for the editor of `widget`: a notebook's active code cell, or a Python file. */
function describe(widget: Widget, mimeType: string | undefined): ITarget | null {
  const python = !mimeType || mimeType.includes('python');
  if (widget instanceof NotebookPanel) {
    const notebook = widget.content;
    const cell = notebook.activeCell;
    if (cell === null || cell.model.type !== 'code') {
      return null;
    }
    const cells = notebook.widgets.map(c => ({ type: c.model.type, source: c.model.sharedModel.getSource() }));
    // The latest execution count: a new one tells the server a cell ran, so it reads the kernel's names again.
    const counts = notebook.widgets.map(c => (c.model as unknown as { executionCount?: number | null }).executionCount ?? 0);
    return {
      key: widget.id,
      body: {
        path: widget.context.path,
        cell_id: cell.model.id,
        kernel_id: widget.sessionContext.session?.kernel?.id ?? null,
        execution_count: Math.max(0, ...counts),
        language: python ? 'python' : (mimeType ?? null),
        cells_above: cellsAbove(cells, notebook.activeCellIndex)
      }
    };
  }
  const path = (widget as Widget & { context?: { path?: unknown } }).context?.path;
  if (typeof path !== 'string' || !path.endsWith('.py')) {
    return null;
  }
  return { key: widget.id, body: { path, language: 'python' } };
}
