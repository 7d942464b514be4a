/**
 * OpenAI's Batch API, for Chat Completions (`openai`) and Responses (`openai-responses`)
 * models: the requests as one JSONL file (purpose `batch`), a batch over it with a 24 h
 * completion window, polled; its output file holds the answers, its error file the
 * requests that failed, expired (`batch_expired`) or were cancelled (`batch_cancelled`).
 * Each line's body is exactly the interactive client's request body.
 */
import OpenAI, { toFile } from 'openai';
import type { BatchClient, BatchItemResult, BatchRequest, BatchStatus } from '../../../core/batch';
import type { ModelRequest, ModelResponse } from '../../../core/model';
import { asRecord, errorFromSdk, errorFromStatus } from '../provider-errors';
import { DEFAULT_TIMEOUT_MS, type ProviderClientOptions } from '../provider-common';
import type { ModelEntry } from '../registry';
import { OpenAIChatClient, parseChatCompletion } from './openai';
import { OpenAIResponsesClient, parseResponse } from './openai-responses';

const ENDED = new Set(['completed', 'expired', 'cancelled', 'failed']);
/** Batches (newest first) searched for an intent id: far more than a run submits between a crash and its restart. */
const FIND_BY_INTENT_LOOKBACK = 1000;

export class OpenAIBatchClient implements BatchClient {
  readonly id: string;
  private readonly sdk: OpenAI;
  private readonly endpoint: '/v1/chat/completions' | '/v1/responses';
  private readonly body: (req: ModelRequest) => Record<string, unknown>;
  private readonly parse: (raw: unknown) => ModelResponse;
  private readonly provider: string;

  constructor(entry: ModelEntry, apiKey: string, opts: ProviderClientOptions = {}) {
    this.id = entry.id;
    this.provider = `${entry.provider} batch`;
    this.sdk = new OpenAI({ apiKey, baseURL: entry.base_url, maxRetries: 2, timeout: opts.timeoutMs ?? DEFAULT_TIMEOUT_MS, fetch: opts.fetch });
    if (entry.provider === 'openai-responses') {
      const client = new OpenAIResponsesClient(entry, apiKey, opts);
      this.endpoint = '/v1/responses';
      this.body = (req) => client.body(req);
      this.parse = parseResponse;
    } else {
      const client = new OpenAIChatClient(entry, apiKey, opts);
      this.endpoint = '/v1/chat/completions';
      this.body = (req) => client.body(req);
      this.parse = (raw) => parseChatCompletion(entry.provider, raw);
    }
  }

  /** The JSONL input file: one request per line, named by its task id. */
  inputFile(requests: BatchRequest[]): string {
    return `${requests
      .map((r) => JSON.stringify({ custom_id: r.customId, method: 'POST', url: this.endpoint, body: this.body(asModelRequest(r)) }))
      .join('\n')}\n`;
  }

  async submit(requests: BatchRequest[], signal?: AbortSignal, intentId?: string): Promise<string> {
    return this.call(async () => {
      const file = await this.sdk.files.create({ file: await toFile(Buffer.from(this.inputFile(requests)), 'rcb-batch.jsonl'), purpose: 'batch' }, { signal });
      const metadata = { tool: 'rcb', ...(intentId ? { rcb_intent: intentId } : {}) };
      const batch = await this.sdk.batches.create({ input_file_id: file.id, endpoint: this.endpoint, completion_window: '24h', metadata }, { signal });
      return batch.id;
    });
  }

  /** The batch whose metadata carries the intent id, among the newest (a restart comes soon after its submit). */
  async findByIntent(intentId: string, signal?: AbortSignal): Promise<string | null> {
    return this.call(async () => {
      let seen = 0;
      for await (const batch of this.sdk.batches.list({ limit: 100 }, { signal })) {
        if ((batch.metadata as Record<string, string> | null)?.rcb_intent === intentId) return batch.id;
        if (++seen >= FIND_BY_INTENT_LOOKBACK) break;
      }
      return null;
    });
  }

  async poll(batchId: string, signal?: AbortSignal): Promise<BatchStatus> {
    const batch = await this.call(() => this.sdk.batches.retrieve(batchId, { signal }));
    return { state: ENDED.has(batch.status) ? 'ended' : 'pending', providerState: batch.status };
  }

  async results(batchId: string, signal?: AbortSignal): Promise<BatchItemResult[]> {
    const batch = await this.call(() => this.sdk.batches.retrieve(batchId, { signal }));
    const out: BatchItemResult[] = [];
    for (const fileId of [batch.output_file_id, batch.error_file_id]) {
      if (!fileId) continue;
      const text = await this.call(async () => (await this.sdk.files.content(fileId, { signal })).text());
      for (const line of text.split('\n')) if (line.trim()) out.push(this.item(JSON.parse(line)));
    }
    return out;
  }

  async cancel(batchId: string, signal?: AbortSignal): Promise<void> {
    await this.call(() => this.sdk.batches.cancel(batchId, { signal }));
  }

  /** One line of an output or error file. */
  private item(line: unknown): BatchItemResult {
    const l = asRecord(line) ?? {};
    const customId = String(l.custom_id);
    const error = asRecord(l.error);
    if (error?.code === 'batch_expired') return { customId, outcome: 'expired' };
    if (error?.code === 'batch_cancelled') return { customId, outcome: 'cancelled' };
    const response = asRecord(l.response);
    const status = typeof response?.status_code === 'number' ? response.status_code : undefined;
    if (status === 200) {
      try {
        return { customId, outcome: 'succeeded', response: this.parse(response!.body) };
      } catch (e) {
        return { customId, outcome: 'errored', error: { kind: 'malformed_response', message: (e as Error).message } };
      }
    }
    const bodyError = asRecord(asRecord(response?.body)?.error);
    const message = String(bodyError?.message ?? error?.message ?? 'request failed in the batch');
    const code = typeof bodyError?.code === 'string' ? bodyError.code : typeof error?.code === 'string' ? error.code : undefined;
    const e = errorFromStatus(this.provider, status ?? 500, message, { code });
    return { customId, outcome: 'errored', error: { kind: e.kind, message: e.message } };
  }

  private async call<T>(f: () => Promise<T>): Promise<T> {
    try {
      return await f();
    } catch (e) {
      throw errorFromSdk(this.provider, e);
    }
  }
}

/** A batch request as the interactive clients' body() reads it (the prompt is all they use). */
export function asModelRequest(r: BatchRequest): ModelRequest {
  return { prompt: r.prompt, sample: 0, task: { paper: '', file: '', snippet: '' } };
}
