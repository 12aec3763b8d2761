import * as React from 'react';
import { useMemo } from 'react';

import { AUTONOMIES, autonomyHint, autonomyLabel, PanelModel } from '../model';
import { useTrans } from './translation';

let pickerCount = 0;

/**
 * Ask / Plan / Agent: how much the agent may do in the next run. Radio
 * buttons in a group, so arrow keys move between them as in any radio
 * group; remembered per notebook by the model.
 */
export function AutonomyPicker(props: { model: PanelModel; disabled: boolean }): JSX.Element {
  const { model, disabled } = props;
  const trans = useTrans();
  const name = useMemo(() => `cw-autonomy-${++pickerCount}`, []);
  return (
    <fieldset className="cw-autonomy" disabled={disabled} data-testid="cw-autonomy">
      <legend className="cw-visually-hidden">{trans.__('What the agent may do')}</legend>
      {AUTONOMIES.map(autonomy => (
        <label
          key={autonomy}
          className={`cw-autonomy-option${model.autonomy === autonomy ? ' cw-mod-selected' : ''}`}
          title={autonomyHint(trans, autonomy)}
        >
          <input
            type="radio"
            name={name}
            value={autonomy}
            checked={model.autonomy === autonomy}
            onChange={() => model.pickAutonomy(autonomy)}
          />
          <span>{autonomyLabel(trans, autonomy)}</span>
        </label>
      ))}
    </fieldset>
  );
}
