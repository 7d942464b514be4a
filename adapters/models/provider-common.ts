/**
 * What every provider client shares: construction options, the fields and the call
 * deadline of the ProviderClient base, the parameters that go into the task id, and the
 * split of a prompt into its cacheable prefix and the rest.
 */
import { createHash } from 'node:crypto';
import { ModelError, type FinishReason, type ModelClient, type ModelRequest, type ModelResponse, type Prompt } from '../../core/model';
import type { BilledUsage } from '../../core/cost';
import { count, deadline, isCallerAbort } from './provider-errors';
import type { ModelEntry } from './registry';
import type { ProviderTable } from './provider-module';

/** Options of a provider client. */
export interface ProviderClientOptions {
  /** The provider modules clients are built from. @default PROVIDER_MODULES */
  providers?: ProviderTable;
  /** Limit on one call (one attempt), headers and body. @default 600000 */
  timeoutMs?: number;
  /** A fetch to use instead of the global one (proxies, tests). Not used by Bedrock. */
  fetch?: typeof fetch;
  /** AWS settings for Bedrock; by default the SDK's credential chain and `entry.region`/AWS_REGION. */
  aws?: {
    region?: string;
    credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
    /** S3 endpoint of Bedrock batch input and output (a local stand-in in tests); path-style when set. */
    s3Endpoint?: string;
    /** Fewest records Bedrock accepts in a batch inference job. @default 100 (its quota) */
    batchMinRequests?: number;
  };
}

export const DEFAULT_TIMEOUT_MS = 600_000;

/**
 * A client for one registry entry: its id and answer parameters, and one attempt per
 * `complete` under the call timeout. Subclasses build the request and map the answer.
 */
export abstract class ProviderClient implements ModelClient {
  readonly id: string;
  readonly params: Record<string, unknown>;
  readonly offline = false;
  protected readonly timeoutMs: number;

  constructor(
    protected readonly entry: ModelEntry,
    /** Names the provider in error messages. */
    protected readonly provider: string,
    opts: ProviderClientOptions,
  ) {
    this.id = entry.id;
    this.params = answerParams(entry);
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  abstract complete(req: ModelRequest): Promise<ModelResponse>;

  /**
   * Run `send` under a deadline of `timeoutMs` merged with the caller's signal (see
   * deadline()). A caller abort passes through unclassified so that nothing retries it, a
   * ModelError passes as it is, our own deadline becomes a timeout; any other error goes
   * to the provider's `classify`.
   */
  protected async withDeadline<T>(req: ModelRequest, send: (signal: AbortSignal) => Promise<T>, classify: (err: unknown) => ModelError): Promise<T> {
    const d = deadline(this.timeoutMs, req.signal);
    try {
      return await send(d.signal);
    } catch (err) {
      if (isCallerAbort(req.signal) && !d.timedOut()) throw err;
      if (err instanceof ModelError) throw err;
      if (d.timedOut()) throw new ModelError('timeout', `${this.provider}: no complete response within the call timeout`);
      throw classify(err);
    } finally {
      d.dispose();
    }
  }
}

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
  return `rcb-${createHash('sha256').update(prefix).digest('hex').slice(0, 40)}`;
}

/**
 * A Claude stop reason (Anthropic's Messages API and Bedrock's Converse name them alike) as
 * rcb's finish reason; `filtered` are the provider's words for a refusal or a filter.
 */
export function claudeFinishReason(reason: unknown, filtered: readonly string[]): FinishReason {
  if (reason === 'end_turn' || reason === 'stop_sequence') return 'stop';
  if (reason === 'max_tokens' || reason === 'model_context_window_exceeded') return 'length';
  return typeof reason === 'string' && filtered.includes(reason) ? 'content_filter' : 'other';
}

/**
 * Usage of an API whose input count leaves out the cache reads and writes (Anthropic,
 * Bedrock), in rcb's convention: input counts every prompt token. Thinking is billed inside
 * the output and not reported apart.
 */
export function usageWithCacheApart(u: { input: unknown; cacheRead: unknown; cacheWrite: unknown; output: unknown }): BilledUsage {
  const read = count(u.cacheRead);
  const written = count(u.cacheWrite);
  return {
    inputTokens: count(u.input) + read + written,
    cachedInputTokens: read,
    cacheWriteInputTokens: written,
    outputTokens: count(u.output),
    reasoningTokens: 0,
  };
}
