/**
 * The live notebook's cells as the run request and the approval decision
 * carry them (`notebook_cells`): what `edit_cell` diffs against, saved or
 * not. Bounded: past `MAX_LIVE_CELLS_BYTES` of source, the remaining cells
 * go without their source (the server then reads those from the saved
 * file) rather than making the request fail on its size.
 */
import { LiveCell } from '../contract.gen';

export const MAX_LIVE_CELLS_BYTES = 2_000_000;

/** A cell as the browser has it now. */
export interface INotebookCell {
  id: string;
  cell_type: string;
  source: string;
}

const encoder = new TextEncoder();

function bytes(text: string): number {
  return encoder.encode(text).length;
}

/** The cells to send: id, type and source, sources dropped beyond `limit` bytes. */
export function liveCells(
  cells: Iterable<INotebookCell>,
  limit = MAX_LIVE_CELLS_BYTES
): LiveCell[] {
  const out: LiveCell[] = [];
  let used = 0;
  let full = false;
  for (const cell of cells) {
    const cellType: LiveCell['cell_type'] =
      cell.cell_type === 'markdown' || cell.cell_type === 'raw' ? cell.cell_type : 'code';
    // id, type and JSON punctuation: about 80 bytes a cell.
    used += 80 + cell.id.length;
    let source = cell.source;
    if (!full) {
      const size = bytes(source);
      if (used + size > limit) {
        full = true;
      } else {
        used += size;
      }
    }
    out.push(full ? { id: cell.id, cell_type: cellType, source: '', truncated: true } : { id: cell.id, cell_type: cellType, source });
  }
  return out;
}
