/**
 * Characters that change what text means without showing: a carriage return
 * or ANSI escape rewrites a terminal line, backspace erases, bidi controls
 * reorder code ("Trojan Source"), zero-width and tag characters hide text.
 * An approval card shows each one as a marker, so what the user reads is
 * what runs. Newline and tab show as themselves.
 */

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

const NAMES: Record<number, string> = {
  0x00: 'null',
  0x07: 'bell',
  0x08: 'backspace',
  0x0b: 'vertical tab',
  0x0c: 'form feed',
  0x0d: 'carriage return',
  0x1b: 'escape (ANSI sequence)',
  0x7f: 'delete',
  0x85: 'next line',
  0xad: 'soft hyphen',
  0x061c: 'Arabic letter mark',
  0x180e: 'Mongolian vowel separator',
  0x200b: 'zero-width space',
  0x200c: 'zero-width non-joiner',
  0x200d: 'zero-width joiner',
  0x200e: 'left-to-right mark',
  0x200f: 'right-to-left mark',
  0x2028: 'line separator',
  0x2029: 'paragraph separator',
  0x202a: 'left-to-right embedding',
  0x202b: 'right-to-left embedding',
  0x202c: 'pop directional formatting',
  0x202d: 'left-to-right override',
  0x202e: 'right-to-left override',
  0x2060: 'word joiner',
  0x2066: 'left-to-right isolate',
  0x2067: 'right-to-left isolate',
  0x2068: 'first strong isolate',
  0x2069: 'pop directional isolate',
  0xfeff: 'zero-width no-break space'
};

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

export function describeControl(char: string): IControl {
  const cp = char.codePointAt(0) ?? 0;
  let label: string;
  if (ESCAPES[cp]) {
    label = ESCAPES[cp];
  } else if (cp <= 0x9f) {
    label = `\\x${hex(cp, 2).toLowerCase()}`;
  } else {
    label = `<U+${hex(cp, 4)}>`;
  }
  let name = NAMES[cp];
  if (!name) {
    name =
      cp >= 0xe0000
        ? 'tag character (invisible)'
        : cp <= 0x9f
          ? 'control character'
          : 'invisible formatting character';
  }
  return { char, label, name: `${name} (U+${hex(cp, 4)})` };
}

/**
 * Split text into plain runs and markers. `breakAfterCR`: a CR not followed
 * by LF also shows a line break, as Python reads it (for code, not shell).
 */
export function splitControls(text: string, options: { breakAfterCR?: boolean } = {}): ISegment[] {
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
    const segment: ISegment = { text: char, control: describeControl(char) };
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
  return splitControls(text)
    .map(s => (s.control ? s.control.label : s.text))
    .join('');
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
