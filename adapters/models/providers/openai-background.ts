/**
 * OpenAI Responses in background mode, for slow models (a registry entry with `slow: true`):
 * a long reasoning call that no single HTTP request, and no 15-minute Lambda, should have to
 * wait for. Each request is one background response (`background: true`, stored at OpenAI
 * so that it can be retrieved); the "batch" is the set of them, under the BatchClient
 * contract, so a slow model runs through the batch generation use case locally and through
 * the batch lane in the cloud: submit creates the responses, poll retrieves each one
 * (GET /responses/{id}) until every one is completed, failed, cancelled or incomplete,
 * cancel cancels those still running. Priced as interactive calls: background mode is not
 * the Batch API's discount.
 *
 * The batch id carries the response ids (`bg1:` and base64url JSON of custom id -> response
 * id), so a restarted rcb polls them from its ledger alone; the batch size is capped so it
 * stays small.
 */
import OpenAI from 'openai';
import type { BatchClient, BatchItemResult, BatchLimits, BatchRequest, BatchStatus } from '../../../core/batch';
import { ModelError } from '../../../core/model';
import { asRecord, errorFromSdk } from '../provider-errors';
import { DEFAULT_TIMEOUT_MS, type ProviderClientOptions } from '../provider-common';
import type { ModelEntry } from '../registry';
import { OpenAIResponsesClient, parseResponse } from './openai-responses';
import { asModelRequest } from './openai-batch';

const PROVIDER = 'openai-responses background';
const ID_PREFIX = 'bg1:';
/** Statuses after which a background response changes no more. */
const ENDED = new Set(['completed', 'failed', 'cancelled', 'incomplete']);

/** Requests of one background "batch": its id lists their response ids (about 60 bytes each). */
export const BACKGROUND_LIMITS: BatchLimits = { maxRequests: 100, maxPromptChars: Infinity };

export class OpenAIBackgroundClient implements BatchClient {
  readonly id: string;
  readonly limits = BACKGROUND_LIMITS;
  private readonly sdk: OpenAI;
  private readonly interactive: OpenAIResponsesClient;

  constructor(entry: ModelEntry, apiKey: string, opts: ProviderClientOptions = {}) {
    this.id = entry.id;
    this.sdk = new OpenAI({ apiKey, baseURL: entry.base_url, maxRetries: 2, timeout: opts.timeoutMs ?? DEFAULT_TIMEOUT_MS, fetch: opts.fetch });
    this.interactive = new OpenAIResponsesClient(entry, apiKey, opts);
  }

  async submit(requests: BatchRequest[], signal?: AbortSignal): Promise<string> {
    const ids: Record<string, string> = {};
    try {
      for (const r of requests) {
        // The interactive body, kept at OpenAI (background responses must be stored to be retrieved).
        const body = { ...this.interactive.body(asModelRequest(r)), background: true, store: true };
        const res = await this.call(() => this.sdk.responses.create(body as never, { signal }));
        ids[r.customId] = String(asRecord(res)?.id);
      }
    } catch (e) {
      // The set was not accepted whole: those already running are cancelled, so that the
      // caller may treat the submit as not made (it releases the reservation and sends again).
      await Promise.all(Object.values(ids).map((id) => this.call(() => this.sdk.responses.cancel(id)).catch(() => undefined)));
      throw e;
    }
    return ID_PREFIX + Buffer.from(JSON.stringify(ids)).toString('base64url');
  }

  async poll(batchId: string, signal?: AbortSignal): Promise<BatchStatus> {
    const responses = await this.retrieveAll(batchId, signal);
    const counts = new Map<string, number>();
    for (const r of responses.values()) counts.set(statusOf(r), (counts.get(statusOf(r)) ?? 0) + 1);
    const providerState = [...counts].map(([s, n]) => `${s} ${n}`).join(', ');
    return { state: [...responses.values()].every((r) => ENDED.has(statusOf(r))) ? 'ended' : 'pending', providerState };
  }

  async results(batchId: string, signal?: AbortSignal): Promise<BatchItemResult[]> {
    const out: BatchItemResult[] = [];
    for (const [customId, raw] of await this.retrieveAll(batchId, signal)) {
      const status = statusOf(raw);
      if (status === 'cancelled') out.push({ customId, outcome: 'cancelled' });
      else if (!ENDED.has(status)) out.push({ customId, outcome: 'expired' });
      else {
        try {
          out.push({ customId, outcome: 'succeeded', response: parseResponse(raw) });
        } catch (e) {
          const err = e instanceof ModelError ? e : new ModelError('malformed_response', (e as Error).message);
          out.push({ customId, outcome: 'errored', error: { kind: err.kind, message: err.message } });
        }
      }
    }
    return out;
  }

  async cancel(batchId: string, signal?: AbortSignal): Promise<void> {
    for (const [, raw] of await this.retrieveAll(batchId, signal)) {
      if (!ENDED.has(statusOf(raw))) await this.call(() => this.sdk.responses.cancel(String(asRecord(raw)?.id), { signal }));
    }
  }

  private async retrieveAll(batchId: string, signal?: AbortSignal): Promise<Map<string, unknown>> {
    const out = new Map<string, unknown>();
    for (const [customId, responseId] of Object.entries(responseIds(batchId))) {
      out.set(customId, await this.call(() => this.sdk.responses.retrieve(responseId, {}, { signal })));
    }
    return out;
  }

  private async call<T>(f: () => Promise<T>): Promise<T> {
    try {
      return await f();
    } catch (e) {
      throw errorFromSdk(PROVIDER, e);
    }
  }
}

/** Custom id -> response id of a background batch id. */
export function responseIds(batchId: string): Record<string, string> {
  if (!batchId.startsWith(ID_PREFIX)) throw new Error(`${batchId.slice(0, 40)} is not a background batch id (${ID_PREFIX}...)`);
  return JSON.parse(Buffer.from(batchId.slice(ID_PREFIX.length), 'base64url').toString('utf8')) as Record<string, string>;
}

function statusOf(raw: unknown): string {
  return String(asRecord(raw)?.status ?? 'unknown');
}
