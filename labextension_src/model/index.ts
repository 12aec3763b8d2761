/**
 * The panel's state: a pure reducer over a thread's events (view.ts,
 * tree.ts, reducer.ts), the ThreadModel that follows one thread's stream,
 * and the PanelModel behind the side panel.
 */
export * from './view';
export { reduceEvent, reduceEvents } from './reducer';
export { EXPLORE_TOOL, exploreState, isExplore, runAsCell, runnableCode } from './explore';
export type { ExploreState } from './explore';
export { withThreadDetail } from './threadUsage';
export { ThreadModel } from './thread';
export type { ConnectionState } from './thread';
export type { IKeyValueStore } from './lastThreads';
export { PanelModel } from './panel';
export { AgentChoice, OWN_AGENT } from './agentChoice';
export type { ILiveEvent } from './panel';
export type { IPanelError } from './errorBanner';
export type { INotebookBinding } from './runRequests';
export { ComposerDraft } from './draft';
export { SettingsModel } from './settings';
export * from './settingsForm';
export * from './autonomy';
export * from './usage';
export { liveCells, MAX_LIVE_CELLS_BYTES } from './liveCells';
