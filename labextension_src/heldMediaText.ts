/**
 * The words of a held media placeholder (inertMarkdown.ts): a remote image,
 * video or audio that loads only when the user clicks. Each noun has its
 * own sentence, so a translation can agree with it.
 */
import type { TranslationBundle } from '@jupyterlab/translation';

export function heldMediaText(
  trans: TranslationBundle,
  noun: string,
  hosts: readonly string[],
  urls: readonly string[]
): { title: string; text: string } {
  const from = hosts.join(', ');
  const title = trans.__('Not loaded until you click: %1', urls.join(' '));
  switch (noun) {
    case 'video':
      return { title, text: trans.__('Load video from %1', from) };
    case 'audio':
      return { title, text: trans.__('Load audio from %1', from) };
    default:
      return { title, text: trans.__('Load image from %1', from) };
  }
}
