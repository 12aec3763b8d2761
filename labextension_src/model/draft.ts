/**
 * What the composer holds besides its text: a cell attached by "Ask
 * Cellwright about this cell". Lives on the PanelModel so that the command
 * can fill it before the panel has rendered.
 */
import { ISignal, Signal } from '@lumino/signaling';

import { ICellContext } from '../cellContext';

export class ComposerDraft {
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /** The attached cell, or null. */
  get cell(): ICellContext | null {
    return this._cell;
  }

  /** Attach a cell (replacing any attached one). */
  attachCell(cell: ICellContext): void {
    this._cell = cell;
    this._changed.emit();
  }

  clear(): void {
    if (this._cell) {
      this._cell = null;
      this._changed.emit();
    }
  }

  private _cell: ICellContext | null = null;
  private _changed = new Signal<this, void>(this);
}
