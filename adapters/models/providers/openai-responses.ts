/** OpenAI Responses API, for reasoning models (`openai-responses`). */
import OpenAI from 'openai';
import { ModelError, type FinishReason, type ModelRequest, type ModelResponse } from '../../../core/model';
import type { BilledUsage } from '../../../core/cost';
import { asRecord, count, errorFromSdk, malformed } from '../provider-errors';
import { prefixCacheKey, ProviderClient, type ProviderClientOptions } from '../provider-common';
import type { ModelEntry } from '../registry';
import { OpenAIBatchClient } from './openai-batch';
import { BACKGROUND_LIMITS, OpenAIBackgroundClient } from './openai-background';
import { OPENAI_FAMILY, type ProviderModule } from '../provider-module';

const PROVIDER = 'openai-responses';

export class OpenAIResponsesClient extends ProviderClient {
  private readonly sdk: OpenAI;

  constructor(entry: ModelEntry, apiKey: string, opts: ProviderClientOptions = {}) {
    super(entry, PROVIDER, opts);
    this.sdk = new OpenAI({ apiKey, baseURL: entry.base_url, maxRetries: 0, timeout: this.timeoutMs, fetch: opts.fetch });
  }

  body(req: ModelRequest): Record<string, unknown> {
    const p = this.entry.params;
    const body: Record<string, unknown> = {
      model: this.entry.model,
      input: [{ role: 'user', content: req.prompt.text }],
      max_output_tokens: p.max_output_tokens,
      // Nothing to keep on OpenAI's side: every task is one independent turn.
      store: false,
    };
    if (p.reasoning_effort !== undefined) body.reasoning = { effort: p.reasoning_effort };
    if (p.temperature !== undefined) body.temperature = p.temperature;
    if (p.top_p !== undefined) body.top_p = p.top_p;
    const key = prefixCacheKey(req.prompt);
    if (key) body.prompt_cache_key = key;
    return { ...body, ...p.extra_body };
  }

  async complete(req: ModelRequest): Promise<ModelResponse> {
    const raw = await this.withDeadline(
      req,
      (signal) => this.sdk.responses.create(this.body(req) as never, { signal }),
      (err) => errorFromSdk(PROVIDER, err),
    );
    return parseResponse(raw);
  }
}

/** Map a Responses API body into a ModelResponse. */
export function parseResponse(raw: unknown): ModelResponse {
  const res = asRecord(raw);
  if (!res) throw malformed(PROVIDER, `expected a JSON object, got ${typeof raw === 'string' ? 'text' : typeof raw}`);
  if (!Array.isArray(res.output)) throw malformed(PROVIDER, 'no output list');
  if (res.status === 'failed') {
    const error = asRecord(res.error);
    const code = typeof error?.code === 'string' ? error.code : 'failed';
    const message = typeof error?.message === 'string' ? error.message : 'response failed';
    const kind = code === 'server_error' ? 'server' : code === 'rate_limit_exceeded' ? 'rate_limit' : 'other';
    throw new ModelError(kind, `${PROVIDER}: ${code}: ${message}`);
  }
  const parts: string[] = [];
  let refused = false;
  for (const item of res.output) {
    const it = asRecord(item);
    if (it?.type !== 'message' || !Array.isArray(it.content)) continue; // reasoning items carry no answer
    for (const c of it.content) {
      const part = asRecord(c);
      if (part?.type === 'output_text' && typeof part.text === 'string') parts.push(part.text);
      if (part?.type === 'refusal') refused = true;
    }
  }
  const text = parts.join('');
  let finishReason: FinishReason = 'stop';
  if (res.status === 'incomplete') {
    const reason = asRecord(res.incomplete_details)?.reason;
    finishReason = reason === 'max_output_tokens' ? 'length' : reason === 'content_filter' ? 'content_filter' : 'other';
  } else if (refused && text === '') finishReason = 'content_filter';
  else if (res.status !== 'completed') finishReason = 'other';
  return { text, finishReason, usage: responsesUsage(res.usage), providerModel: typeof res.model === 'string' ? res.model : undefined };
}

function responsesUsage(u: unknown): BilledUsage {
  const usage = asRecord(u) ?? {};
  return {
    inputTokens: count(usage.input_tokens),
    cachedInputTokens: count(asRecord(usage.input_tokens_details)?.cached_tokens),
    outputTokens: count(usage.output_tokens),
    reasoningTokens: count(asRecord(usage.output_tokens_details)?.reasoning_tokens),
  };
}

/** OpenAI's Responses API, for reasoning models: they refuse a sampling temperature. */
export const openaiResponsesProvider: ProviderModule = {
  name: 'openai-responses',
  ...OPENAI_FAMILY,
  refusesTemperature: () => true,
  createClient: (entry, key, opts) => new OpenAIResponsesClient(entry, key as string, opts),
  createBatchClient: (entry, key, opts) => new OpenAIBatchClient(entry, key as string, opts),
  createBackgroundClient: (entry, key, opts) => new OpenAIBackgroundClient(entry, key as string, opts),
  backgroundLimits: BACKGROUND_LIMITS,
};
