/**
 * Gemini batch mode (Developer API) through @google/genai: the requests inlined in one
 * batchGenerateContent call (each the interactive client's contents and config, keyed by
 * its task id in `metadata`), polled as `batches/...`; the inlined responses come back in
 * request order with their metadata, each a GenerateContentResponse or an error status.
 * Inlined batches are capped at 20 MB, hence the prompt-size limit.
 */
import { GoogleGenAI, type BatchJob } from '@google/genai';
import type { BatchClient, BatchItemResult, BatchLimits, BatchRequest, BatchStatus } from '../../../core/batch';
import { ModelError, type ModelErrorKind } from '../../../core/model';
import { asRecord, errorFromStatus, errorFromTransport } from '../provider-errors';
import type { ProviderClientOptions } from '../provider-common';
import type { ModelEntry } from '../registry';
import { GeminiClient, parseGenerateContent } from './gemini';

const PROVIDER = 'gemini batch';
const ENDED = new Set(['JOB_STATE_SUCCEEDED', 'JOB_STATE_FAILED', 'JOB_STATE_CANCELLED', 'JOB_STATE_EXPIRED']);

/** google.rpc.Code of a failed request, as the port's kinds. */
const KIND_BY_RPC_CODE: Record<number, ModelErrorKind> = {
  3: 'bad_request',
  4: 'timeout',
  7: 'auth',
  8: 'rate_limit',
  11: 'context_length',
  13: 'server',
  14: 'server',
  16: 'auth',
};

/** Inlined requests of one Gemini batch at most (its request-size cap, as prompt characters). */
export const GEMINI_BATCH_LIMITS: BatchLimits = { maxRequests: 10_000, maxPromptChars: 8_000_000 };

export class GeminiBatchClient implements BatchClient {
  readonly id: string;
  /** 20 MB of inlined requests; prompts are counted at up to 2 bytes a character, with room for the rest. */
  readonly limits: BatchLimits = GEMINI_BATCH_LIMITS;
  private readonly sdk: GoogleGenAI;
  private readonly interactive: GeminiClient;

  constructor(
    private readonly entry: ModelEntry,
    apiKey: string,
    opts: ProviderClientOptions = {},
  ) {
    this.id = entry.id;
    this.interactive = new GeminiClient(entry, apiKey, opts);
    // An explicit fetch, as the interactive client passes: the SDK's own lookup of one fails under some test runners.
    const baseFetch = opts.fetch ?? fetch;
    this.sdk = new GoogleGenAI({ apiKey, httpOptions: { baseUrl: entry.base_url, fetch: ((input, init) => baseFetch(input, init)) as typeof fetch } as never });
  }

  async submit(requests: BatchRequest[], _signal?: AbortSignal, intentId?: string): Promise<string> {
    const job = await this.call(() =>
      this.sdk.batches.create({
        model: this.entry.model,
        src: requests.map((r) => ({
          contents: [{ role: 'user', parts: [{ text: r.prompt.text }] }],
          config: this.interactive.config(),
          metadata: { key: r.customId },
        })) as never,
        // rcb's intent id names the batch, so findByIntent can find it after a crash.
        config: { displayName: intentId ?? `rcb-${this.entry.id}-${requests.length}` },
      }),
    );
    if (!job.name) throw new ModelError('malformed_response', `${PROVIDER}: the created batch has no name`);
    return job.name;
  }

  /** The batch whose display name is the intent id, among the newest. */
  async findByIntent(intentId: string): Promise<string | null> {
    return this.call(async () => {
      let seen = 0;
      for await (const job of await this.sdk.batches.list({ config: { pageSize: 100 } })) {
        if (job.displayName === intentId && job.name) return job.name;
        if (++seen >= 1000) break;
      }
      return null;
    });
  }

  async poll(batchId: string): Promise<BatchStatus> {
    const job = await this.call(() => this.sdk.batches.get({ name: batchId }));
    const state = String(job.state ?? 'JOB_STATE_UNSPECIFIED');
    return { state: ENDED.has(state) ? 'ended' : 'pending', providerState: state };
  }

  async results(batchId: string): Promise<BatchItemResult[]> {
    const job: BatchJob = await this.call(() => this.sdk.batches.get({ name: batchId }));
    const responses = job.dest?.inlinedResponses ?? [];
    return responses.map((r, i): BatchItemResult => {
      const customId = String(asRecord(r.metadata)?.key ?? i);
      if (r.error) {
        const code = typeof r.error.code === 'number' ? r.error.code : 13;
        return { customId, outcome: 'errored', error: { kind: KIND_BY_RPC_CODE[code] ?? 'other', message: `${PROVIDER}: ${code}: ${r.error.message ?? ''}` } };
      }
      try {
        return { customId, outcome: 'succeeded', response: parseGenerateContent(r.response) };
      } catch (e) {
        return { customId, outcome: 'errored', error: { kind: 'malformed_response', message: (e as Error).message } };
      }
    });
  }

  async cancel(batchId: string): Promise<void> {
    await this.call(() => this.sdk.batches.cancel({ name: batchId }));
  }

  private async call<T>(f: () => Promise<T>): Promise<T> {
    try {
      return await f();
    } catch (err) {
      if (err instanceof ModelError) throw err;
      const e = asRecord(err) ?? {};
      if (typeof e.status === 'number') throw errorFromStatus(PROVIDER, e.status, String(e.message ?? ''));
      throw errorFromTransport(PROVIDER, err) ?? new ModelError('other', `${PROVIDER}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
}
