import * as React from 'react';

import { Usage } from '../contract.gen';
import { contextFraction, contextText, costText, IUsageView, usageText } from '../model';
import { useTrans } from './translation';

/** One usage figure: tokens (marked when estimated) and the cost when prices are set. */
export function UsageFigures(props: { usage: Usage; testId?: string }): JSX.Element {
  const { usage } = props;
  const trans = useTrans();
  const cost = costText(trans, usage);
  return (
    <span
      className="cw-usage-figures"
      data-testid={props.testId}
      data-estimated={usage.estimated ? 'true' : 'false'}
    >
      {usageText(trans, usage)}
      {cost && <span className="cw-usage-cost">{` · ${cost}`}</span>}
    </span>
  );
}

/** How full the model's context is, as a meter, and whether older turns were summarised. */
export function ContextMeter(props: { usage: IUsageView }): JSX.Element | null {
  const { contextTokens, contextBudget, summarized } = props.usage;
  const trans = useTrans();
  const fraction = contextFraction(contextTokens, contextBudget);
  if (fraction === null || contextTokens === null || contextBudget === null) {
    return null;
  }
  const label = contextText(trans, contextTokens, contextBudget);
  const percent = Math.round(fraction * 100);
  const level = fraction >= 0.9 ? 'high' : fraction >= 0.7 ? 'medium' : 'low';
  return (
    <div className="cw-context" data-testid="cw-context">
      <span className="cw-context-label" aria-hidden="true">
        {trans.__('Context %1%', percent)}
      </span>
      <div
        className={`cw-context-meter cw-context-${level}`}
        role="meter"
        aria-label={trans.__('Context window used')}
        aria-valuetext={label}
        aria-valuemin={0}
        aria-valuemax={contextBudget}
        aria-valuenow={Math.min(contextTokens, contextBudget)}
        title={label}
      >
        <div className="cw-context-fill" style={{ width: `${Math.round(fraction * 100)}%` }} />
      </div>
      {summarized && (
        <span className="cw-context-note" data-testid="cw-context-summarized">
          {trans.__('older turns summarised')}
        </span>
      )}
    </div>
  );
}

/** The panel's footer: the thread's tokens so far, and the context meter. */
export function UsageFooter(props: { usage: IUsageView }): JSX.Element | null {
  const { usage } = props;
  const trans = useTrans();
  if (!usage.thread && usage.contextTokens === null) {
    return null;
  }
  return (
    <div className="cw-usage" data-testid="cw-usage" role="group" aria-label={trans.__('Usage of this thread')}>
      {usage.thread && (
        <div className="cw-usage-thread">
          <span className="cw-label">{trans.__('Thread: ')}</span>
          <UsageFigures usage={usage.thread} testId="cw-usage-thread" />
        </div>
      )}
      <ContextMeter usage={usage} />
    </div>
  );
}
