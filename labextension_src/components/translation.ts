/**
 * The panel's user-visible strings go through JupyterLab's ITranslator:
 * the plugin hands its translator to the panel, which provides the
 * `cellwright` bundle to every component below it (`useTrans`). Without a
 * translator (tests, an app that lacks one), strings stay as written.
 */
import { ITranslator, nullTranslator, TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

export const TRANSLATION_DOMAIN = 'cellwright';

export function bundleOf(translator: ITranslator | null | undefined): TranslationBundle {
  return (translator ?? nullTranslator).load(TRANSLATION_DOMAIN);
}

export const TranslationContext = React.createContext<TranslationBundle>(bundleOf(null));

/** The `cellwright` translation bundle of the panel this component is in. */
export function useTrans(): TranslationBundle {
  return React.useContext(TranslationContext);
}
