/**
 * What every provider client shares: construction options, the parameters that go into
 * the task id, and the split of a prompt into its cacheable prefix and the rest.
 */
import { createHash } from 'node:crypto';
import type { Prompt } from '../../core/model';
import type { ModelEntry } from './registry';

/** Options of a provider client. */
export interface ProviderClientOptions {
  /** Limit on one call (one attempt), headers and body. @default 600000 */
  timeoutMs?: number;
  /** A fetch to use instead of the global one (proxies, tests). Not used by Bedrock. */
  fetch?: typeof fetch;
  /** AWS settings for Bedrock; by default the SDK's credential chain and `entry.region`/AWS_REGION. */
  aws?: {
    region?: string;
    credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
  };
}

export const DEFAULT_TIMEOUT_MS = 600_000;

/** The parameters that change a model's answers, as the task id sees them. */
export function answerParams(entry: ModelEntry): Record<string, unknown> {
  return { model: entry.model, ...entry.params };
}

/** The prompt cut at its shared prefix; either part may be empty. */
export function splitPrompt(prompt: Prompt): { prefix: string; rest: string } {
  const cut = Math.max(0, Math.min(prompt.sharedPrefixChars, prompt.text.length));
  return { prefix: prompt.text.slice(0, cut), rest: prompt.text.slice(cut) };
}

/**
 * A stable key for the prefix (OpenAI `prompt_cache_key`), so that requests sharing a
 * paper are routed to the same cache. Undefined when there is no shared prefix.
 */
export function prefixCacheKey(prompt: Prompt): string | undefined {
  const { prefix } = splitPrompt(prompt);
  if (prefix.length === 0) return undefined;
  return 'rcb-' + createHash('sha256').update(prefix).digest('hex').slice(0, 40);
}
