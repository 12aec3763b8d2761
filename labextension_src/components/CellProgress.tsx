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
  return (
    <div className="cw-cell-progress" data-testid="cw-cell-progress" role="status">
      <div className="cw-cell-progress-line">
        <span className="cw-cell-progress-elapsed">
          {trans.__('Running for %1', formatSeconds(trans, progress.elapsedS))}
        </span>
        {percent !== null && (
          <progress
            className="cw-cell-progress-bar"
            max={100}
            value={percent}
            aria-label={trans.__('Progress of the cell')}
          />
        )}
        {percent !== null && <span className="cw-cell-progress-percent">{`${Math.round(percent)}%`}</span>}
        {progress.etaS !== null && (
          <span className="cw-cell-progress-eta">{trans.__('about %1 left', formatSeconds(trans, progress.etaS))}</span>
        )}
      </div>
      {progress.text && <pre className="cw-cell-progress-text">{progress.text}</pre>}
      {props.waiting && (
        <div className="cw-cell-progress-waiting">
          <span>{trans.__('Running in the background: the agent goes on by itself when the cell ends.')}</span>
          <button
            type="button"
            className="jp-mod-styled cw-continue-button"
            data-testid="cw-continue-without-waiting"
            title={trans.__('Give the agent the output so far and let it go on while the cell runs')}
            onClick={() => void props.model.continueWithoutWaiting()}
          >
            {trans.__('Continue without waiting')}
          </button>
          <button
            type="button"
            className="jp-mod-styled cw-button-danger"
            data-testid="cw-stop-background-cell"
            title={trans.__('Interrupt the cell and end the run')}
            onClick={() => void props.model.cancel()}
          >
            {trans.__('Stop')}
          </button>
        </div>
      )}
    </div>
  );
}
