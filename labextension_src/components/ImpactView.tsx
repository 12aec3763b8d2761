import * as React from 'react';

import { Impact, MakesStale } from '../contract.gen';
import { impactChips } from '../model/review';
import { VisibleText } from './VisibleText';
import { useTrans } from './translation';

/**
 * What the call will touch, before it is approved: one chip per finding of
 * the static analysis, each with its line ("unknown" said as unknown), whether
 * the step can be undone in the kernel (and why not), and the workspace rules
 * it appears to break. Every text is the model's or the code's: rendered inert.
 */
export function ImpactView(props: { impact: Impact | null | undefined }): JSX.Element | null {
  const { impact } = props;
  const trans = useTrans();
  if (!impact) {
    return null;
  }
  const chips = impactChips(trans, impact);
  const warnings = Array.isArray(impact.rule_warnings) ? impact.rule_warnings : [];
  return (
    <div className="cw-impact" data-testid="cw-impact">
      {warnings.map((warning, i) => (
        <div key={i} className="cw-approval-warning cw-impact-rule" data-testid="cw-rule-warning" role="alert">
          <span className="cw-approval-warning-icon" aria-hidden="true">
            ⚠
          </span>
          <span>
            <VisibleText text={warning} />
          </span>
        </div>
      ))}
      {chips.length > 0 && (
        <ul className="cw-impact-chips" aria-label={trans.__('What this will touch')}>
          {chips.map((chip, i) => (
            <li
              key={i}
              className={`cw-impact-chip cw-impact-${chip.kind}`}
              data-testid="cw-impact-chip"
              data-kind={chip.kind}
              title={trans.__('line %1', chip.line)}
            >
              <span className="cw-impact-kind">{chip.label}</span> <VisibleText text={chip.name} />
              <span className="cw-impact-line">{' · ' + trans.__('line %1', chip.line)}</span>
            </li>
          ))}
        </ul>
      )}
      {impact.parse_error && (
        <div className="cw-impact-note" data-testid="cw-impact-unknown">
          {trans.__('Unknown: the code could not be analysed (')}
          <VisibleText text={impact.parse_error} />
          {')'}.
        </div>
      )}
      <div
        className={`cw-impact-note ${impact.undoable ? 'cw-impact-undoable' : 'cw-impact-not-undoable'}`}
        data-testid="cw-impact-undo"
        data-undoable={impact.undoable ? 'true' : 'false'}
      >
        {impact.undoable ? trans.__('Can be undone in the kernel.') : trans.__('Cannot be undone in the kernel')}
        {impact.not_undoable_reason && (
          <>
            {impact.undoable ? ' ' : ': '}
            <VisibleText text={impact.not_undoable_reason} />
          </>
        )}
      </div>
    </div>
  );
}

/**
 * "Save as rule" on a rejection: off by default; when ticked, an editable
 * text pre-filled with the suggested rule, kept in .cellwright/rules.md.
 */
export function SaveRuleOption(props: {
  id: string;
  saving: boolean;
  text: string;
  disabled: boolean;
  onSaving: (saving: boolean) => void;
  onText: (text: string) => void;
}): JSX.Element {
  const trans = useTrans();
  return (
    <div className="cw-save-rule">
      <label className="cw-label">
        <input
          type="checkbox"
          data-testid="cw-save-rule"
          checked={props.saving}
          disabled={props.disabled}
          onChange={e => props.onSaving(e.target.checked)}
        />{' '}
        {trans.__('Save as rule (the agent follows it from now on in this workspace)')}
      </label>
      {props.saving && (
        <input
          id={`cw-rule-${props.id}`}
          className="cw-input"
          aria-label={trans.__('Rule')}
          data-testid="cw-rule-text"
          value={props.text}
          maxLength={300}
          disabled={props.disabled}
          onChange={e => props.onText(e.target.value)}
        />
      )}
    </div>
  );
}

/**
 * What approving a run_cell or edit_cell leaves stale (issue 42): "redefines df, read by cells 4,
 * 7, 9", from the server's graph; the text names code, so it is rendered inert.
 */
export function MakesStaleView(props: { makesStale: MakesStale | null | undefined }): JSX.Element | null {
  const trans = useTrans();
  const text = props.makesStale?.text;
  if (!text) {
    return null;
  }
  return (
    <div className="cw-makes-stale" data-testid="cw-makes-stale" role="note">
      <span className="cw-label">{trans.__('Leaves stale: ')}</span>
      <VisibleText text={text} />
    </div>
  );
}
