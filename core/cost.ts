/**
 * What model calls cost: the price table types, the cost of a reported usage, the worst
 * case a call can cost (what a budget reserves before the call) and the estimates that
 * `rcb estimate` prints. Pure arithmetic; no I/O.
 *
 * Token conventions (every provider adapter maps its usage into these):
 * - `inputTokens` counts every prompt token, cached or not (OpenAI's `prompt_tokens`;
 *   Anthropic's `input_tokens + cache_read_input_tokens + cache_creation_input_tokens`).
 * - `cachedInputTokens` is the part of `inputTokens` read from the provider's prompt cache.
 * - `cacheWriteInputTokens` (optional) is the part written to the cache on this call, which
 *   Anthropic and Bedrock bill at a premium.
 * - `outputTokens` counts every billed output token, reasoning included (OpenAI's
 *   `completion_tokens` already includes reasoning; for Gemini the adapter adds
 *   `thoughtsTokenCount` to `candidatesTokenCount`). `reasoningTokens` is the subset spent
 *   on hidden reasoning, reported for information and never billed a second time.
 */
import type { TokenUsage } from './types';

/** Prices of one tier, USD per 1M tokens. */
export interface PriceTier {
  input: number;
  /** Input tokens read from the prompt cache. */
  cached_input: number;
  output: number;
  /** Input tokens written to the prompt cache (Anthropic, Bedrock); defaults to `input`. */
  cache_write?: number;
}

/** A model's list prices, as taken on `as_of`. */
export interface ModelPrices extends PriceTier {
  /** The day the prices were taken from the provider's page, `YYYY-MM-DD`. */
  as_of: string;
  /** Where they were taken from. */
  source?: string;
  /**
   * Prices for a request whose prompt exceeds `threshold_tokens` (Gemini Pro above 200K,
   * GPT-5.4 above 272K): the whole request is billed at this tier.
   */
  long_context?: PriceTier & { threshold_tokens: number };
  /**
   * Prices of the provider's batch API (about half the interactive ones), as taken on
   * their own `as_of` from their own `source`; absent when rcb does not batch this model.
   */
  batch?: BatchPrices;
}

/** A model's batch prices: a tier (with its own long-context tier, if any), dated and sourced. */
export interface BatchPrices extends PriceTier {
  as_of: string;
  source: string;
  long_context?: PriceTier & { threshold_tokens: number };
}

/** The prices a batch request is billed at, as a ModelPrices that costOf and worstCaseCost read; undefined without batch prices. */
export function batchPricing(prices: ModelPrices): ModelPrices | undefined {
  return prices.batch ? { ...prices.batch } : undefined;
}

/** Usage as billed: TokenUsage plus the cache writes that some providers charge extra. */
export interface BilledUsage extends TokenUsage {
  cacheWriteInputTokens?: number;
}

const PER_MILLION = 1_000_000;

/** The price tier a request with `promptTokens` input tokens is billed at. */
export function priceTier(promptTokens: number, prices: ModelPrices): PriceTier {
  const long = prices.long_context;
  return long && promptTokens > long.threshold_tokens ? long : prices;
}

/**
 * Cost of a call in USD from the usage the provider reported: cached input at the cached
 * price, cache writes at the write price, the rest of the input at the input price, and
 * every output token (reasoning included, see the conventions above) at the output price.
 */
export function costOf(usage: BilledUsage, prices: ModelPrices): number {
  const input = Math.max(0, usage.inputTokens);
  const tier = priceTier(input, prices);
  const cached = clamp(usage.cachedInputTokens, 0, input);
  const written = clamp(usage.cacheWriteInputTokens ?? 0, 0, input - cached);
  const fresh = input - cached - written;
  const usd = fresh * tier.input + cached * tier.cached_input + written * (tier.cache_write ?? tier.input) + Math.max(0, usage.outputTokens) * tier.output;
  return usd / PER_MILLION;
}

/**
 * The most a call can cost: every prompt token at the dearer of the input and cache-write
 * prices (a call may write the whole prefix to the cache) and the full `maxOutputTokens`
 * at the output price, in the tier the prompt falls in. This is what a budget reserves
 * before the call; `promptTokens` must itself be an upper bound (see
 * adapters/models/tokens.ts `promptTokensUpperBound`).
 */
export function worstCaseCost(promptTokens: number, maxOutputTokens: number, prices: ModelPrices): number {
  const input = Math.max(0, promptTokens);
  const tier = priceTier(input, prices);
  const inputPrice = Math.max(tier.input, tier.cache_write ?? tier.input);
  return (input * inputPrice + Math.max(0, maxOutputTokens) * tier.output) / PER_MILLION;
}

/** How a provider caches a shared prompt prefix, for estimates. */
export type CacheMode =
  /** No caching: every prompt token at the input price. */
  | 'none'
  /** The provider caches prefixes by itself (OpenAI, Gemini, DeepSeek): no write premium. */
  | 'automatic'
  /** rcb marks the prefix (Anthropic cache_control, Bedrock cachePoint): writes cost `cache_write`. */
  | 'explicit';

/** The calls of one paper, scheduled together so that they share the cached prefix. */
export interface PaperCallGroup {
  /** Tokens of the shared prefix (instructions + paper). */
  prefixTokens: number;
  /** Tokens of each call's own suffix, one per call (task x sample). */
  suffixTokens: number[];
}

export interface CostEstimate {
  calls: number;
  inputTokens: number;
  /** Input tokens expected to be read from the cache. */
  cachedInputTokens: number;
  outputTokens: number;
  /** Expected cost with prompt caching as `mode` allows, USD. */
  usd: number;
  /** The same calls with no caching at all, USD. */
  usdWithoutCaching: number;
  /** `usdWithoutCaching - usd`: what caching saves (negative when writes cost more than reads save). */
  savingUsd: number;
}

export interface EstimateOptions {
  mode: CacheMode;
  /** Expected output tokens per call (reasoning included). */
  outputTokensPerCall: number;
  /** Providers ignore cache markers on shorter prefixes (Anthropic: 1024 or more). @default 1024 */
  minCacheableTokens?: number;
}

/**
 * Expected cost of one paper's calls when they run back to back within the cache's
 * lifetime: the first call writes the prefix, every later call reads it. This is the best
 * case that scheduling a paper's tasks together aims at; a prefix shorter than the
 * provider's minimum is never cached.
 */
export function estimateGroupCost(group: PaperCallGroup, prices: ModelPrices, opts: EstimateOptions): CostEstimate {
  const minCacheable = opts.minCacheableTokens ?? 1024;
  const cacheable = opts.mode !== 'none' && group.prefixTokens >= minCacheable;
  const out = Math.max(0, opts.outputTokensPerCall);
  let usd = 0;
  let usdWithoutCaching = 0;
  let inputTokens = 0;
  let cachedInputTokens = 0;
  group.suffixTokens.forEach((suffix, i) => {
    const prompt = group.prefixTokens + suffix;
    inputTokens += prompt;
    const uncached = costOf(usage(prompt, 0, 0, out), prices);
    usdWithoutCaching += uncached;
    if (!cacheable) {
      usd += uncached;
    } else if (i === 0) {
      const written = opts.mode === 'explicit' ? group.prefixTokens : 0;
      usd += costOf(usage(prompt, 0, written, out), prices);
    } else {
      cachedInputTokens += group.prefixTokens;
      usd += costOf(usage(prompt, group.prefixTokens, 0, out), prices);
    }
  });
  const calls = group.suffixTokens.length;
  return { calls, inputTokens, cachedInputTokens, outputTokens: out * calls, usd, usdWithoutCaching, savingUsd: usdWithoutCaching - usd };
}

/** Sum of estimates (papers of a run, models of a sweep). */
export function sumEstimates(estimates: CostEstimate[]): CostEstimate {
  const total: CostEstimate = { calls: 0, inputTokens: 0, cachedInputTokens: 0, outputTokens: 0, usd: 0, usdWithoutCaching: 0, savingUsd: 0 };
  for (const e of estimates) {
    total.calls += e.calls;
    total.inputTokens += e.inputTokens;
    total.cachedInputTokens += e.cachedInputTokens;
    total.outputTokens += e.outputTokens;
    total.usd += e.usd;
    total.usdWithoutCaching += e.usdWithoutCaching;
    total.savingUsd += e.savingUsd;
  }
  return total;
}

function usage(input: number, cached: number, written: number, output: number): BilledUsage {
  return { inputTokens: input, cachedInputTokens: cached, cacheWriteInputTokens: written, outputTokens: output, reasoningTokens: 0 };
}

function clamp(x: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, x));
}
