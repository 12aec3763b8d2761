import { ISignal } from '@lumino/signaling';
import { useEffect, useReducer } from 'react';

/**
 * Re-render the calling component whenever `signal` fires. Connects on mount
 * and disconnects on unmount (or when the signal changes).
 */
export function useSignal<T>(signal: ISignal<T, any> | null | undefined): void {
  const [, bump] = useReducer((n: number) => n + 1, 0);
  useEffect(() => {
    if (!signal) {
      return;
    }
    const slot = () => bump();
    signal.connect(slot);
    return () => {
      signal.disconnect(slot);
    };
  }, [signal]);
}
