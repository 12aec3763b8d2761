/**
 * Token usage as the panel writes it: "1,234 prompt · 56 completion ·
 * 1,000 cached", "≈ … (estimated)" when Cellwright counted instead of the
 * endpoint, and the cost when prices are set. Pure, for the footer, the run
 * summaries and their tests.
 */
import type { TranslationBundle } from '@jupyterlab/translation';

import { Usage } from '../contract.gen';

const NUMBER = new Intl.NumberFormat('en-US');

export function formatTokens(n: number): string {
  return NUMBER.format(Math.max(0, Math.round(n)));
}

/** A cost in the prices' currency: more digits for small amounts. */
export function formatCost(cost: number): string {
  if (cost === 0) {
    return '0';
  }
  if (cost < 0.01) {
    return cost.toPrecision(2);
  }
  return cost.toFixed(cost < 1 ? 3 : 2);
}

/** "1,234 prompt · 56 completion · 1,000 cached tokens", marked when estimated. */
export function usageText(trans: TranslationBundle, usage: Usage): string {
  const parts = [
    trans.__('%1 prompt', formatTokens(usage.prompt_tokens)),
    trans.__('%1 completion', formatTokens(usage.completion_tokens))
  ];
  if (typeof usage.cached_tokens === 'number' && usage.cached_tokens > 0) {
    parts.push(trans.__('%1 cached', formatTokens(usage.cached_tokens)));
  }
  const text = trans.__('%1 tokens', parts.join(' · '));
  return usage.estimated ? trans.__('≈ %1 (estimated)', text) : text;
}

/** "cost 0.012" or null when no price is set for the model. */
export function costText(trans: TranslationBundle, usage: Usage): string | null {
  return typeof usage.cost === 'number' ? trans.__('cost %1', formatCost(usage.cost)) : null;
}

/** How full the context is, from 0 to 1 (null without a budget). */
export function contextFraction(tokens: number | null, budget: number | null): number | null {
  if (tokens === null || budget === null || !(budget > 0)) {
    return null;
  }
  return Math.min(1, Math.max(0, tokens / budget));
}

/** "Context: 3,200 of 100,000 tokens (3%)". */
export function contextText(trans: TranslationBundle, tokens: number, budget: number): string {
  const fraction = contextFraction(tokens, budget) ?? 0;
  return trans.__(
    'Context: %1 of %2 tokens (%3%)',
    formatTokens(tokens),
    formatTokens(budget),
    Math.round(fraction * 100)
  );
}
