import * as React from 'react';

import { ThreadDiff } from '../contract.gen';
import { VisibleText } from './VisibleText';
import { useTrans } from './translation';

/**
 * What a range of the agent's steps changed (GET threads/{id}/diff): per
 * notebook cell and per file, the diff from before the range to after it.
 * The rewind card shows it for the steps it would go back over.
 */
export function StepChanges(props: { diff: ThreadDiff }): JSX.Element {
  const { cells, files } = props.diff;
  const trans = useTrans();
  if (!cells.length && !files.length) {
    return (
      <div className="cw-step-changes" data-testid="cw-step-changes">
        {trans.__('These steps changed no cell and no file.')}
      </div>
    );
  }
  return (
    <div className="cw-step-changes" data-testid="cw-step-changes">
      {cells.map(cell => (
        <details key={cell.cell_id} className="cw-rewind-diff" data-testid="cw-step-change-cell" data-cell-id={cell.cell_id}>
          <summary>
            {cell.before
              ? trans.__('Cell %1 (edited)', cell.cell_id)
              : trans.__('Cell %1 (%2, added)', cell.cell_id, cell.cell_type)}
            {!cell.before_known && trans.__(' — its source from before is not known')}
          </summary>
          <pre className="cw-code">
            <VisibleText text={cell.diff} code />
          </pre>
        </details>
      ))}
      {files.map(file => (
        <details key={file.path} className="cw-rewind-diff" data-testid="cw-step-change-file" data-path={file.path}>
          <summary>
            {file.path}
            {file.changed_since && trans.__(' — changed since by someone else')}
            {!file.before_known &&
              trans.__(' — %1', file.why_unknown ?? trans.__('its content from before is not known'))}
          </summary>
          <pre className="cw-code">
            <VisibleText text={file.diff} code />
          </pre>
        </details>
      ))}
    </div>
  );
}
