/**
 * OpenAI Chat Completions, for OpenAI's own API (`openai`) and for any endpoint that
 * speaks it (`openai-compatible`: vLLM, OpenRouter, DeepSeek, xAI, Together).
 */
import OpenAI from 'openai';
import type { FinishReason, ModelRequest, ModelResponse } from '../../../core/model';
import type { BilledUsage } from '../../../core/cost';
import { asRecord, count, errorFromSdk, malformed } from '../provider-errors';
import { prefixCacheKey, ProviderClient, type ProviderClientOptions } from '../provider-common';
import type { ModelEntry } from '../registry';
import { OpenAIBatchClient } from './openai-batch';
import { OPENAI_FAMILY, type ProviderModule } from '../provider-module';

export class OpenAIChatClient extends ProviderClient {
  private readonly sdk: OpenAI;

  constructor(entry: ModelEntry, apiKey: string, opts: ProviderClientOptions = {}) {
    super(entry, entry.provider === 'openai' ? 'openai' : `openai-compatible(${entry.base_url})`, opts);
    this.sdk = new OpenAI({
      apiKey,
      baseURL: entry.base_url,
      maxRetries: 0, // our retry layer owns retries
      timeout: this.timeoutMs,
      fetch: opts.fetch,
    });
  }

  /** The request body, exported for tests and for `rcb estimate --show-request`. */
  body(req: ModelRequest): Record<string, unknown> {
    const p = this.entry.params;
    const native = this.entry.provider === 'openai';
    const body: Record<string, unknown> = {
      model: this.entry.model,
      messages: [{ role: 'user', content: req.prompt.text }],
      // OpenAI's reasoning models refuse max_tokens; most compatible servers only know it.
      [native ? 'max_completion_tokens' : 'max_tokens']: p.max_output_tokens,
    };
    if (p.temperature !== undefined) body.temperature = p.temperature;
    if (p.top_p !== undefined) body.top_p = p.top_p;
    if (p.seed !== undefined) body.seed = p.seed;
    if (p.reasoning_effort !== undefined) body.reasoning_effort = p.reasoning_effort;
    if (native) {
      const key = prefixCacheKey(req.prompt);
      if (key) body.prompt_cache_key = key;
    }
    return { ...body, ...p.extra_body };
  }

  async complete(req: ModelRequest): Promise<ModelResponse> {
    const raw = await this.withDeadline(
      req,
      (signal) => this.sdk.chat.completions.create(this.body(req) as never, { signal }),
      (err) => errorFromSdk(this.provider, err),
    );
    return parseChatCompletion(this.provider, raw);
  }
}

/** Map a Chat Completions response body into a ModelResponse. */
export function parseChatCompletion(provider: string, raw: unknown): ModelResponse {
  const res = asRecord(raw);
  if (!res) throw malformed(provider, `expected a JSON object, got ${typeof raw === 'string' ? 'text' : typeof raw}`);
  if (!Array.isArray(res.choices) || res.choices.length === 0) throw malformed(provider, 'no choices');
  const choice = asRecord(res.choices[0]);
  const message = asRecord(choice?.message);
  if (!choice || !message) throw malformed(provider, 'choice without a message');
  const text = typeof message.content === 'string' ? message.content : '';
  let finishReason = chatFinish(choice.finish_reason);
  if (typeof message.refusal === 'string' && message.refusal !== '' && text === '') finishReason = 'content_filter';
  return { text, finishReason, usage: chatUsage(res.usage), providerModel: typeof res.model === 'string' ? res.model : undefined };
}

function chatFinish(reason: unknown): FinishReason {
  switch (reason) {
    case 'stop':
      return 'stop';
    case 'length':
      return 'length';
    case 'content_filter':
      return 'content_filter';
    default:
      return 'other';
  }
}

function chatUsage(u: unknown): BilledUsage {
  const usage = asRecord(u) ?? {};
  const prompt = asRecord(usage.prompt_tokens_details) ?? {};
  const completion = asRecord(usage.completion_tokens_details) ?? {};
  return {
    inputTokens: count(usage.prompt_tokens),
    // DeepSeek reports its cache hits in its own field.
    cachedInputTokens: count(prompt.cached_tokens) || count(usage.prompt_cache_hit_tokens),
    outputTokens: count(usage.completion_tokens),
    reasoningTokens: count(completion.reasoning_tokens),
  };
}

/** OpenAI's own Chat Completions API. */
export const openaiProvider: ProviderModule = {
  name: 'openai',
  ...OPENAI_FAMILY,
  laneMaxConcurrency: 8,
  refusesTemperature: () => false,
  createClient: (entry, key, opts) => new OpenAIChatClient(entry, key as string, opts),
  createBatchClient: (entry, key, opts) => new OpenAIBatchClient(entry, key as string, opts),
};
