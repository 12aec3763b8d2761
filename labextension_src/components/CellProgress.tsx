/**
 * A long cell's progress under its step (issue 38): elapsed time, a bar with
 * percent and ETA when the cell prints one (tqdm, ipywidgets), its last lines;
 * and, while the run waits for it in the background, "Continue without waiting"
 * and Stop (the composer's Stop shows only while a run is active).
 */
import * as React from 'react';

import { IToolItem, PanelModel } from '../model';
import { formatSeconds } from '../model/progress';
import { useTrans } from './translation';

export function CellProgress(props: { item: IToolItem; model: PanelModel; waiting: boolean }): JSX.Element | null {
  const trans = useTrans();
  const progress = props.item.progress;
  if (!progress || props.item.status !== 'running') {
    return null;
  }
  const percent = progress.percent;
  const { model } = props;
  // While the run waits for the cell: go on without it, or stop the cell and the run.
  const waitingActions = [
    {
      testId: 'cw-continue-without-waiting',
      className: 'cw-continue-button',
      label: trans.__('Continue without waiting'),
      title: trans.__('Give the agent the output so far and let it go on while the cell runs'),
      onClick: () => void model.continueWithoutWaiting()
    },
    {
      testId: 'cw-stop-background-cell',
      className: 'cw-button-danger',
      label: trans.__('Stop'),
      title: trans.__('Interrupt the cell and end the run'),
      onClick: () => void model.cancel()
    }
  ];
  return (
    <div className="cw-cell-progress" data-testid="cw-cell-progress" role="status">
      <div className="cw-cell-progress-line">
        <span className="cw-cell-progress-elapsed">
          {trans.__('Running for %1', formatSeconds(trans, progress.elapsedS))}
        </span>
        {percent !== null && (
          <>
            <progress
              className="cw-cell-progress-bar"
              max={100}
              value={percent}
              aria-label={trans.__('Progress of the cell')}
            />
            <span className="cw-cell-progress-percent">{`${Math.round(percent)}%`}</span>
          </>
        )}
        {progress.etaS !== null && (
          <span className="cw-cell-progress-eta">{trans.__('about %1 left', formatSeconds(trans, progress.etaS))}</span>
        )}
      </div>
      {progress.text && <pre className="cw-cell-progress-text">{progress.text}</pre>}
      {props.waiting && (
        <div className="cw-cell-progress-waiting">
          <span>{trans.__('Running in the background: the agent goes on by itself when the cell ends.')}</span>
          {waitingActions.map(action => (
            <button
              key={action.testId}
              type="button"
              className={`jp-mod-styled ${action.className}`}
              data-testid={action.testId}
              title={action.title}
              onClick={action.onClick}
            >
              {action.label}
            </button>
          ))}
        </div>
      )}
    </div>
  );
}
