import { IRenderMimeRegistry, renderMarkdown } from '@jupyterlab/rendermime';
import * as React from 'react';
import { useEffect, useRef } from 'react';
import { TranslationBundle } from '@jupyterlab/translation';

import { makeInert } from '../inertMarkdown';
import { useTrans } from './translation';

/** Re-render at most this often while text streams in. */
const STREAM_THROTTLE_MS = 150;

export interface IMarkdownProps {
  rendermime: IRenderMimeRegistry;
  source: string;
  /** True while tokens still arrive: renders are throttled. */
  streaming?: boolean;
  className?: string;
  testId?: string;
}

/**
 * Render model-written Markdown into `host` without the page fetching
 * anything it names: JupyterLab's renderer (untrusted, so sanitized) writes
 * into a document with no browsing context, where nothing loads; the tree is
 * made inert there (remote images wait for a click, see inertMarkdown.ts) and
 * only then moved into the page. `allowed` keeps the images the user loaded
 * across re-renders.
 */
export async function renderInertMarkdown(
  rendermime: IRenderMimeRegistry,
  source: string,
  host: HTMLElement,
  allowed: Set<string>,
  trans: TranslationBundle
): Promise<void> {
  const scratchDocument = document.implementation.createHTMLDocument('');
  const scratch = scratchDocument.createElement('div');
  scratchDocument.body.appendChild(scratch);
  await renderMarkdown({
    host: scratch,
    source,
    trusted: false,
    sanitizer: rendermime.sanitizer,
    resolver: rendermime.resolver,
    linkHandler: rendermime.linkHandler,
    latexTypesetter: rendermime.latexTypesetter,
    markdownParser: rendermime.markdownParser,
    shouldTypeset: false // MathJax works on the page's document: after the move
  });
  makeInert(scratch, {
    base: document.baseURI,
    allowed,
    onLoad: urls => urls.forEach(url => allowed.add(url)),
    trans
  });
  host.replaceChildren(...Array.from(scratch.childNodes));
  if (rendermime.latexTypesetter && host.textContent && /[$\\]/.test(host.textContent)) {
    await rendermime.latexTypesetter.typeset(host);
  }
}

/**
 * Markdown rendered by JupyterLab's own markdown renderer, inert (see
 * renderInertMarkdown). Renders are serialized and, while streaming, throttled.
 */
export function Markdown(props: IMarkdownProps): JSX.Element {
  const { rendermime, source, streaming } = props;
  const body = useRef<HTMLDivElement>(null);
  const trans = useTrans();
  const state = useRef({
    rendered: null as string | null,
    wanted: '',
    busy: false,
    timer: undefined as ReturnType<typeof setTimeout> | undefined,
    alive: true,
    allowed: new Set<string>()
  });

  const flush = async (): Promise<void> => {
    const s = state.current;
    s.timer = undefined;
    const node = body.current;
    if (!node || s.busy || s.wanted === s.rendered || !s.alive) {
      return;
    }
    const text = s.wanted;
    s.busy = true;
    try {
      await renderInertMarkdown(rendermime, text, node, s.allowed, trans);
      s.rendered = text;
    } catch (error) {
      console.error('Cellwright: markdown rendering failed', error);
      s.rendered = text;
      node.textContent = text;
    } finally {
      s.busy = false;
    }
    if (s.alive && s.wanted !== s.rendered) {
      schedule(0);
    }
  };

  const schedule = (delay: number): void => {
    const s = state.current;
    if (s.timer === undefined) {
      s.timer = setTimeout(() => void flush(), delay);
    }
  };

  useEffect(() => {
    const s = state.current;
    s.alive = true;
    s.rendered = null;
    s.wanted = source;
    void flush();
    return () => {
      s.alive = false;
      clearTimeout(s.timer);
      s.timer = undefined;
    };
  }, [rendermime]);

  useEffect(() => {
    state.current.wanted = source;
    schedule(streaming ? STREAM_THROTTLE_MS : 0);
  }, [source, streaming]);

  return (
    <div className={`cw-markdown ${props.className ?? ''}`} data-testid={props.testId}>
      <div
        ref={body}
        className="jp-RenderedHTMLCommon jp-RenderedMarkdown cw-markdown-body"
        data-cw-inert="true"
      />
    </div>
  );
}
