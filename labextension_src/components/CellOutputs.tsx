import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import * as React from 'react';
import { useLayoutEffect, useRef, useState } from 'react';

import { NbOutput } from '../contract.gen';
import { exceptionLine } from '../fixCell';
import { OutputView } from './OutputView';
import { VisibleText } from './VisibleText';
import { useTrans } from './translation';

/**
 * A notebook cell's outputs in the timeline. The notebook shows them in
 * full already, so the panel shows a few lines: an error as its exception
 * line (`ZeroDivisionError: division by zero`), other outputs cut to a
 * short box; "Show all" renders them as the notebook does.
 */
export function CellOutputs(props: {
  outputs: NbOutput[];
  rendermime: IRenderMimeRegistry;
  label: string;
}): JSX.Element {
  const { outputs, rendermime, label } = props;
  const trans = useTrans();
  const [expanded, setExpanded] = useState(false);
  const [overflows, setOverflows] = useState(false);
  const box = useRef<HTMLDivElement>(null);
  const hasError = outputs.some(o => o.output_type === 'error');

  useLayoutEffect(() => {
    const node = box.current;
    if (node && !expanded) {
      setOverflows(node.scrollHeight > node.clientHeight + 2);
    }
  });

  return (
    <div
      className={`cw-outputs${expanded ? '' : ' cw-outputs-collapsed'}`}
      role="group"
      aria-label={label}
      data-testid="cw-cell-outputs"
      data-expanded={expanded ? 'true' : 'false'}
    >
      <div ref={box} className="cw-outputs-box">
        {outputs.map((output, i) =>
          !expanded && output.output_type === 'error' ? (
            <div key={i} className="cw-output cw-output-error cw-output-exception" data-output-type="error">
              <VisibleText text={exceptionLine(output)} />
            </div>
          ) : (
            <OutputView key={i} rendermime={rendermime} output={output} />
          )
        )}
      </div>
      {(expanded || overflows || hasError) && (
        <button
          type="button"
          className="cw-link-button cw-outputs-toggle"
          aria-expanded={expanded}
          onClick={() => setExpanded(!expanded)}
        >
          {expanded ? trans.__('Show less') : hasError ? trans.__('Show the traceback') : trans.__('Show all')}
        </button>
      )}
    </div>
  );
}
