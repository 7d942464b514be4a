/**
 * Anthropic Messages. The shared prefix of a paper's prompts (instructions + paper) goes
 * in its own content block marked `cache_control: ephemeral`, so that the paper's later
 * tasks read it from the cache; the task's own part follows in a second block.
 */
import Anthropic from '@anthropic-ai/sdk';
import type { FinishReason, ModelRequest, ModelResponse } from '../../../core/model';
import type { BilledUsage } from '../../../core/cost';
import { asRecord, errorFromSdk, malformed } from '../provider-errors';
import { claudeFinishReason, ProviderClient, splitPrompt, usageWithCacheApart, type ProviderClientOptions } from '../provider-common';
import type { ModelEntry } from '../registry';
import { AnthropicBatchClient } from './anthropic-batch';
import type { ProviderModule } from '../provider-module';

const PROVIDER = 'anthropic';

export class AnthropicClient extends ProviderClient {
  private readonly sdk: Anthropic;

  constructor(entry: ModelEntry, apiKey: string, opts: ProviderClientOptions = {}) {
    super(entry, PROVIDER, opts);
    // An explicit timeout also stops the SDK from refusing non-streaming calls with a
    // large max_tokens.
    this.sdk = new Anthropic({ apiKey, baseURL: entry.base_url, maxRetries: 0, timeout: this.timeoutMs, fetch: opts.fetch });
  }

  body(req: ModelRequest): Record<string, unknown> {
    const p = this.entry.params;
    const { prefix, rest } = splitPrompt(req.prompt);
    const cache = this.entry.prompt_cache !== false;
    const content: Array<Record<string, unknown>> = [];
    if (prefix) content.push(cache ? { type: 'text', text: prefix, cache_control: { type: 'ephemeral' } } : { type: 'text', text: prefix });
    if (rest || content.length === 0) content.push({ type: 'text', text: rest });
    const body: Record<string, unknown> = {
      model: this.entry.model,
      max_tokens: p.max_output_tokens,
      messages: [{ role: 'user', content }],
    };
    if (p.thinking_budget !== undefined && p.thinking_budget > 0) {
      body.thinking = { type: 'enabled', budget_tokens: p.thinking_budget };
    } else {
      if (p.temperature !== undefined) body.temperature = p.temperature;
      if (p.top_p !== undefined) body.top_p = p.top_p;
    }
    return { ...body, ...p.extra_body };
  }

  async complete(req: ModelRequest): Promise<ModelResponse> {
    const raw = await this.withDeadline(
      req,
      (signal) => this.sdk.messages.create(this.body(req) as never, { signal }),
      (err) => errorFromSdk(PROVIDER, err),
    );
    return parseMessage(raw);
  }
}

/** Map a Messages API body into a ModelResponse. */
export function parseMessage(raw: unknown): ModelResponse {
  const res = asRecord(raw);
  if (!res) throw malformed(PROVIDER, `expected a JSON object, got ${typeof raw === 'string' ? 'text' : typeof raw}`);
  if (!Array.isArray(res.content)) throw malformed(PROVIDER, 'no content list');
  const text = res.content
    .map((b) => asRecord(b))
    .filter((b) => b?.type === 'text' && typeof b.text === 'string')
    .map((b) => b!.text as string)
    .join('');
  return {
    text,
    finishReason: stopReason(res.stop_reason),
    usage: messageUsage(res.usage),
    providerModel: typeof res.model === 'string' ? res.model : undefined,
  };
}

function stopReason(reason: unknown): FinishReason {
  return claudeFinishReason(reason, ['refusal']);
}

function messageUsage(u: unknown): BilledUsage {
  const usage = asRecord(u) ?? {};
  return usageWithCacheApart({
    input: usage.input_tokens,
    cacheRead: usage.cache_read_input_tokens,
    cacheWrite: usage.cache_creation_input_tokens,
    output: usage.output_tokens,
  });
}

/** Anthropic's Messages API; npm has no offline Claude tokenizer, so estimates approximate. */
export const anthropicProvider: ProviderModule = {
  name: 'anthropic',
  keyEnv: 'ANTHROPIC_API_KEY',
  lane: 'anthropic',
  laneMaxConcurrency: 4,
  cacheMinTokens: 1024,
  batchWindowHours: 24,
  tokenizer: () => 'approx',
  cacheMode: (entry) => (entry.prompt_cache === false ? 'none' : 'explicit'),
  refusesTemperature: () => false,
  createClient: (entry, key, opts) => new AnthropicClient(entry, key as string, opts),
  createBatchClient: (entry, key, opts) => new AnthropicBatchClient(entry, key as string, opts),
};
