/**
 * Anthropic's Message Batches: each request is the interactive client's Messages body
 * (without the cache marker: a batch runs its requests in Anthropic's order, so a written
 * cache may never be read), named by its task id; results come as JSONL, one per request,
 * `succeeded`, `errored`, `canceled` or `expired`.
 */
import Anthropic from '@anthropic-ai/sdk';
import type { BatchClient, BatchItemResult, BatchRequest, BatchStatus } from '../../../core/batch';
import type { ModelErrorKind } from '../../../core/model';
import { asRecord, errorFromSdk } from '../provider-errors';
import { DEFAULT_TIMEOUT_MS, type ProviderClientOptions } from '../provider-common';
import type { ModelEntry } from '../registry';
import { AnthropicClient, parseMessage } from './anthropic';
import { asModelRequest } from './openai-batch';

const PROVIDER = 'anthropic batch';

/** Anthropic's error types, as the port's kinds. */
const KIND_BY_TYPE: Record<string, ModelErrorKind> = {
  invalid_request_error: 'bad_request',
  authentication_error: 'auth',
  permission_error: 'auth',
  not_found_error: 'bad_request',
  request_too_large: 'context_length',
  rate_limit_error: 'rate_limit',
  api_error: 'server',
  overloaded_error: 'server',
};

export class AnthropicBatchClient implements BatchClient {
  readonly id: string;
  private readonly sdk: Anthropic;
  private readonly interactive: AnthropicClient;

  constructor(entry: ModelEntry, apiKey: string, opts: ProviderClientOptions = {}) {
    this.id = entry.id;
    this.sdk = new Anthropic({ apiKey, baseURL: entry.base_url, maxRetries: 2, timeout: opts.timeoutMs ?? DEFAULT_TIMEOUT_MS, fetch: opts.fetch });
    this.interactive = new AnthropicClient({ ...entry, prompt_cache: false }, apiKey, opts);
  }

  async submit(requests: BatchRequest[], signal?: AbortSignal): Promise<string> {
    const batch = await this.call(() =>
      this.sdk.messages.batches.create(
        { requests: requests.map((r) => ({ custom_id: r.customId, params: this.interactive.body(asModelRequest(r)) as never })) },
        { signal },
      ),
    );
    return batch.id;
  }

  async poll(batchId: string, signal?: AbortSignal): Promise<BatchStatus> {
    const batch = await this.call(() => this.sdk.messages.batches.retrieve(batchId, { signal }));
    return { state: batch.processing_status === 'ended' ? 'ended' : 'pending', providerState: batch.processing_status };
  }

  async results(batchId: string, signal?: AbortSignal): Promise<BatchItemResult[]> {
    const out: BatchItemResult[] = [];
    const decoder = await this.call(() => this.sdk.messages.batches.results(batchId, { signal }));
    for await (const line of decoder) out.push(item(line));
    return out;
  }

  async cancel(batchId: string, signal?: AbortSignal): Promise<void> {
    await this.call(() => this.sdk.messages.batches.cancel(batchId, { signal }));
  }

  private async call<T>(f: () => Promise<T>): Promise<T> {
    try {
      return await f();
    } catch (e) {
      throw errorFromSdk(PROVIDER, e);
    }
  }
}

function item(line: unknown): BatchItemResult {
  const l = asRecord(line) ?? {};
  const customId = String(l.custom_id);
  const result = asRecord(l.result) ?? {};
  switch (result.type) {
    case 'succeeded':
      try {
        return { customId, outcome: 'succeeded', response: parseMessage(result.message) };
      } catch (e) {
        return { customId, outcome: 'errored', error: { kind: 'malformed_response', message: (e as Error).message } };
      }
    case 'errored': {
      const inner = asRecord(asRecord(result.error)?.error) ?? asRecord(result.error) ?? {};
      const type = String(inner.type ?? 'api_error');
      return { customId, outcome: 'errored', error: { kind: KIND_BY_TYPE[type] ?? 'other', message: `${PROVIDER}: ${type}: ${String(inner.message ?? '')}` } };
    }
    case 'canceled':
      return { customId, outcome: 'cancelled' };
    default:
      return { customId, outcome: 'expired' };
  }
}
