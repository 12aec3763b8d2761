import * as React from 'react';
import { useMemo } from 'react';

import { splitControls } from '../visibleControls';

/**
 * Text with every hidden control character shown as a marker (`\r`,
 * `<U+202E>`), for what the user approves. `code`: a lone CR also breaks the
 * line, as Python reads it.
 */
export function VisibleText(props: { text: string; code?: boolean }): JSX.Element {
  const { text, code } = props;
  const segments = useMemo(() => splitControls(text, { breakAfterCR: !!code }), [text, code]);
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
