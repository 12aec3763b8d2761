import * as React from 'react';
import { useEffect, useState } from 'react';

import { CellwrightAPI } from '../api';
import { completionEnded, completionUsageText } from '../completion/lines';
import { CompletionUsage } from '../contract.gen';
import { useTrans } from './translation';

const REFRESH_MS = 2000; // at most one read of the counters per this while completions keep coming

/** This server's inline completion usage, apart from the thread's: read on mount and after completions. */
export function CompletionUsageLine(props: { api: CellwrightAPI }): JSX.Element | null {
  const { api } = props;
  const trans = useTrans();
  const [usage, setUsage] = useState<CompletionUsage | null>(null);
  useEffect(() => {
    let alive = true;
    let timer: ReturnType<typeof setTimeout> | null = null;
    const load = (): void => {
      timer = null;
      api.request<CompletionUsage>('completions/usage').then(
        answer => alive && setUsage(answer),
        () => undefined // an older server without the route: nothing to show
      );
    };
    const later = (): void => {
      timer = timer ?? setTimeout(load, REFRESH_MS);
    };
    load();
    completionEnded.connect(later);
    return () => {
      alive = false;
      completionEnded.disconnect(later);
      if (timer !== null) {
        clearTimeout(timer);
      }
    };
  }, [api]);
  const text = usage && completionUsageText(trans, usage);
  return text ? (
    <div className="cw-completion-usage" data-testid="cw-completion-usage">
      {text}
    </div>
  ) : null;
}
