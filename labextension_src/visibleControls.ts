/**
 * Characters that change what text means without showing: a carriage return
 * or ANSI escape rewrites a terminal line, backspace erases, bidi controls
 * reorder code ("Trojan Source"), zero-width and tag characters hide text.
 * An approval card shows each one as a marker, so what the user reads is
 * what runs. Newline and tab show as themselves.
 */
import type { TranslationBundle } from '@jupyterlab/translation';

export interface IControl {
  /** The character itself. */
  char: string;
  /** What the marker shows: `\r`, `\x1b`, `<U+202E>`. */
  label: string;
  /** Its name, for the tooltip and screen readers. */
  name: string;
}

export interface ISegment {
  /** Plain text, or the control character of a marker. */
  text: string;
  control: IControl | null;
  /** A line break follows the marker (Python reads a lone CR as a line end). */
  breakAfter?: boolean;
}

/** A hidden character's name, for the tooltip and screen readers; null for one without its own. */
function controlName(trans: TranslationBundle, cp: number): string | null {
  switch (cp) {
    case 0x00:
      return trans.__('null');
    case 0x07:
      return trans.__('bell');
    case 0x08:
      return trans.__('backspace');
    case 0x0b:
      return trans.__('vertical tab');
    case 0x0c:
      return trans.__('form feed');
    case 0x0d:
      return trans.__('carriage return');
    case 0x1b:
      return trans.__('escape (ANSI sequence)');
    case 0x7f:
      return trans.__('delete');
    case 0x85:
      return trans.__('next line');
    case 0xad:
      return trans.__('soft hyphen');
    case 0x061c:
      return trans.__('Arabic letter mark');
    case 0x180e:
      return trans.__('Mongolian vowel separator');
    case 0x200b:
      return trans.__('zero-width space');
    case 0x200c:
      return trans.__('zero-width non-joiner');
    case 0x200d:
      return trans.__('zero-width joiner');
    case 0x200e:
      return trans.__('left-to-right mark');
    case 0x200f:
      return trans.__('right-to-left mark');
    case 0x2028:
      return trans.__('line separator');
    case 0x2029:
      return trans.__('paragraph separator');
    case 0x202a:
      return trans.__('left-to-right embedding');
    case 0x202b:
      return trans.__('right-to-left embedding');
    case 0x202c:
      return trans.__('pop directional formatting');
    case 0x202d:
      return trans.__('left-to-right override');
    case 0x202e:
      return trans.__('right-to-left override');
    case 0x2060:
      return trans.__('word joiner');
    case 0x2066:
      return trans.__('left-to-right isolate');
    case 0x2067:
      return trans.__('right-to-left isolate');
    case 0x2068:
      return trans.__('first strong isolate');
    case 0x2069:
      return trans.__('pop directional isolate');
    case 0xfeff:
      return trans.__('zero-width no-break space');
    default:
      return null;
  }
}

const ESCAPES: Record<number, string> = {
  0x00: '\\0',
  0x08: '\\b',
  0x0b: '\\v',
  0x0c: '\\f',
  0x0d: '\\r'
};

/** True for a character that must not reach the user unseen. */
export function isHiddenControl(cp: number): boolean {
  if (cp === 0x09 || cp === 0x0a) {
    return false;
  }
  return (
    cp < 0x20 ||
    (cp >= 0x7f && cp <= 0x9f) ||
    cp === 0xad ||
    cp === 0x061c ||
    cp === 0x180e ||
    (cp >= 0x200b && cp <= 0x200f) ||
    (cp >= 0x2028 && cp <= 0x202e) ||
    (cp >= 0x2060 && cp <= 0x2064) ||
    (cp >= 0x2066 && cp <= 0x2069) ||
    cp === 0xfeff ||
    (cp >= 0xfff9 && cp <= 0xfffb) ||
    (cp >= 0xe0000 && cp <= 0xe007f)
  );
}

function hex(cp: number, width: number): string {
  return cp.toString(16).toUpperCase().padStart(width, '0');
}

/** What a hidden character's marker shows: `\r`, `\x1b`, `<U+202E>`. */
function controlLabel(cp: number): string {
  if (ESCAPES[cp]) {
    return ESCAPES[cp];
  }
  return cp <= 0x9f ? `\\x${hex(cp, 2).toLowerCase()}` : `<U+${hex(cp, 4)}>`;
}

export function describeControl(char: string, trans: TranslationBundle): IControl {
  const cp = char.codePointAt(0) ?? 0;
  const label = controlLabel(cp);
  const name =
    controlName(trans, cp) ??
    (cp >= 0xe0000
      ? trans.__('tag character (invisible)')
      : cp <= 0x9f
        ? trans.__('control character')
        : trans.__('invisible formatting character'));
  return { char, label, name: trans.__('%1 (U+%2)', name, hex(cp, 4)) };
}

/**
 * Split text into plain runs and markers. `breakAfterCR`: a CR not followed
 * by LF also shows a line break, as Python reads it (for code, not shell).
 */
export function splitControls(
  text: string,
  trans: TranslationBundle,
  options: { breakAfterCR?: boolean } = {}
): ISegment[] {
  const segments: ISegment[] = [];
  let plain = '';
  const chars = Array.from(text); // code points: tag characters are surrogate pairs
  for (let i = 0; i < chars.length; i++) {
    const char = chars[i];
    if (!isHiddenControl(char.codePointAt(0) ?? 0)) {
      plain += char;
      continue;
    }
    if (plain) {
      segments.push({ text: plain, control: null });
      plain = '';
    }
    const segment: ISegment = { text: char, control: describeControl(char, trans) };
    if (options.breakAfterCR && char === '\r' && chars[i + 1] !== '\n') {
      segment.breakAfter = true;
    }
    segments.push(segment);
  }
  if (plain) {
    segments.push({ text: plain, control: null });
  }
  return segments;
}

/** The text with every hidden character written as its marker label. */
export function visibleString(text: string): string {
  return Array.from(text, char => {
    const cp = char.codePointAt(0) ?? 0;
    return isHiddenControl(cp) ? controlLabel(cp) : char;
  }).join('');
}

/** How many hidden characters the strings in a value (args, nested) hold. */
export function countHiddenControls(value: unknown, depth = 0): number {
  if (typeof value === 'string') {
    let n = 0;
    for (const char of value) {
      if (isHiddenControl(char.codePointAt(0) ?? 0)) {
        n++;
      }
    }
    return n;
  }
  if (depth > 20 || !value || typeof value !== 'object') {
    return 0;
  }
  let n = 0;
  for (const [key, item] of Object.entries(value as Record<string, unknown>)) {
    n += countHiddenControls(key, depth + 1) + countHiddenControls(item, depth + 1);
  }
  return n;
}
