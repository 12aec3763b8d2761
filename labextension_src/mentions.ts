/**
 * `@` mentions, as pure functions over the message text: where the mention
 * under the caret is, which candidates match it, what the keyboard does in
 * the list, what picking inserts, and how a sent message splits into text
 * and mention chips. No DOM, no Lumino: the composer and the conversation
 * use these, and the unit tests drive them directly.
 *
 * The rule for names: a mention is `@` followed by letters, digits, `_`,
 * `.`, `-` and `/` (so `@sales_df`, `@data/2024 sales.csv` is NOT one).
 * Paths with any other character (spaces, quotes, parentheses) are not
 * offered in the list: quoting would need a second grammar on the server
 * for a rare case, and the agent's file tools still reach such files.
 */

import type { Variables, VariablesRequest } from './contract.gen';

/** A thing the user can mention. `name` is what follows the `@`. */
export interface IMentionCandidate {
  kind: 'variable' | 'file';
  name: string;
  /** Variables: the type; files: "file" or "notebook". */
  type: string;
  /** Variables with a shape ("(120, 4)"). */
  shape?: string;
}

/** The `@query` the caret is in: `start` is the `@`, `end` the end of the token. */
export interface IMentionQuery {
  start: number;
  end: number;
  query: string;
}

/** One piece of a sent message: plain text or a mention chip. */
export type MessagePart = { kind: 'text'; text: string } | { kind: 'mention'; name: string };

// `\p{..}` needs the u flag; the same class is used everywhere so that what
// the list inserts is exactly what the chip renderer recognises.
const NAME_CHAR = /[\p{L}\p{N}_.\-/]/u;
const NAME_RE = /^[\p{L}\p{N}_.\-/]+$/u;
// A mention starts a word: `a@b.com` is an email, not a mention.
const MENTION_RE = /(^|[\s([{"'`,;:])@([\p{L}\p{N}_.\-/]+)/gu;

/** True when `name` can be written as a mention (see the rule above). */
export function isMentionable(name: string): boolean {
  return NAME_RE.test(name) && !name.endsWith('.') && !name.startsWith('/');
}

/**
 * The mention being typed at `caret`, or null. The token runs from an `@`
 * that starts a word up to the caret; text after the caret that continues
 * the token counts too (the pick replaces all of it).
 */
export function activeMention(text: string, caret: number): IMentionQuery | null {
  if (caret < 0 || caret > text.length) {
    return null;
  }
  let at = caret - 1;
  while (at >= 0 && NAME_CHAR.test(text[at])) {
    at--;
  }
  if (at < 0 || text[at] !== '@') {
    return null;
  }
  if (at > 0 && !/[\s([{"'`,;:]/.test(text[at - 1])) {
    return null;
  }
  let end = caret;
  while (end < text.length && NAME_CHAR.test(text[end])) {
    end++;
  }
  return { start: at, end, query: text.slice(at + 1, caret) };
}

/**
 * The candidates matching `query`, best first, at most `limit`. Case is
 * ignored. A name that starts with the query ranks before one whose last
 * path part does, before one that merely contains it; variables before
 * files at equal rank; then shorter names, then alphabetical.
 */
export function filterCandidates(
  candidates: readonly IMentionCandidate[],
  query: string,
  limit = 50
): IMentionCandidate[] {
  const q = query.toLowerCase();
  const seen = new Set<string>();
  const ranked: { c: IMentionCandidate; rank: number }[] = [];
  for (const c of candidates) {
    const key = `${c.kind}:${c.name}`;
    if (seen.has(key) || !isMentionable(c.name)) {
      continue;
    }
    seen.add(key);
    const name = c.name.toLowerCase();
    const base = name.slice(name.lastIndexOf('/') + 1);
    let rank: number;
    if (name.startsWith(q)) {
      rank = 0;
    } else if (base.startsWith(q)) {
      rank = 1;
    } else if (name.includes(q)) {
      rank = 2;
    } else {
      continue;
    }
    ranked.push({ c, rank: rank * 2 + (c.kind === 'variable' ? 0 : 1) });
  }
  ranked.sort(
    (a, b) =>
      a.rank - b.rank ||
      a.c.name.length - b.c.name.length ||
      (a.c.name < b.c.name ? -1 : a.c.name > b.c.name ? 1 : 0)
  );
  return ranked.slice(0, limit).map(r => r.c);
}

/**
 * Replace the mention being typed with `@name` and a space. Returns the new
 * text and where the caret goes (after the space).
 */
export function applyMention(
  text: string,
  at: IMentionQuery,
  name: string
): { text: string; caret: number } {
  const after = text.slice(at.end);
  const insert = `@${name}` + (after.startsWith(' ') ? '' : ' ');
  const next = text.slice(0, at.start) + insert + after;
  const caret = at.start + insert.length + (after.startsWith(' ') ? 1 : 0);
  return { text: next, caret };
}

/** Split a message into text and mentions, for the chips of a sent message. */
export function splitMentions(text: string): MessagePart[] {
  const parts: MessagePart[] = [];
  let last = 0;
  const push = (s: string): void => {
    if (!s) {
      return;
    }
    const prev = parts[parts.length - 1];
    if (prev && prev.kind === 'text') {
      prev.text += s;
    } else {
      parts.push({ kind: 'text', text: s });
    }
  };
  for (const match of text.matchAll(MENTION_RE)) {
    let name = match[2];
    // A sentence may end right after a mention: "plot @sales_df."
    const trimmed = name.replace(/[.\-/]+$/, '');
    if (!trimmed) {
      continue;
    }
    name = trimmed;
    const at = (match.index ?? 0) + match[1].length;
    push(text.slice(last, at));
    parts.push({ kind: 'mention', name });
    last = at + 1 + name.length;
  }
  push(text.slice(last));
  return parts;
}

// ---------------------------------------------------------------- keyboard

/** What a key does while the list is open. */
export type MenuKeyOutcome =
  | { kind: 'move'; active: number }
  | { kind: 'pick'; index: number }
  | { kind: 'close' }
  | { kind: 'pass' };

/**
 * The list's keyboard: ArrowDown/ArrowUp move (wrapping), Enter and Tab pick
 * the active item, Escape closes. With an empty list, Enter and Tab pass
 * through (Enter then sends the message), so an empty list never traps them.
 */
export function menuKey(
  key: string,
  active: number,
  count: number,
  mods: { shift?: boolean; ctrl?: boolean; alt?: boolean; meta?: boolean } = {}
): MenuKeyOutcome {
  if (mods.ctrl || mods.alt || mods.meta) {
    return { kind: 'pass' };
  }
  switch (key) {
    case 'Escape':
      return { kind: 'close' };
    case 'ArrowDown':
      return count ? { kind: 'move', active: (active + 1 + count) % count } : { kind: 'pass' };
    case 'ArrowUp':
      return count ? { kind: 'move', active: (active - 1 + count) % count } : { kind: 'pass' };
    case 'Enter':
      if (mods.shift) {
        return { kind: 'pass' };
      }
      return count ? { kind: 'pick', index: Math.min(Math.max(active, 0), count - 1) } : { kind: 'pass' };
    case 'Tab':
      if (mods.shift) {
        return { kind: 'pass' };
      }
      return count ? { kind: 'pick', index: Math.min(Math.max(active, 0), count - 1) } : { kind: 'pass' };
    default:
      return { kind: 'pass' };
  }
}

// ---------------------------------------------------------------- sources

/** `POST cellwright/api/variables`: body and answer (shapes are lists of ints). */
export type IVariablesRequest = VariablesRequest;
export type IVariablesAnswer = Variables;

/** `[3, 2]` -> "(3, 2)", `[5]` -> "(5,)", as Python writes the shape. */
export function formatShape(shape: unknown): string | undefined {
  // A string is taken as it is: an older or newer server may send one.
  if (typeof shape === 'string') {
    return shape || undefined;
  }
  if (Array.isArray(shape) && shape.length && shape.every(n => typeof n === 'number')) {
    return shape.length === 1 ? `(${shape[0]},)` : `(${shape.join(', ')})`;
  }
  return undefined;
}

/** Candidates from the variables route's answer (malformed entries dropped). */
export function variableCandidates(answer: IVariablesAnswer | null | undefined): IMentionCandidate[] {
  const list = Array.isArray(answer?.variables) ? answer!.variables : [];
  const out: IMentionCandidate[] = [];
  for (const v of list) {
    if (v && typeof v.name === 'string' && typeof v.type === 'string') {
      const shape = formatShape(v.shape);
      out.push({ kind: 'variable', name: v.name, type: v.type, ...(shape ? { shape } : {}) });
    }
  }
  return out;
}

/** The part of a Jupyter contents model the file list reads. */
export interface IContentsEntry {
  name: string;
  path: string;
  type: string;
}

/**
 * Candidates from a contents API directory listing: files and notebooks,
 * not hidden (no path part starting with "."), mentionable, at most `limit`.
 */
export function fileCandidates(
  entries: readonly IContentsEntry[] | null | undefined,
  limit = 200
): IMentionCandidate[] {
  const out: IMentionCandidate[] = [];
  for (const e of entries ?? []) {
    if (out.length >= limit) {
      break;
    }
    if (!e || typeof e.path !== 'string' || (e.type !== 'file' && e.type !== 'notebook')) {
      continue;
    }
    if (e.path.split('/').some(part => part.startsWith('.')) || !isMentionable(e.path)) {
      continue;
    }
    out.push({ kind: 'file', name: e.path, type: e.type });
  }
  return out;
}

/** The folder of a notebook path ("" for the root). */
export function folderOf(path: string | null | undefined): string {
  if (!path) {
    return '';
  }
  const i = path.lastIndexOf('/');
  return i < 0 ? '' : path.slice(0, i);
}

/**
 * The folders to list for a query: the notebook's folder and the root; and
 * when the query names a folder ("data/sa"), that folder too (relative to
 * the root). Never a hidden folder.
 */
export function foldersFor(query: string, notebookPath: string | null | undefined): string[] {
  const dirs = [folderOf(notebookPath), ''];
  const slash = query.lastIndexOf('/');
  if (slash > 0) {
    const dir = query.slice(0, slash);
    if (!dir.split('/').some(p => p.startsWith('.') || !p)) {
      dirs.push(dir);
    }
  }
  return [...new Set(dirs)];
}
