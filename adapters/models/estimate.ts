/**
 * What `rcb estimate` prints for one model: input tokens counted with the family's
 * tokenizer (or the stated approximation), the expected cost with and without prompt
 * caching, and the worst case a budget must be able to reserve.
 */
import { batchPricing, estimateGroupCost, sumEstimates, worstCaseCost, type CacheMode, type CostEstimate } from '../../core/cost';
import { cachePlanFor, supportsBatch, type ModelEntry } from './registry';
import { countTokens, promptTokensUpperBound, type TokenCountMethod } from './tokens';

/** One paper's prompts for one model: the shared prefix and each call's own suffix. */
export interface PromptGroup {
  /** Instructions + paper: the same for every call of the group. */
  prefix: string;
  /** The rest of each call's prompt, one per call (task x sample). */
  suffixes: string[];
}

export interface ModelEstimate extends CostEstimate {
  modelId: string;
  /** How the input tokens were counted. */
  tokenCount: TokenCountMethod;
  cacheMode: CacheMode;
  /** Output tokens assumed per call. */
  outputTokensPerCall: number;
  /** Sum over calls of the most each can cost (every call at its full output limit). */
  worstCaseUsd: number;
  /**
   * The same calls through the provider's batch API, at its batch prices; absent when the
   * model cannot be batched. No cache hits are counted: a batch's requests run in the
   * provider's order, not a paper's tasks back to back, and rcb sends them unmarked.
   */
  batch?: { usd: number; worstCaseUsd: number; pricesAsOf: string };
}

/**
 * Output tokens assumed per call when the caller has no better figure: a snippet answer
 * is a few hundred tokens, and reasoning models spend several thousand thinking first.
 * Capped by the entry's output limit. A stated assumption, printed with the estimate.
 */
export function defaultOutputTokens(entry: ModelEntry): number {
  const p = entry.params;
  const reasons = (p.reasoning_effort !== undefined && p.reasoning_effort !== 'none') || (p.thinking_budget ?? 0) > 0 || entry.provider === 'openai-responses';
  return Math.min(p.max_output_tokens, reasons ? 4000 : 600);
}

export function estimateModel(entry: ModelEntry, groups: PromptGroup[], opts: { outputTokensPerCall?: number } = {}): ModelEstimate {
  const plan = cachePlanFor(entry);
  const outputTokensPerCall = opts.outputTokensPerCall ?? defaultOutputTokens(entry);
  // The method depends on the entry alone; counting '' reads it without counting a prompt.
  const method: TokenCountMethod = countTokens('', entry).method;
  const batchPrices = supportsBatch(entry) ? batchPricing(entry.prices) : undefined;
  let worstCaseUsd = 0;
  let batchWorstUsd = 0;
  let batchUsd = 0;
  const estimates = groups.map((g) => {
    // A group repeats each task's suffix once per sample: count each distinct one once,
    // since its worst case tokenizes the whole prompt, paper included.
    const bySuffix = new Map<string, { tokens: number; worstCaseUsd: number; batchWorstUsd: number }>();
    const suffixTokens = g.suffixes.map((s) => {
      let c = bySuffix.get(s);
      if (!c) {
        const bound = promptTokensUpperBound(g.prefix + s, entry);
        c = {
          tokens: countTokens(s, entry).tokens,
          worstCaseUsd: worstCaseCost(bound, entry.params.max_output_tokens, entry.prices),
          batchWorstUsd: batchPrices ? worstCaseCost(bound, entry.params.max_output_tokens, batchPrices) : 0,
        };
        bySuffix.set(s, c);
      }
      worstCaseUsd += c.worstCaseUsd;
      batchWorstUsd += c.batchWorstUsd;
      return c.tokens;
    });
    const group = { prefixTokens: countTokens(g.prefix, entry).tokens, suffixTokens };
    if (batchPrices) batchUsd += estimateGroupCost(group, batchPrices, { mode: 'none', outputTokensPerCall }).usd;
    return estimateGroupCost(group, entry.prices, { mode: plan.mode, outputTokensPerCall, minCacheableTokens: plan.minTokens });
  });
  return {
    ...sumEstimates(estimates),
    modelId: entry.id,
    tokenCount: method,
    cacheMode: plan.mode,
    outputTokensPerCall,
    worstCaseUsd,
    ...(batchPrices ? { batch: { usd: batchUsd, worstCaseUsd: batchWorstUsd, pricesAsOf: entry.prices.batch!.as_of } } : {}),
  };
}
