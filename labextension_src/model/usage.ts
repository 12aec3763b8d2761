/**
 * Token usage as the panel writes it: "1,234 prompt · 56 completion ·
 * 1,000 cached", "≈ … (estimated)" when Cellwright counted instead of the
 * endpoint, and the cost when prices are set. Pure, for the footer, the run
 * summaries and their tests.
 */
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
export function usageText(usage: Usage): string {
  const parts = [
    `${formatTokens(usage.prompt_tokens)} prompt`,
    `${formatTokens(usage.completion_tokens)} completion`
  ];
  if (typeof usage.cached_tokens === 'number' && usage.cached_tokens > 0) {
    parts.push(`${formatTokens(usage.cached_tokens)} cached`);
  }
  const text = `${parts.join(' · ')} tokens`;
  return usage.estimated ? `≈ ${text} (estimated)` : text;
}

/** "cost 0.012" or null when no price is set for the model. */
export function costText(usage: Usage): string | null {
  return typeof usage.cost === 'number' ? `cost ${formatCost(usage.cost)}` : null;
}

/** How full the context is, from 0 to 1 (null without a budget). */
export function contextFraction(tokens: number | null, budget: number | null): number | null {
  if (tokens === null || budget === null || !(budget > 0)) {
    return null;
  }
  return Math.min(1, Math.max(0, tokens / budget));
}

/** "Context: 3,200 of 100,000 tokens (3%)". */
export function contextText(tokens: number, budget: number): string {
  const fraction = contextFraction(tokens, budget) ?? 0;
  return `Context: ${formatTokens(tokens)} of ${formatTokens(budget)} tokens (${Math.round(fraction * 100)}%)`;
}
