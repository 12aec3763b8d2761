/**
 * The bound kernel's CPU and memory while a run is active: `POST resources`
 * with the kernel's id, polled every few seconds (with backoff after errors),
 * and a warning when memory passes the threshold of the settings registry
 * (`kernelMemoryWarningMB`). No polling when nothing runs.
 */
import type { TranslationBundle } from '@jupyterlab/translation';
import { ISignal, Signal } from '@lumino/signaling';

import { CellwrightAPI } from '../api';
import { KernelUsage, Resources } from '../contract.gen';

export const KERNEL_USAGE_INTERVAL_MS = 3000;
const MAX_INTERVAL_MS = 30000;

/** Settings-registry values, set by the plugin (index.ts) when they change. */
export const kernelUsagePrefs = { warnBytes: 4 * 1024 ** 3 };

export interface IKernelUsageView {
  usage: KernelUsage | null;
  error: string | null;
  warning: boolean;
}

/** Bytes as MiB/GiB, one decimal. */
export function bytesText(trans: TranslationBundle, bytes: number): string {
  const gib = bytes / 1024 ** 3;
  return gib >= 1 ? trans.__('%1 GiB', gib.toFixed(1)) : trans.__('%1 MiB', (bytes / 1024 ** 2).toFixed(0));
}

export function usageLine(trans: TranslationBundle, usage: KernelUsage): string {
  const text = trans.__('CPU %1% · memory %2', Math.round(usage.cpu_percent), bytesText(trans, usage.memory_bytes));
  if (usage.gpu_memory_bytes !== null && usage.gpu_memory_bytes !== undefined) {
    return trans.__('%1 · GPU %2', text, bytesText(trans, usage.gpu_memory_bytes));
  }
  return text;
}

export class KernelUsageMonitor {
  constructor(
    private readonly _api: CellwrightAPI,
    private readonly _kernelId: () => string | undefined
  ) {}

  get changed(): ISignal<this, void> {
    return this._changed;
  }

  get view(): IKernelUsageView {
    const usage = this._usage;
    const warning = usage !== null && usage.memory_bytes >= kernelUsagePrefs.warnBytes;
    return { usage, error: this._error, warning };
  }

  /** Poll while `active`; stop (and keep the last figure) otherwise. */
  setActive(active: boolean): void {
    if (active === this._active || this._disposed) {
      return;
    }
    this._active = active;
    if (active) {
      this._delay = KERNEL_USAGE_INTERVAL_MS;
      void this._tick();
    } else if (this._timer !== null) {
      clearTimeout(this._timer);
      this._timer = null;
    }
  }

  dispose(): void {
    this._disposed = true;
    this.setActive(false);
    Signal.clearData(this);
  }

  private async _tick(): Promise<void> {
    this._timer = null;
    const kernelId = this._kernelId();
    if (kernelId) {
      try {
        const answer = await this._api.request<Resources>('resources', {
          method: 'POST',
          body: JSON.stringify({ kernel_id: kernelId }),
          headers: { 'Content-Type': 'application/json' }
        });
        const kernel = answer?.kernel;
        if (kernel && 'error' in kernel) {
          this._error = kernel.error;
        } else if (kernel) {
          this._usage = kernel as KernelUsage;
          this._error = null;
        }
        this._delay = KERNEL_USAGE_INTERVAL_MS;
      } catch (error) {
        this._error = error instanceof Error ? error.message : String(error);
        this._delay = Math.min(this._delay * 2, MAX_INTERVAL_MS);
      }
      if (!this._disposed) {
        this._changed.emit();
      }
    }
    if (this._active && !this._disposed) {
      this._timer = setTimeout(() => void this._tick(), this._delay);
    }
  }

  private _active = false;
  private _disposed = false;
  private _timer: ReturnType<typeof setTimeout> | null = null;
  private _delay = KERNEL_USAGE_INTERVAL_MS;
  private _usage: KernelUsage | null = null;
  private _error: string | null = null;
  private _changed = new Signal<this, void>(this);
}
