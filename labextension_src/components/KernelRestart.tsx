import * as React from 'react';
import { useContext, useState } from 'react';

import { errorMessage } from '../api';
import { KernelRestarter } from '../kernels';
import { useTrans } from './translation';

/** How the panel restarts a kernel (given by the plugin: the notebook's own session first). */
export const KernelRestartContext = React.createContext<KernelRestarter | null>(null);

/**
 * "Restart kernel" under a kernel_unresponsive error. One click: the button
 * stays disabled once the restart went through.
 */
export function RestartKernelButton(props: { kernelId: string }): JSX.Element | null {
  const restart = useContext(KernelRestartContext);
  const [state, setState] = useState<'idle' | 'restarting' | 'done' | 'failed'>('idle');
  const [failure, setFailure] = useState<string | null>(null);
  const trans = useTrans();
  if (!restart) {
    return null;
  }
  const onClick = (): void => {
    setState('restarting');
    setFailure(null);
    restart(props.kernelId).then(
      () => setState('done'),
      error => {
        setState('failed');
        setFailure(errorMessage(trans, error));
      }
    );
  };
  const label =
    state === 'restarting'
      ? trans.__('Restarting…')
      : state === 'done'
        ? trans.__('Kernel restarted')
        : trans.__('Restart kernel');
  return (
    <div className="cw-restart-kernel">
      <button
        type="button"
        className="cw-button cw-button-danger"
        data-testid="cw-restart-kernel"
        title={trans.__('Restart the kernel: its variables are lost')}
        disabled={state === 'restarting' || state === 'done'}
        onClick={onClick}
      >
        {label}
      </button>
      {failure && (
        <span className="cw-error-hint" role="alert">
          {' ' + trans.__('Could not restart it: %1', failure)}
        </span>
      )}
    </div>
  );
}
