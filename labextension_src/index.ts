/**
 * The Cellwright JupyterLab plugin: wires the model, the side panel, the
 * notebook bridge, commands and settings together. No logic of its own.
 */
import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette, Notification } from '@jupyterlab/apputils';
import { ICompletionProviderManager } from '@jupyterlab/completer';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { IRenderMimeRegistry, RenderMimeRegistry } from '@jupyterlab/rendermime';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { ITranslator } from '@jupyterlab/translation';

import { CellwrightAPI } from './api';
import { CellwrightInlineProvider } from './completion/provider';
import type { Cell } from '@jupyterlab/cells';

import { cellOutputs, cellUnderMenu, snapshotOf, targetCell } from './cellCommand';
import { FixErrorButtons } from './fixButtons';
import { fixMessage, hasError } from './fixCell';
import { restartKernelById } from './kernels';
import { PanelModel } from './model';
import { NotebookBridge } from './notebook';
import { NotebookReconciler } from './notebookReconcile';
import { onShowCell, revealCell } from './showCell';
import { CellBadges, revealStep } from './cellBadges';
import { StaleBadges } from './staleBadges';
import { onStepUndone, undoSteps, undoSummary } from './model/undo';
import { Autonomy, Mode } from './contract.gen';
import { CommandIDs, PLUGIN_ID } from './tokens';
import { FRONTEND_VERSION } from './version';
import { CellwrightPanel } from './widgets/CellwrightPanel';
import { kernelUsagePrefs } from './model/kernelUsage';
import { noticeBackgroundEnds } from './backgroundNotices';
import { bundleOf } from './components/translation';


function localStorageOrNull(): Storage | null {
  try {
    return window.localStorage;
  } catch {
    return null;
  }
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description: 'Cellwright: an AI agent that works in the live notebook, in a side panel.',
  autoStart: true,
  requires: [INotebookTracker, IRenderMimeRegistry],
  optional: [ICommandPalette, ISettingRegistry, ILayoutRestorer, ICompletionProviderManager, ITranslator],
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker,
    rendermime: IRenderMimeRegistry,
    palette: ICommandPalette | null,
    settingRegistry: ISettingRegistry | null,
    restorer: ILayoutRestorer | null,
    completionManager: ICompletionProviderManager | null,
    translator: ITranslator | null
  ): void => {
    // Ghost text in code cells and Python files (JupyterLab's inline completer; Tab accepts).
    // The panel's one translation bundle (`translator.load('cellwright')`), for every string below.
    const trans = bundleOf(translator);
    const inlineProvider = new CellwrightInlineProvider(app.serviceManager.serverSettings, trans);
    completionManager?.registerInlineProvider(inlineProvider);
    const model = new PanelModel({
      api: new CellwrightAPI(app.serviceManager.serverSettings, trans),
      trans,
      version: FRONTEND_VERSION,
      storage: localStorageOrNull()
    });
    // Relative links and images in the panel's Markdown resolve next to the bound notebook.
    const resolver = new RenderMimeRegistry.UrlResolver({
      path: '',
      contents: app.serviceManager.contents
    });
    const restartKernel = async (kernelId: string): Promise<void> => {
      const holder = tracker.find(nb => nb.sessionContext.session?.kernel?.id === kernelId);
      if (holder) {
        await holder.sessionContext.restartKernel();
      } else {
        await restartKernelById(app.serviceManager.serverSettings, kernelId);
      }
    };
    const panel = new CellwrightPanel({
      model,
      rendermime: rendermime.clone({ resolver }),
      restartKernel,
      translator
    });
    app.shell.add(panel, 'right', { rank: 1000 });
    restorer?.add(panel, 'cellwright');

    // Live agent events write into the open notebook.
    const bridge = new NotebookBridge(tracker);
    model.liveEvent.connect((_, live) => bridge.handle(live));
    onStepUndone(({ id }) => bridge.stepUndone(id, model.thread?.notebookPath ?? null));
    // ... and what a notebook missed while no page had it open, when it is bound or a thread catches up.
    const reconciler = new NotebookReconciler(
      bridge,
      model.api,
      message => Notification.info(message, { autoClose: 10_000 }),
      model.trans
    );
    const reconcileWhenLoaded = (notebook: NotebookPanel): void => void reconciler.reconcile(notebook);
    tracker.widgetAdded.connect((_, notebook) => reconcileWhenLoaded(notebook));
    tracker.forEach(reconcileWhenLoaded);
    // A page that comes back into view (another window or tab ran the agent meanwhile) catches up.
    document.addEventListener('visibilitychange', () => {
      if (document.visibilityState === 'visible' && tracker.currentWidget) {
        reconcileWhenLoaded(tracker.currentWidget);
      }
    });
    noticeBackgroundEnds(
      model.liveEvent,
      message => Notification.info(message, { autoClose: 10_000 }),
      trans
    );
    model.caughtUp.connect((_, thread) => {
      const notebook = tracker.find(candidate => candidate.context.path === thread.notebookPath);
      if (notebook) {
        reconcileWhenLoaded(notebook);
      }
    });
    app.commands.addCommand(CommandIDs.showCell, {
      label: trans.__('Show Cellwright Cell in Notebook'),
      caption: trans.__('Select the cell an agent step wrote and scroll to it'),
      execute: async args => {
        const toolCallId = String(args.toolCallId ?? '');
        const path = String(args.path ?? model.thread?.notebookPath ?? '');
        if (!toolCallId || !path || !(await revealCell(app, tracker, path, toolCallId))) {
          Notification.warning(
            trans.__('That cell is not in the notebook: it was deleted, undone, or not added yet.'),
            { autoClose: 5_000 }
          );
        }
      }
    });
    onShowCell(toolCallId => void app.commands.execute(CommandIDs.showCell, { toolCallId }));
    const badges = new CellBadges(tracker, trans, {
      open: provenance => {
        void model.openThread(provenance.thread_id);
        app.shell.activateById(panel.id);
        revealStep(provenance.tool_call_id);
      },
      undo: async provenance => {
        const outcome = await undoSteps(model, provenance.thread_id, [provenance.tool_call_id]);
        return { ok: !outcome.error, message: undoSummary(trans, outcome) };
      }
    });
    const staleBadges = new StaleBadges(tracker, trans, path => model.api.notebookGraph(path));
    model.liveEvent.connect((_, live) => {
      if (live.event.type === 'tool_result' && live.thread.notebookPath) {
        staleBadges.refresh(live.thread.notebookPath);
      }
    });

    // Bind the panel to the active notebook.
    let bound: NotebookPanel | null = null;
    const onRenamed = (_: unknown, path: string): void => {
      if (bound) {
        resolver.path = path;
        model.notebookRenamed(path);
      }
    };
    const bind = (notebook: NotebookPanel | null): void => {
      bound?.context.pathChanged.disconnect(onRenamed);
      bound = notebook;
      if (notebook) {
        reconcileWhenLoaded(notebook); // a second window's notebook catches up when the user comes back to it
      }
      notebook?.context.pathChanged.connect(onRenamed);
      resolver.path = notebook?.context.path ?? '';
      model.setNotebook(
        notebook
          ? {
              path: notebook.context.path,
              kernelId: () => notebook.sessionContext.session?.kernel?.id,
              save: () => notebook.context.save(),
              cells: () => {
                const cells = notebook.content.model?.cells;
                const out: { id: string; cell_type: string; source: string }[] = [];
                for (let i = 0; cells && i < cells.length; i++) {
                  const cell = cells.get(i);
                  out.push({ id: cell.id, cell_type: cell.type, source: cell.sharedModel.getSource() });
                }
                return out;
              }
            }
          : null
      );
    };
    tracker.currentChanged.connect((_, notebook) => bind(notebook));
    bind(tracker.currentWidget);

    // Commands.
    app.commands.addCommand(CommandIDs.open, {
      label: trans.__('Open Cellwright'),
      caption: trans.__('Open the Cellwright agent panel'),
      execute: () => {
        app.shell.activateById(panel.id);
        panel.focusInput();
      }
    });
    app.commands.addCommand(CommandIDs.newThread, {
      label: trans.__('New Cellwright Thread'),
      caption: trans.__('Start a new Cellwright conversation for the active notebook'),
      execute: () => {
        model.newThread();
        app.shell.activateById(panel.id);
        panel.focusInput();
      }
    });
    app.commands.addCommand(CommandIDs.stop, {
      label: trans.__('Stop Cellwright Run'),
      caption: trans.__('Stop the running Cellwright agent'),
      isEnabled: () => model.running,
      execute: () => model.cancel()
    });
    app.commands.addCommand(CommandIDs.askAboutCell, {
      label: trans.__('Ask Cellwright about This Cell'),
      caption: trans.__('Open Cellwright with this cell (code and outputs) attached to your question'),
      isEnabled: () => !!tracker.currentWidget?.content.activeCell,
      execute: () => {
        const found = cellUnderMenu(app, tracker);
        if (!found) {
          return;
        }
        if (found.notebook !== tracker.currentWidget) {
          bind(found.notebook);
        }
        model.draft.attachCell(found.context);
        app.shell.activateById(panel.id);
        panel.focusInput();
      }
    });
    app.contextMenu.addItem({
      command: CommandIDs.askAboutCell,
      selector: '.jp-Notebook .jp-Cell',
      rank: 0
    });

    // "Fix with Cellwright": the error's cell, its code and its traceback, fixed in place.
    const fixCell = (notebook: NotebookPanel, cell: Cell): void => {
      const index = notebook.content.widgets.indexOf(cell);
      if (index < 0 || !hasError(cellOutputs(cell))) {
        return;
      }
      if (notebook !== bound) {
        bind(notebook);
      }
      app.shell.activateById(panel.id);
      if (model.running) {
        model.reportError(
          new Error(trans.__('Cellwright is busy with a run on this thread: stop it or wait, then ask again.'))
        );
        return;
      }
      void model.send(fixMessage(snapshotOf(cell, index), notebook.context.path));
    };
    const fixTarget = (): { notebook: NotebookPanel; cell: Cell } | null => {
      const target = targetCell(app, tracker);
      return target && hasError(cellOutputs(target.cell)) ? target : null;
    };
    app.commands.addCommand(CommandIDs.fixCell, {
      label: trans.__('Fix Cell Error with Cellwright'),
      caption: trans.__("Ask Cellwright to fix the active cell's error in place (you approve the change)"),
      isEnabled: () => !!fixTarget(),
      execute: () => {
        const target = fixTarget();
        if (target) {
          fixCell(target.notebook, target.cell);
        }
      }
    });
    app.contextMenu.addItem({
      command: CommandIDs.fixCell,
      selector: '.jp-Notebook .jp-CodeCell',
      rank: 0
    });
    new FixErrorButtons(tracker, fixCell, trans);
    tracker.activeCellChanged.connect(() => app.commands.notifyCommandChanged(CommandIDs.fixCell));

    app.commands.addCommand(CommandIDs.settings, {
      label: trans.__('Cellwright Model Settings'),
      caption: trans.__('Set the endpoint, model and API key Cellwright uses, and test the connection'),
      execute: () => {
        model.openSettings(true);
        app.shell.activateById(panel.id);
      }
    });
    let running = model.running;
    model.changed.connect(() => {
      if (model.running !== running) {
        running = model.running;
        app.commands.notifyCommandChanged(CommandIDs.stop);
      }
    });
    if (palette) {
      for (const command of [
        CommandIDs.open,
        CommandIDs.newThread,
        CommandIDs.stop,
        CommandIDs.askAboutCell,
        CommandIDs.fixCell,
        CommandIDs.settings
      ]) {
        palette.addItem({ command, category: trans.__('Cellwright') });
      }
    }

    // Settings: mode and auto-scroll are the panel's. Auto-approve has one home, the server's
    // configuration, edited in the panel's settings form (PUT cellwright/api/config).
    if (settingRegistry) {
      void settingRegistry
        .load(PLUGIN_ID)
        .then(settings => {
          const apply = (): void => {
            model.mode = (settings.get('mode').composite as Mode) ?? 'single';
            model.autoScroll = (settings.get('autoScroll').composite as boolean) ?? true;
            kernelUsagePrefs.warnBytes =
              ((settings.get('kernelMemoryWarningMB').composite as number) ?? 4096) * 1024 ** 2;
            model.defaultAutonomy = (settings.get('autonomy').composite as Autonomy) ?? 'agent';
            badges.enabled = (settings.get('provenanceBadges').composite as boolean) ?? true;
            staleBadges.enabled = (settings.get('staleBadges').composite as boolean) ?? true;
            inlineProvider.enabled = (settings.get('inlineCompletion').composite as boolean) ?? true;
          };
          apply();
          settings.changed.connect(apply);
          model.modeChanged.connect((_, mode) => {
            settings.set('mode', mode).catch(error => {
              model.reportError(error, trans.__('Could not save the mode setting'));
            });
          });
        })
        .catch(error => {
          model.reportError(error, trans.__('Could not load the Cellwright settings'));
        });
    }

    void model.checkHealth();
  }
};

export default plugin;
