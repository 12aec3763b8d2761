import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { ITranslator, TranslationBundle } from '@jupyterlab/translation';
import { ReactWidget, SidePanel } from '@jupyterlab/ui-components';
import { Message } from '@lumino/messaging';
import { Panel } from '@lumino/widgets';
import * as React from 'react';

import { ChatView } from '../components/ChatView';
import { KernelRestartContext } from '../components/KernelRestart';
import { bundleOf, TranslationContext } from '../components/translation';
import { cellwrightIcon } from '../icon';
import { KernelRestarter } from '../kernels';
import { PanelModel } from '../model';
import { PANEL_ID } from '../tokens';

/** The React view of the panel, taking the model as a prop. */
class ChatWidget extends ReactWidget {
  constructor(
    private _model: PanelModel,
    private _rendermime: IRenderMimeRegistry,
    private _restartKernel: KernelRestarter | null,
    private _trans: TranslationBundle
  ) {
    super();
    this.addClass('cw-chat-widget');
  }

  readonly inputRef = React.createRef<HTMLTextAreaElement>();

  protected render(): JSX.Element {
    return (
      <TranslationContext.Provider value={this._trans}>
        <KernelRestartContext.Provider value={this._restartKernel}>
          <ChatView model={this._model} rendermime={this._rendermime} inputRef={this.inputRef} />
        </KernelRestartContext.Provider>
      </TranslationContext.Provider>
    );
  }
}

/**
 * The right-side panel. A `SidePanel` whose single section is the chat view;
 * the model (and its streams) outlive it only until the plugin disposes it.
 */
export class CellwrightPanel extends SidePanel {
  constructor(options: {
    model: PanelModel;
    rendermime: IRenderMimeRegistry;
    restartKernel?: KernelRestarter;
    translator?: ITranslator | null;
  }) {
    super({ content: new Panel() });
    this.id = PANEL_ID;
    this.addClass('cw-panel');
    this.title.icon = cellwrightIcon;
    this.title.caption = 'Cellwright';
    this._model = options.model;
    this._chat = new ChatWidget(
      options.model,
      options.rendermime,
      options.restartKernel ?? null,
      bundleOf(options.translator)
    );
    this.addWidget(this._chat);
  }

  get model(): PanelModel {
    return this._model;
  }

  /** Put the keyboard focus in the message box. */
  focusInput(): void {
    this._chat.inputRef.current?.focus();
  }

  protected onActivateRequest(msg: Message): void {
    super.onActivateRequest(msg);
    // The React tree may render after activation: focus on the next frame too.
    this.focusInput();
    requestAnimationFrame(() => this.focusInput());
  }

  private _model: PanelModel;
  private _chat: ChatWidget;
}
