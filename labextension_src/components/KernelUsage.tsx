import * as React from 'react';
import { useEffect, useState } from 'react';

import { PanelModel } from '../model';
import { KernelUsageMonitor, usageLine } from '../model/kernelUsage';
import { useSignal } from './hooks';
import { useTrans } from './translation';

/**
 * The bound kernel's CPU and memory, live while a run is active (polled from
 * the server), with a warning past the memory threshold of the settings.
 */
export function KernelUsageView(props: { model: PanelModel }): JSX.Element | null {
  const { model } = props;
  const trans = useTrans();
  const [monitor] = useState(
    () => new KernelUsageMonitor(model.api, () => model.notebook?.kernelId())
  );
  useSignal(monitor.changed);
  const running = model.running;
  useEffect(() => monitor.setActive(running), [monitor, running]);
  useEffect(() => () => monitor.dispose(), [monitor]);
  const { usage, error, warning } = monitor.view;
  if (!running || (!usage && !error)) {
    return null;
  }
  return (
    <div className="cw-kernel-usage" data-testid="cw-kernel-usage" role="status" aria-label={trans.__('Kernel usage')}>
      <span className="cw-kernel-usage-label">{trans.__('Kernel')}</span>{' '}
      {usage ? (
        <span data-testid="cw-kernel-usage-figures" data-memory-bytes={usage.memory_bytes}>
          {usageLine(trans, usage)}
        </span>
      ) : (
        <span className="cw-kernel-usage-error">{error}</span>
      )}
      {warning && (
        <span className="cw-kernel-usage-warning" data-testid="cw-kernel-usage-warning">
          {' '}
          {trans.__('— memory is high')}
        </span>
      )}
    </div>
  );
}
