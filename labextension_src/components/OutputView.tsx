import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import * as React from 'react';
import { useEffect, useRef } from 'react';

import { NbOutput } from '../contract.gen';
import { useTrans } from './translation';

/** The mime bundle JupyterLab's renderers understand for one nbformat output. */
export function outputBundle(output: NbOutput): {
  data: Record<string, any>;
  metadata: Record<string, any>;
} {
  switch (output.output_type) {
    case 'stream': {
      const text = Array.isArray(output.text) ? output.text.join('') : output.text;
      const mime =
        output.name === 'stderr'
          ? 'application/vnd.jupyter.stderr'
          : 'application/vnd.jupyter.stdout';
      return { data: { [mime]: text ?? '' }, metadata: {} };
    }
    case 'error':
      return {
        data: {
          'application/vnd.jupyter.stderr':
            (output.traceback ?? []).join('\n') || `${output.ename}: ${output.evalue}`
        },
        metadata: {}
      };
    case 'display_data':
    case 'execute_result':
      return {
        data: (output.data ?? {}) as Record<string, any>,
        metadata: (output.metadata ?? {}) as Record<string, any>
      };
    default:
      return { data: { 'text/plain': JSON.stringify(output) }, metadata: {} };
  }
}

/** One cell output, rendered with the notebook's own renderers (images too). */
export function OutputView(props: {
  rendermime: IRenderMimeRegistry;
  output: NbOutput;
}): JSX.Element {
  const { rendermime, output } = props;
  const host = useRef<HTMLDivElement>(null);
  const trans = useTrans();

  useEffect(() => {
    const { data, metadata } = outputBundle(output);
    const mime = rendermime.preferredMimeType(data, 'any');
    const node = host.current;
    if (!node) {
      return;
    }
    if (!mime) {
      node.textContent = trans.__('[output with no renderer]');
      return;
    }
    const renderer = rendermime.createRenderer(mime);
    const model = rendermime.createModel({ data, metadata, trusted: false });
    node.appendChild(renderer.node);
    renderer.renderModel(model).catch(error => {
      console.error('Cellwright: output rendering failed', error);
      renderer.node.textContent = String(data['text/plain'] ?? trans.__('[output]'));
    });
    return () => {
      renderer.dispose();
      node.textContent = '';
    };
  }, [rendermime, output, trans]);

  return (
    <div
      ref={host}
      className={`cw-output cw-output-${output.output_type}`}
      data-output-type={output.output_type}
    />
  );
}
