/**
 * AWS Bedrock Converse: Claude, Nova, Llama and the rest behind one request shape. A
 * `cachePoint` after the shared prefix makes the models that support it (Claude, Nova;
 * set `prompt_cache: true` on the entry) cache the paper for the next tasks.
 */
import { BedrockRuntimeClient, ConverseCommand, type ConverseCommandInput } from '@aws-sdk/client-bedrock-runtime';
import { ModelError, type FinishReason, type ModelRequest, type ModelResponse } from '../../../core/model';
import type { BilledUsage } from '../../../core/cost';
import { asRecord, errorFromStatus, errorFromTransport, malformed, retryAfterMs, type HeadersLike } from '../provider-errors';
import { claudeFinishReason, ProviderClient, splitPrompt, usageWithCacheApart, type ProviderClientOptions } from '../provider-common';
import type { ModelEntry } from '../registry';
import { BedrockBatchClient, bedrockBatchLimits } from './bedrock-batch';
import type { ProviderModule } from '../provider-module';

const PROVIDER = 'bedrock';

const STATUS_BY_NAME: Record<string, number> = {
  ThrottlingException: 429,
  ModelNotReadyException: 429,
  ModelTimeoutException: 408,
  InternalServerException: 500,
  ServiceUnavailableException: 503,
  ModelErrorException: 502,
  ValidationException: 400,
  AccessDeniedException: 403,
  UnrecognizedClientException: 403,
  ExpiredTokenException: 403,
  ResourceNotFoundException: 404,
};

export class BedrockClient extends ProviderClient {
  private readonly sdk: BedrockRuntimeClient;

  /** `bearerToken`: a Bedrock API key; without it the AWS credential chain signs the calls. */
  constructor(entry: ModelEntry, bearerToken: string | undefined, opts: ProviderClientOptions = {}) {
    super(entry, PROVIDER, opts);
    this.sdk = new BedrockRuntimeClient({
      region: opts.aws?.region ?? entry.region,
      endpoint: entry.base_url,
      maxAttempts: 1, // our retry layer owns retries
      requestHandler: { requestTimeout: this.timeoutMs },
      credentials: opts.aws?.credentials,
      ...(bearerToken ? { token: { token: bearerToken }, authSchemePreference: ['httpBearerAuth'] } : {}),
    });
  }

  input(req: ModelRequest): ConverseCommandInput {
    const p = this.entry.params;
    const { prefix, rest } = splitPrompt(req.prompt);
    const content: NonNullable<ConverseCommandInput['messages']>[number]['content'] = [];
    if (prefix) {
      content.push({ text: prefix });
      if (this.entry.prompt_cache) content.push({ cachePoint: { type: 'default' } });
    }
    if (rest || content.length === 0) content.push({ text: rest });
    // As on Anthropic's own API: extended thinking takes no sampling parameters, and a
    // budget of 0 (or -1) is no thinking.
    const thinking = p.thinking_budget !== undefined && p.thinking_budget > 0;
    const input: ConverseCommandInput = {
      modelId: this.entry.model,
      messages: [{ role: 'user', content }],
      inferenceConfig: {
        maxTokens: p.max_output_tokens,
        ...(p.temperature !== undefined && !thinking ? { temperature: p.temperature } : {}),
        ...(p.top_p !== undefined && !thinking ? { topP: p.top_p } : {}),
      },
    };
    const extra: Record<string, unknown> = { ...p.extra_body };
    if (thinking) extra.thinking = { type: 'enabled', budget_tokens: p.thinking_budget };
    if (Object.keys(extra).length > 0) input.additionalModelRequestFields = extra as never;
    return input;
  }

  async complete(req: ModelRequest): Promise<ModelResponse> {
    const raw = await this.withDeadline(req, (signal) => this.sdk.send(new ConverseCommand(this.input(req)), { abortSignal: signal }), bedrockError);
    return parseConverse(raw);
  }

  /** Close the SDK's HTTP/2 sessions. */
  close(): void {
    this.sdk.destroy();
  }
}

function bedrockError(err: unknown): ModelError {
  const e = asRecord(err) ?? {};
  const name = typeof e.name === 'string' ? e.name : '';
  const meta = asRecord(e.$metadata);
  const response = asRecord(e.$response);
  const status = typeof meta?.httpStatusCode === 'number' ? meta.httpStatusCode : (STATUS_BY_NAME[name] ?? undefined);
  const message = String(e.message ?? err);
  if (name === 'TimeoutError' || name === 'RequestTimeout') return new ModelError('timeout', `${PROVIDER}: timed out: ${message}`);
  if (name === 'SyntaxError' || /deserializ/i.test(message)) {
    if (status === undefined || status < 300) return new ModelError('malformed_response', `${PROVIDER}: unparsable response: ${message}`);
  }
  const transport = errorFromTransport(PROVIDER, err);
  if (transport) return transport;
  if (status !== undefined && status >= 400) {
    return errorFromStatus(PROVIDER, status, name ? `${name}: ${message}` : message, {
      retryAfterMs: retryAfterMs(response?.headers as HeadersLike | undefined),
    });
  }
  return new ModelError('other', `${PROVIDER}: ${name ? `${name}: ` : ''}${message}`);
}

/** Map a Converse response into a ModelResponse. */
export function parseConverse(raw: unknown): ModelResponse {
  const res = asRecord(raw);
  const message = asRecord(asRecord(res?.output)?.message);
  if (!res || !message || !Array.isArray(message.content)) throw malformed(PROVIDER, 'no output message');
  const text = message.content
    .map((b) => asRecord(b))
    .filter((b) => b && typeof b.text === 'string')
    .map((b) => b!.text as string)
    .join('');
  return { text, finishReason: stopReason(res.stopReason), usage: converseUsage(res.usage) };
}

function stopReason(reason: unknown): FinishReason {
  return claudeFinishReason(reason, ['guardrail_intervened', 'content_filtered']);
}

function converseUsage(u: unknown): BilledUsage {
  const usage = asRecord(u) ?? {};
  return usageWithCacheApart({
    input: usage.inputTokens,
    cacheRead: usage.cacheReadInputTokens,
    cacheWrite: usage.cacheWriteInputTokens,
    output: usage.outputTokens,
  });
}

/**
 * Amazon Bedrock (Converse). No key variable: the AWS credential chain signs the calls,
 * unless the entry names a Bedrock API key in api_key_env. Caching only where rcb marks
 * the prefix (prompt_cache: true, for the models that support cache points).
 */
export const bedrockProvider: ProviderModule = {
  name: 'bedrock',
  keyEnv: undefined,
  lane: 'bedrock',
  laneMaxConcurrency: 4,
  cacheMinTokens: 1024,
  batchWindowHours: 24,
  tokenizer: () => 'approx',
  cacheMode: (entry) => (entry.prompt_cache ? 'explicit' : 'none'),
  refusesTemperature: () => false,
  createClient: (entry, key, opts) => new BedrockClient(entry, key, opts),
  batchRequirement: (entry) =>
    entry.batch_s3_uri && entry.batch_role_arn
      ? undefined
      : 'Bedrock batch inference needs batch_s3_uri and batch_role_arn on the entry (set them in your --models-file)',
  batchLimits: (_entry, opts) => bedrockBatchLimits(opts),
  // Batch jobs are signed by the AWS credential chain; a Bedrock API key does not reach the control plane.
  createBatchClient: (entry, _key, opts) => new BedrockBatchClient(entry, opts),
};
