/**
 * What `rcb estimate` prints for one model: input tokens counted with the family's
 * tokenizer (or the stated approximation), the expected cost with and without prompt
 * caching, and the worst case a budget must be able to reserve.
 */
import { estimateGroupCost, sumEstimates, worstCaseCost, type CacheMode, type CostEstimate } from '../../core/cost';
import { cachePlanFor, type ModelEntry } from './registry';
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
  let worstCaseUsd = 0;
  const estimates = groups.map((g) => {
    // A group repeats each task's suffix once per sample: count each distinct one once,
    // since its worst case tokenizes the whole prompt, paper included.
    const bySuffix = new Map<string, { tokens: number; worstCaseUsd: number }>();
    const suffixTokens = g.suffixes.map((s) => {
      let c = bySuffix.get(s);
      if (!c) {
        const bound = promptTokensUpperBound(g.prefix + s, entry);
        c = { tokens: countTokens(s, entry).tokens, worstCaseUsd: worstCaseCost(bound, entry.params.max_output_tokens, entry.prices) };
        bySuffix.set(s, c);
      }
      worstCaseUsd += c.worstCaseUsd;
      return c.tokens;
    });
    return estimateGroupCost({ prefixTokens: countTokens(g.prefix, entry).tokens, suffixTokens }, entry.prices, {
      mode: plan.mode,
      outputTokensPerCall,
      minCacheableTokens: plan.minTokens,
    });
  });
  return { ...sumEstimates(estimates), modelId: entry.id, tokenCount: method, cacheMode: plan.mode, outputTokensPerCall, worstCaseUsd };
}
