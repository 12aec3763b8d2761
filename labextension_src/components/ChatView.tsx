import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import * as React from 'react';
import { useState } from 'react';

import { PanelModel } from '../model';
import { ApprovalCard } from './ApprovalCard';
import { Composer } from './Composer';
import { CompletionUsageLine } from './CompletionUsage';
import { Conversation } from './Conversation';
import { Header, StatusLine } from './Header';
import { KernelUsageView } from './KernelUsage';
import { KnowledgeStatusView } from './KnowledgeStatus';
import { useSignal } from './hooks';
import { Notices } from './Notices';
import { SentRequests } from './SentRequests';
import { SettingsForm } from './SettingsForm';
import { ToolsSection } from './ToolsSection';
import { UsageFooter } from './Usage';

/**
 * The whole panel: header, notices, conversation, approval card, status,
 * usage and composer; or the settings form in their place (the gear, or no
 * model configured).
 */
export function ChatView(props: {
  model: PanelModel;
  rendermime: IRenderMimeRegistry;
  inputRef: React.RefObject<HTMLTextAreaElement>;
}): JSX.Element {
  const { model, rendermime } = props;
  useSignal(model.changed);
  const [historyOpen, setHistoryOpen] = useState(false);
  const pending = model.pendingApproval;
  return (
    <div className="cw-chat">
      <Header model={model} historyOpen={historyOpen} setHistoryOpen={setHistoryOpen} />
      <Notices model={model} />
      {model.settingsOpen ? (
        <>
          <SettingsForm model={model} />
          {!model.needsSetup && <ToolsSection model={model} />}
          <KnowledgeStatusView api={model.api} />
        </>
      ) : (
        <>
          <Conversation model={model} view={model.view} rendermime={rendermime} />
          {pending && <ApprovalCard key={pending.id} model={model} pending={pending} />}
          <StatusLine model={model} />
          <KernelUsageView model={model} />
          <UsageFooter usage={model.view.usage} />
          <SentRequests api={model.api} threadId={model.thread?.threadId ?? null} version={model.view.status} />
          <CompletionUsageLine api={model.api} />
          <Composer model={model} inputRef={props.inputRef} />
        </>
      )}
    </div>
  );
}
