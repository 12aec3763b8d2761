import * as React from 'react';
import { useMemo } from 'react';

import { splitControls } from '../visibleControls';
import { useTrans } from './translation';

/**
 * Text with every hidden control character shown as a marker (`\r`,
 * `<U+202E>`), for what the user approves. `code`: a lone CR also breaks the
 * line, as Python reads it.
 */
export function VisibleText(props: { text: string; code?: boolean }): JSX.Element {
  const { text, code } = props;
  const trans = useTrans();
  const segments = useMemo(() => splitControls(text, trans, { breakAfterCR: !!code }), [text, code, trans]);
  return (
    <>
      {segments.map((segment, i) =>
        segment.control ? (
          <React.Fragment key={i}>
            <span
              className="cw-ctrl"
              data-testid="cw-control-char"
              data-control={segment.control.label}
              title={segment.control.name}
              aria-label={segment.control.name}
              role="img"
            >
              {segment.control.label}
            </span>
            {segment.breakAfter ? '\n' : ''}
          </React.Fragment>
        ) : (
          <React.Fragment key={i}>{segment.text}</React.Fragment>
        )
      )}
    </>
  );
}
