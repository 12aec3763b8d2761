import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { IRenderMime } from '@jupyterlab/rendermime';
import * as React from 'react';
import { useEffect, useRef } from 'react';

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
 * Markdown rendered by JupyterLab's own markdown renderer (untrusted: HTML in
 * the model's answer is sanitized). Renders are serialized and, while
 * streaming, throttled.
 */
export function Markdown(props: IMarkdownProps): JSX.Element {
  const { rendermime, source, streaming } = props;
  const host = useRef<HTMLDivElement>(null);
  const state = useRef({
    renderer: null as IRenderMime.IRenderer | null,
    rendered: null as string | null,
    wanted: '',
    busy: false,
    timer: undefined as ReturnType<typeof setTimeout> | undefined,
    alive: true
  });

  const flush = async (): Promise<void> => {
    const s = state.current;
    s.timer = undefined;
    if (!s.renderer || s.busy || s.wanted === s.rendered || !s.alive) {
      return;
    }
    const text = s.wanted;
    s.busy = true;
    try {
      const model = rendermime.createModel({
        data: { 'text/markdown': text },
        trusted: false
      });
      await s.renderer.renderModel(model);
      s.rendered = text;
    } catch (error) {
      console.error('Cellwright: markdown rendering failed', error);
      s.rendered = text;
      if (s.renderer) {
        s.renderer.node.textContent = text;
      }
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
    const renderer = rendermime.createRenderer('text/markdown');
    renderer.addClass('cw-markdown-body');
    s.renderer = renderer;
    s.rendered = null;
    s.wanted = source;
    host.current?.appendChild(renderer.node);
    void flush();
    return () => {
      s.alive = false;
      clearTimeout(s.timer);
      s.timer = undefined;
      s.renderer = null;
      renderer.dispose();
    };
  }, [rendermime]);

  useEffect(() => {
    state.current.wanted = source;
    schedule(streaming ? STREAM_THROTTLE_MS : 0);
  }, [source, streaming]);

  return (
    <div
      ref={host}
      className={`cw-markdown ${props.className ?? ''}`}
      data-testid={props.testId}
    />
  );
}
