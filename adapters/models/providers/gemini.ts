/**
 * Google Gemini (Developer API) through @google/genai. Gemini caches long prefixes by
 * itself (implicit caching) and reports the hits in `cachedContentTokenCount`.
 */
import { GoogleGenAI, ThinkingLevel, type GenerateContentConfig } from '@google/genai';
import { ModelError, type FinishReason, type ModelRequest, type ModelResponse } from '../../../core/model';
import type { BilledUsage } from '../../../core/cost';
import { asRecord, count, errorFromStatus, errorFromTransport, malformed, retryAfterMs, retryDelayFromGoogleBody } from '../provider-errors';
import { ProviderClient, type ProviderClientOptions } from '../provider-common';
import type { ModelEntry } from '../registry';
import { GEMINI_BATCH_LIMITS, GeminiBatchClient } from './gemini-batch';
import { automaticCache, type ProviderModule } from '../provider-module';

const PROVIDER = 'gemini';

const LEVELS: Record<string, ThinkingLevel> = {
  none: ThinkingLevel.MINIMAL,
  minimal: ThinkingLevel.MINIMAL,
  low: ThinkingLevel.LOW,
  medium: ThinkingLevel.MEDIUM,
  high: ThinkingLevel.HIGH,
  xhigh: ThinkingLevel.HIGH,
};

export class GeminiClient extends ProviderClient {
  private readonly sdk: GoogleGenAI;

  constructor(entry: ModelEntry, apiKey: string, opts: ProviderClientOptions = {}) {
    super(entry, PROVIDER, opts);
    const baseFetch = opts.fetch ?? fetch;
    // The SDK's ApiError keeps neither the headers nor the RetryInfo, so failed responses
    // are classified here, where both are still at hand. No retryOptions: the SDK then
    // makes exactly one attempt. The timeout is ours (see withDeadline()).
    const classifyingFetch: typeof fetch = async (input, init) => {
      const res = await baseFetch(input, init);
      if (res.ok) return res;
      throw await httpError(res);
    };
    this.sdk = new GoogleGenAI({ apiKey, httpOptions: { baseUrl: entry.base_url, fetch: classifyingFetch } });
  }

  config(signal?: AbortSignal): GenerateContentConfig {
    const p = this.entry.params;
    const config: GenerateContentConfig = { maxOutputTokens: p.max_output_tokens };
    if (p.temperature !== undefined) config.temperature = p.temperature;
    if (p.top_p !== undefined) config.topP = p.top_p;
    if (p.seed !== undefined) config.seed = p.seed;
    if (p.thinking_budget !== undefined) config.thinkingConfig = { thinkingBudget: p.thinking_budget };
    else if (p.reasoning_effort !== undefined) config.thinkingConfig = { thinkingLevel: LEVELS[p.reasoning_effort] };
    if (p.extra_body) config.httpOptions = { extraBody: p.extra_body };
    if (signal) config.abortSignal = signal;
    return config;
  }

  async complete(req: ModelRequest): Promise<ModelResponse> {
    const raw = await this.withDeadline(
      req,
      (signal) =>
        this.sdk.models.generateContent({
          model: this.entry.model,
          contents: [{ role: 'user', parts: [{ text: req.prompt.text }] }],
          config: this.config(signal),
        }),
      geminiError,
    );
    return parseGenerateContent(raw);
  }
}

async function httpError(res: Response): Promise<ModelError> {
  const body = await res.text().catch(() => '');
  let message = body.slice(0, 2000);
  try {
    const err = asRecord(asRecord(JSON.parse(body))?.error);
    if (typeof err?.message === 'string') message = err.message;
  } catch {
    // not JSON: keep the text
  }
  // Gemini answers a bad key with 400 INVALID_ARGUMENT and reason API_KEY_INVALID.
  const status = res.status === 400 && body.includes('API_KEY_INVALID') ? 401 : res.status;
  return errorFromStatus(PROVIDER, status, message || res.statusText, {
    retryAfterMs: retryAfterMs(res.headers) ?? retryDelayFromGoogleBody(body),
  });
}

/** An error the classifying fetch did not see: the SDK's own ApiError, or a transport failure. */
function geminiError(err: unknown): ModelError {
  const e = asRecord(err) ?? {};
  if (e.name === 'ApiError' && typeof e.status === 'number') return errorFromStatus(PROVIDER, e.status, String(e.message ?? ''));
  return errorFromTransport(PROVIDER, err) ?? new ModelError('other', `${PROVIDER}: ${err instanceof Error ? err.message : String(err)}`);
}

/** Map a generateContent response into a ModelResponse. */
export function parseGenerateContent(raw: unknown): ModelResponse {
  const res = asRecord(raw);
  if (!res) throw malformed(PROVIDER, 'expected a JSON object');
  const usage = geminiUsage(res.usageMetadata);
  const providerModel = typeof res.modelVersion === 'string' ? res.modelVersion : undefined;
  const candidates = Array.isArray(res.candidates) ? res.candidates : undefined;
  if (!candidates || candidates.length === 0) {
    // A prompt blocked by safety filters comes back with feedback and no candidates.
    if (asRecord(res.promptFeedback)?.blockReason) return { text: '', finishReason: 'content_filter', usage, providerModel };
    throw malformed(PROVIDER, 'no candidates');
  }
  const candidate = asRecord(candidates[0]) ?? {};
  const parts = asRecord(candidate.content)?.parts;
  const text = (Array.isArray(parts) ? parts : [])
    .map((p) => asRecord(p))
    .filter((p) => p && typeof p.text === 'string' && p.thought !== true)
    .map((p) => p!.text as string)
    .join('');
  return { text, finishReason: finishReason(candidate.finishReason), usage, providerModel };
}

function finishReason(reason: unknown): FinishReason {
  switch (reason) {
    case 'STOP':
      return 'stop';
    case 'MAX_TOKENS':
      return 'length';
    case 'SAFETY':
    case 'RECITATION':
    case 'BLOCKLIST':
    case 'PROHIBITED_CONTENT':
    case 'SPII':
    case 'IMAGE_SAFETY':
      return 'content_filter';
    default:
      return 'other';
  }
}

function geminiUsage(u: unknown): BilledUsage {
  const usage = asRecord(u) ?? {};
  const thoughts = count(usage.thoughtsTokenCount);
  return {
    inputTokens: count(usage.promptTokenCount), // includes the cached part
    cachedInputTokens: count(usage.cachedContentTokenCount),
    // Thinking is billed at the output price but reported apart from the candidates.
    outputTokens: count(usage.candidatesTokenCount) + thoughts,
    reasoningTokens: thoughts,
  };
}

/** Google's Gemini Developer API: implicit caching from 4096 prompt tokens on Gemini 3 (2048 on 2.5: set cache_min_tokens). */
export const geminiProvider: ProviderModule = {
  name: 'gemini',
  keyEnv: 'GEMINI_API_KEY',
  // The lane's name keeps the queues' logical ids of deployed stacks (GeminiLane...).
  lane: 'gemini',
  laneMaxConcurrency: 4,
  formerLane: 'google',
  cacheMinTokens: 4096,
  batchWindowHours: 24,
  tokenizer: () => 'approx',
  cacheMode: automaticCache,
  refusesTemperature: () => false,
  createClient: (entry, key, opts) => new GeminiClient(entry, key as string, opts),
  batchLimits: () => GEMINI_BATCH_LIMITS,
  createBatchClient: (entry, key, opts) => new GeminiBatchClient(entry, key as string, opts),
};
